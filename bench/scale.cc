// bench/scale: how saturn's cost grows with the model. A depth sweep of the
// LLaMA-style decoder (zoo model llama:L) under each search strategy and
// cost model with the default options: optimize wall time, peak resident
// memory, predicted saving, regions and reused searches. Then the engine on
// its own: one e-graph grown by greedy saturation to 10^4, 10^5 and 10^6
// e-nodes (bytes per e-node, time per e-node added). Each run is a child
// process, so that its peak memory is its own. Prints Markdown tables and
// the checks below, and writes JSON and an SVG plot.
//
// The checks: the saving per layer at 32 and 64 layers is at least 95% of
// one layer's (a layer's saving is the saving that each layer after the
// first adds: (S(L) - S(1)) / (L - 1) against S(2) - S(1), so that the
// embedding and the head, which every depth has once, do not count); wall
// time per layer at 64 layers at most 1.5x that at 8; peak memory at 64
// layers under 2 GB; MCTS at least as good as greedy at every depth.
//
//   build/bench/scale [--layers 1,2,4,8,16,32,64] [--strategies mcts,greedy,default,taso]
//       [--costs opcount,roofline] [--engine-nodes 10000,100000,1000000] [--threads 2]
//       [--out DIR]
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "saturn/base/cli.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "saturn/bench/options.h"
#include "saturn/bench/report.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/saturn.h"

extern char** environ;

using namespace saturn;

namespace {

struct Args {
  std::vector<int> layers = {1, 2, 4, 8, 16, 32, 64};
  std::vector<std::string> strategies = {"mcts", "greedy", "default", "taso"},
                           costs = {"opcount", "roofline"};
  std::vector<std::size_t> engine_nodes = {10'000, 100'000, 1'000'000};
  int threads = 2;
  double ilp_seconds = 10, time_limit = 60;
  std::string out = "scale";
  // One run, in a child process: "MODEL,STRATEGY,COST,BUDGET" (BUDGET 0:
  // the default options, regions included; else the model whole, greedy
  // extraction, that e-node budget).
  std::string single;
};

std::optional<int> parse_args(int argc, char** argv, Args& a) {
  CLI::App app{"Depth sweep of the LLaMA-style decoder, and the engine at 10^4-10^6 e-nodes",
               "scale"};
  app.add_option("--layers", a.layers, "decoder depths")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, tensor::kMaxLlamaLayers));
  bench::add_strategies_option(app, a.strategies);
  app.add_option("--costs", a.costs, "cost models")->delimiter(',')->capture_default_str();
  app.add_option("--engine-nodes", a.engine_nodes, "e-graph sizes for the engine table (none: skip)")
      ->delimiter(',')
      ->capture_default_str();
  bench::add_search_limit_options(app, a.threads, a.ilp_seconds, a.time_limit);
  app.add_option("--out", a.out, "where the tables and plots go")->capture_default_str();
  app.add_option("--single", a.single)->group("");  // internal: one run in a child
  return parse_command_line(app, argc, argv);
}

// One run in this process: its figures as a JSON line on stdout.
int run_single(const Args& a) {
  std::vector<std::string> parts;
  for (std::size_t begin = 0, end; begin <= a.single.size(); begin = end + 1) {
    end = std::min(a.single.find(',', begin), a.single.size());
    parts.push_back(a.single.substr(begin, end - begin));
  }
  std::optional<Strategy> strategy = parts.size() == 4 ? parse_strategy(parts[1]) : std::nullopt;
  std::size_t budget = 0;
  if (!strategy || !absl::SimpleAtoi(absl::string_view(parts[3]), &budget)) {
    fmt::print(stderr, "scale: --single wants MODEL,STRATEGY,COST,BUDGET, not '{}'\n", a.single);
    return 2;
  }
  absl::StatusOr<tensor::Graph> graph = tensor::build_zoo_model(parts[0]);
  absl::StatusOr<std::shared_ptr<const CostModel>> cost = cost_model_by_name(parts[2]);
  if (!graph.ok() || !cost.ok()) {
    fmt::print("{}\n", nlohmann::json{{"error", std::string(message(
                                                    graph.ok() ? cost.status() : graph.status()))}}
                           .dump());
    return 0;
  }
  OptimizeOptions o;
  o.search.strategy = *strategy;
  o.search.threads = a.threads;
  o.cost_model = *cost;
  o.ilp_seconds = a.ilp_seconds;
  o.min_gain = 0;  // any gain counts: the results are compared across depths
  o.budget.time_limit_seconds = a.time_limit;
  if (budget > 0) {
    o.regions.target_ops = 0;
    o.budget.max_nodes = budget;
    o.ilp_seconds = 0;
  }
  absl::StatusOr<OptimizeResult> r = optimize(*graph, o);
  if (!r.ok()) {
    fmt::print("{}\n", nlohmann::json{{"error", std::string(message(r.status()))}}.dump());
    return 0;
  }
  fmt::print("{}\n", nlohmann::json{{"ops", tensor::total_ops(*graph)},
                                    {"cost_before", r->cost_before},
                                    {"cost_after", r->cost_after},
                                    {"regions", r->regions},
                                    {"structures", r->region_summaries.size()},
                                    {"cache_hits", r->region_cache_hits()},
                                    {"peak_nodes", r->stats.peak_nodes},
                                    {"peak_bytes", r->stats.peak_bytes},
                                    {"search_seconds", r->times.search},
                                    {"seconds", r->times.total},
                                    {"stop_reason", stop_summary(*r)}}
                         .dump());
  return 0;
}

// Runs this program with `args` and returns what it printed, with its peak
// resident memory in bytes.
absl::StatusOr<std::pair<nlohmann::json, double>> run_child(const char* self,
                                                            std::vector<std::string> args) {
  args.insert(args.begin(), self);
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return absl::InternalError("scale: no pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, self, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; spawned == 0 && (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(n));
  close(pipe_fds[0]);
  if (spawned != 0) return absl::InternalError(fmt::format("scale: could not run {}", self));
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  // The figures are the last line; a library that prints on stdout (a
  // solver's message) must not lose the run.
  std::string_view last = text;
  while (!last.empty() && last.back() == '\n') last.remove_suffix(1);
  if (const std::size_t nl = last.rfind('\n'); nl != std::string_view::npos)
    last = last.substr(nl + 1);
  nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
  // How it ended, for the table: a run that fails only now and then (one
  // of the sweep's 56 in two sweeps so far) must say how.
  std::string ended;
  if (WIFSIGNALED(status))
    ended = fmt::format("killed by signal {}", WTERMSIG(status));
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    ended = fmt::format("exit status {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  else if (j.is_discarded())
    ended = fmt::format("printed no JSON: '{}'", text.substr(0, 300));
  if (!ended.empty())
    return absl::InternalError(fmt::format("scale: the run '{}' failed: {}", args.back(), ended));
  return std::pair{j, static_cast<double>(usage.ru_maxrss) * 1024.0};
}

struct Row {
  int layers = 0;
  std::string strategy, cost;
  nlohmann::json figures;
  double rss = 0;
  double saving() const {
    return figures.value("cost_before", 0.0) - figures.value("cost_after", 0.0);
  }
  double seconds() const { return figures.value("seconds", 0.0); }
};

const Row* find(const std::vector<Row>& rows, int layers, const std::string& strategy,
                const std::string& cost) {
  for (const Row& r : rows)
    if (r.layers == layers && r.strategy == strategy && r.cost == cost && !r.figures.contains("error"))
      return &r;
  return nullptr;
}

// Prints the checks; returns how many failed.
int print_checks(const std::vector<Row>& rows, const Args& a) {
  int failed = 0;
  auto verdict = [&failed](bool ok) {
    failed += ok ? 0 : 1;
    return ok ? "ok" : "FAILED";
  };
  fmt::print("\nchecks:\n");
  for (const std::string& cost : a.costs) {
    for (const std::string& strategy : a.strategies) {
      const Row* one = find(rows, 1, strategy, cost);
      const Row* two = find(rows, 2, strategy, cost);
      for (int deep : {32, 64}) {
        const Row* d = find(rows, deep, strategy, cost);
        if (!one || !two || !d) continue;
        const double layer = two->saving() - one->saving();
        const double per_layer = (d->saving() - one->saving()) / (deep - 1);
        const double ratio = layer > 0 ? per_layer / layer : (per_layer >= 0 ? 1.0 : 0.0);
        fmt::print("  {} {}: saving per layer at {} layers is {:.1f}% of one layer's: {}\n", cost,
                   strategy, deep, 100 * ratio, verdict(ratio >= 0.95));
      }
      const Row* eight = find(rows, 8, strategy, cost);
      const Row* last = find(rows, 64, strategy, cost);
      if (eight && last) {
        const double ratio = (last->seconds() / 64) / (eight->seconds() / 8);
        fmt::print("  {} {}: time per layer at 64 layers is {:.2f}x that at 8: {}\n", cost, strategy,
                   ratio, verdict(ratio <= 1.5));
        fmt::print("  {} {}: peak memory at 64 layers {:.0f} MB: {}\n", cost, strategy,
                   last->rss / 1e6, verdict(last->rss < 2e9));
      }
    }
    for (int layers : a.layers) {
      const Row* m = find(rows, layers, "mcts", cost);
      const Row* g = find(rows, layers, "greedy", cost);
      if (!m || !g) continue;
      const double mcts = m->figures["cost_after"], greedy = g->figures["cost_after"];
      fmt::print("  {} {} layers: MCTS {:.2f} vs greedy {:.2f}: {}\n", cost, layers, mcts, greedy,
                 verdict(mcts <= greedy * (1 + 1e-9)));
    }
  }
  return failed;
}

// How to run this program once per row: its path, and the options every
// run shares.
struct Child {
  std::string self;
  std::vector<std::string> limits;

  absl::StatusOr<std::pair<nlohmann::json, double>> run(const std::string& single) const {
    std::vector<std::string> args = limits;
    args.insert(args.end(), {"--single", single});
    return run_child(self.c_str(), args);
  }
};

void print_row(const Row& row) {
  const nlohmann::json& f = row.figures;
  if (f.contains("error")) {
    fmt::print("| {} | {} | {} | error: {} |\n", row.layers, row.cost, row.strategy,
               f["error"].get<std::string>());
    return;
  }
  const double before = f["cost_before"];
  fmt::print(
      "| {} | {} | {} | {} | {} | {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.3f} | {:.0f} | {} |\n",
      row.layers, row.cost, row.strategy, f["ops"].get<int>(), f["regions"].get<int>(),
      f["structures"].get<int>(), f["cache_hits"].get<int>(),
      before > 0 ? 100 * row.saving() / before : 0.0, row.saving(), row.seconds(),
      row.seconds() / row.layers, row.rss / 1e6, f["stop_reason"].get<std::string>());
}

// The depth sweep: one child per cost model, strategy and depth, its row
// printed as it ends. Counts the failed runs in `errors`.
std::vector<Row> depth_sweep(const Args& a, const Child& child, int& errors) {
  fmt::print(
      "| layers | cost | strategy | ops | regions | structures | reused | saving % | saving | "
      "wall s | s per layer | peak MB | stop |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<Row> rows;
  for (const std::string& cost : a.costs) {
    for (const std::string& strategy : a.strategies) {
      for (int layers : a.layers) {
        absl::StatusOr<std::pair<nlohmann::json, double>> run =
            child.run(fmt::format("llama:{},{},{},0", layers, strategy, cost));
        Row row{layers, strategy, cost, run.ok() ? run->first : nlohmann::json{{"error", std::string(message(run.status()))}},
                run.ok() ? run->second : 0};
        if (row.figures.contains("error")) ++errors;
        print_row(row);
        std::fflush(stdout);
        rows.push_back(std::move(row));
      }
    }
  }
  return rows;
}

// The engine alone: llama:64 whole, greedy saturation to each budget. Counts
// the failed runs in `errors`.
nlohmann::json engine_sweep(const Args& a, const Child& child, int& errors) {
  nlohmann::json engine = nlohmann::json::array();
  if (!a.engine_nodes.empty()) {
    fmt::print("\nthe engine: llama:64 whole, greedy saturation to the budget (opcount)\n\n"
               "| budget | e-nodes | bytes per e-node | us per e-node | search s | peak MB |\n"
               "|---|---|---|---|---|---|\n");
  }
  for (std::size_t budget : a.engine_nodes) {
    absl::StatusOr<std::pair<nlohmann::json, double>> run =
        child.run(fmt::format("llama:64,greedy,opcount,{}", budget));
    if (!run.ok() || run->first.contains("error")) {
      ++errors;
      fmt::print("| {} | error: {} |\n", budget,
                 run.ok() ? run->first["error"].get<std::string>() : std::string(message(run.status())));
      continue;
    }
    const nlohmann::json& f = run->first;
    const double nodes = f["peak_nodes"], bytes = f["peak_bytes"], seconds = f["search_seconds"];
    fmt::print("| {} | {:.0f} | {:.0f} | {:.2f} | {:.2f} | {:.0f} |\n", budget, nodes, bytes / nodes,
               1e6 * seconds / nodes, seconds, run->second / 1e6);
    engine.push_back({{"budget", budget}, {"figures", f}, {"peak_rss_bytes", run->second}});
  }
  return engine;
}

std::string results_json(const Args& a, const std::string& machine, const std::vector<Row>& rows,
                         const nlohmann::json& engine) {
  nlohmann::json j{{"machine", machine}, {"threads", a.threads}, {"engine", engine}};
  for (const Row& r : rows)
    j["runs"].push_back({{"layers", r.layers}, {"strategy", r.strategy}, {"cost_model", r.cost},
                         {"figures", r.figures}, {"peak_rss_bytes", r.rss}});
  return j.dump(2) + "\n";
}

// The plot: per cost model, the predicted saving per depth and strategy.
std::string results_svg(const Args& a, const std::string& machine, const std::vector<Row>& rows) {
  std::vector<std::string> depths;
  for (int layers : a.layers) depths.push_back(fmt::format("{} layers", layers));
  std::string svg;
  double y = 10;
  for (const std::string& cost : a.costs) {
    std::vector<std::vector<double>> per_depth;
    for (int layers : a.layers) {
      std::vector<double> row;
      for (const std::string& strategy : a.strategies) {
        const Row* r = find(rows, layers, strategy, cost);
        row.push_back(r ? 100 * r->saving() / r->figures["cost_before"].get<double>() : 0);
      }
      per_depth.push_back(row);
    }
    svg += bench::bar_chart(fmt::format("predicted saving (%) by depth, {} cost", cost), depths,
                            a.strategies, per_depth, 10, y);
    y += 270;
  }
  return bench::svg_page(svg, y, machine);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (std::optional<int> exit = parse_args(argc, argv, a)) return *exit;
  if (!a.single.empty()) return run_single(a);
  const Child child{std::filesystem::read_symlink("/proc/self/exe").string(),
                    {"--threads", std::to_string(a.threads), "--ilp-seconds",
                     fmt::format("{}", a.ilp_seconds), "--time-limit",
                     fmt::format("{}", a.time_limit)}};
  const std::string machine = machine_description();
  fmt::print("machine: {}\n\n", machine);
  int errors = 0;
  const std::vector<Row> rows = depth_sweep(a, child, errors);
  const nlohmann::json engine = engine_sweep(a, child, errors);

  const int failed = print_checks(rows, a);
  std::filesystem::create_directories(a.out);
  for (const auto& [file, text] :
       {std::pair{a.out + "/scale.json", results_json(a, machine, rows, engine)},
        std::pair{a.out + "/scale.svg", results_svg(a, machine, rows)}}) {
    if (absl::Status s = write_text_file(file, text); !s.ok()) {
      fmt::print(stderr, "scale: {}\n", message(s));
      return 1;
    }
  }
  fmt::print("\nwrote {}/scale.json and {}/scale.svg\n", a.out, a.out);
  if (errors > 0 || failed > 0) {
    fmt::print(stderr, "scale: {} runs failed, {} checks failed\n", errors, failed);
    return 1;
  }
  return 0;
}

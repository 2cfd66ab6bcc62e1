// bench/compare_search: every zoo model x search strategy x cost model x
// e-node budget through saturn::optimize. Prints a Markdown table (cost
// before and after, improvement, speedup, e-nodes, peak bytes, wall time; MCTS as the
// mean and spread over several seeds) and writes the same as JSON, plus an
// SVG plot of the improvement per model and strategy and of quality against
// budget. Checks that MCTS's worst seed is at least as good as greedy
// saturation for every model, cost model and budget (exit 1 if not).
//
//   build/bench/compare_search [--models a,b] [--strategies mcts,greedy,default,taso]
//       [--costs opcount,roofline,roofline:gpu-a100] [--budgets 2000,10000,50000]
//       [--seeds 5] [--threads 2] [--ilp-seconds 5] [--time-limit 60] [--out DIR]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "nlohmann/json.hpp"
#include "saturn/base/cli.h"
#include "saturn/base/file.h"
#include "saturn/base/ranks.h"
#include "saturn/base/status.h"
#include "saturn/bench/options.h"
#include "saturn/bench/report.h"
#include "saturn/saturn.h"

using namespace saturn;

namespace {

struct Args {
  // Zoo model names or model files (ONNX or saturn's JSON), sized by `onnx`.
  std::vector<std::string> models, strategies = {"mcts", "greedy", "default", "taso"},
                                   costs = {"opcount", "roofline"};
  std::vector<std::size_t> budgets = {2000, 10000, 50000};
  int seeds = 5, threads = 2;
  double ilp_seconds = 5, time_limit = 60;
  std::string out = "compare_search";
  // Rule files instead of the shipped rules (verified first, unless
  // unverified_rules), for comparing rule sets on the same workload.
  std::vector<std::string> rules;
  bool unverified_rules = false;
  tensor::OnnxImportOptions onnx;
};

struct Run {
  std::string model, strategy, cost;
  std::size_t budget = 0;
  double before = 0;
  // improvement: (before - after) / before; speedup: before / after - 1 (in
  // percent; the measure TENSAT and the MCTS work report).
  std::vector<double> after, improvement, speedup, seconds;
  std::size_t nodes = 0, bytes = 0;
  std::string stop;
  std::string error;  // why the search failed (the model does not fit the budget, say)
  std::map<std::string, std::size_t> top_rules;

  double mean(const std::vector<double>& v) const {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / static_cast<double>(v.size());
  }
  double spread(const std::vector<double>& v) const {
    if (v.size() < 2) return 0;
    double m = mean(v), s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / static_cast<double>(v.size() - 1));
  }
};

// The sweep's options; the exit code when the program is done (--help, a
// usage error).
std::optional<int> parse_args(int argc, char** argv, Args& a) {
  CLI::App app{"Every model x strategy x cost model x budget: Markdown, JSON and SVG",
               "compare_search"};
  app.add_option("--models", a.models, "zoo models or model files (.onnx, .json; default: the zoo)")
      ->delimiter(',');
  add_dim_option(app, a.onnx.dims);
  bench::add_strategies_option(app, a.strategies);
  app.add_option("--costs", a.costs, "cost models (opcount, roofline, roofline:PROFILE, ...)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--budgets", a.budgets, "e-node budgets")->delimiter(',')->capture_default_str();
  app.add_option("--seeds", a.seeds, "MCTS seeds per row")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  bench::add_search_limit_options(app, a.threads, a.ilp_seconds, a.time_limit);
  app.add_option("--out", a.out, "where the tables and plots go")->capture_default_str();
  app.add_option("--rules", a.rules, "rule files instead of the shipped rules (verified first)")
      ->delimiter(',');
  app.add_flag("--unverified-rules", a.unverified_rules,
               "use the rule files without verifying them (the tables say so)");
  if (std::optional<int> exit = parse_command_line(app, argc, argv)) return exit;
  if (a.models.empty())
    for (const tensor::ZooModel& m : tensor::zoo_models()) a.models.emplace_back(m.name);
  return std::nullopt;
}

// Prints, per model, cost model and budget, whether MCTS's worst seed is at
// least as good as greedy saturation; returns how many are not.
int print_mcts_checks(const std::vector<Run>& runs) {
  int worse = 0;
  bool header = false;
  for (const Run& m : runs) {
    if (m.strategy != "mcts" || !m.error.empty() || m.after.empty()) continue;
    for (const Run& g : runs) {
      if (g.strategy != "greedy" || g.model != m.model || g.cost != m.cost ||
          g.budget != m.budget || !g.error.empty() || g.after.empty())
        continue;
      const double worst = *std::max_element(m.after.begin(), m.after.end());
      const bool ok = worst <= g.after.front() * (1 + 1e-9);
      if (!header) fmt::print("\nchecks (MCTS's worst seed at least as good as greedy):\n");
      header = true;
      fmt::print("  {} {} {}: MCTS {:.2f} vs greedy {:.2f}: {}\n", m.cost, m.budget, m.model, worst,
                 g.after.front(), ok ? "ok" : "WORSE");
      worse += ok ? 0 : 1;
    }
  }
  return worse;
}

// One point of the grid: every seed of one strategy on one model, cost and budget.
Run run_grid_point(const Args& args, const tensor::Graph& graph, const std::string& model,
                   const std::string& strategy, const std::string& cost_name,
                   const std::shared_ptr<const CostModel>& cost, std::size_t budget) {
  Run run{model, strategy, cost_name, budget};
  const Strategy s = *parse_strategy(strategy);
  const int seeds = s == Strategy::kMcts ? args.seeds : 1;
  for (int seed = 1; seed <= seeds; ++seed) {
    OptimizeOptions options;
    options.search.strategy = s;
    options.search.seed = static_cast<std::uint64_t>(seed);
    options.search.threads = args.threads;
    options.budget.max_nodes = budget;
    options.budget.time_limit_seconds = args.time_limit;
    options.seconds_per_op = 0;  // each strategy searches until --time-limit
    options.cost_model = cost;
    options.ilp_seconds = args.ilp_seconds;
    // The strategies are compared on what they find, by the cost model: no
    // threshold, and no timing in onnxruntime (which a model read from an
    // ONNX file would get) to keep its input on a noisy measurement.
    options.min_gain = 0;
    options.measure = false;
    options.rule_files = args.rules;
    options.unverified_rules = args.unverified_rules;
    absl::StatusOr<OptimizeResult> r = optimize(graph, options);
    if (!r.ok()) {
      run.error = std::string(message(r.status()));
      break;
    }
    // A sweep compares searches: a model (or region) left unsearched at
    // this budget is a failed run, not a zero gain.
    if (!r->not_searched.empty()) {
      run.error = r->not_searched;
      break;
    }
    run.before = r->cost_before;
    run.after.push_back(r->cost_after);
    run.improvement.push_back(r->improvement_percent());
    run.speedup.push_back(100.0 * (r->speedup() - 1.0));
    run.seconds.push_back(r->times.total);
    run.nodes = std::max(run.nodes, r->stats.peak_nodes);
    run.bytes = std::max(run.bytes, r->stats.peak_bytes);
    run.stop = stop_summary(*r);
    for (const RuleApplication& a : r->rules_applied) run.top_rules[a.name] += a.count;
  }
  return run;
}

// A run as it crosses ranks, and back.
nlohmann::json run_json(const Run& r) {
  return {{"model", r.model},
          {"strategy", r.strategy},
          {"cost", r.cost},
          {"budget", r.budget},
          {"before", r.before},
          {"after", r.after},
          {"improvement", r.improvement},
          {"speedup", r.speedup},
          {"seconds", r.seconds},
          {"nodes", r.nodes},
          {"bytes", r.bytes},
          {"stop", r.stop},
          {"error", r.error},
          {"top_rules", r.top_rules}};
}

Run run_from_json(const nlohmann::json& j) {
  Run r;
  j.at("model").get_to(r.model);
  j.at("strategy").get_to(r.strategy);
  j.at("cost").get_to(r.cost);
  j.at("budget").get_to(r.budget);
  j.at("before").get_to(r.before);
  j.at("after").get_to(r.after);
  j.at("improvement").get_to(r.improvement);
  j.at("speedup").get_to(r.speedup);
  j.at("seconds").get_to(r.seconds);
  j.at("nodes").get_to(r.nodes);
  j.at("bytes").get_to(r.bytes);
  j.at("stop").get_to(r.stop);
  j.at("error").get_to(r.error);
  j.at("top_rules").get_to(r.top_rules);
  return r;
}

// One point of the grid to run.
struct Task {
  std::string cost, model, strategy;
  std::size_t budget;
};

// Every point of the grid, with the cost models and zoo graphs they use.
struct Grid {
  std::vector<Task> tasks;
  std::map<std::string, std::shared_ptr<const CostModel>> costs;
  std::map<std::string, tensor::Graph> graphs;
};

// The grid, in the order of its rows: cost model, budget, model, strategy.
// Built on every rank, so that a bad name fails before any work.
absl::StatusOr<Grid> build_grid(const Args& args) {
  Grid grid;
  for (const std::string& cost_name : args.costs) {
    absl::StatusOr<std::shared_ptr<const CostModel>> cost = cost_model_by_name(cost_name);
    if (!cost.ok()) return cost.status();
    grid.costs[cost_name] = *cost;
    for (std::size_t budget : args.budgets) {
      for (const std::string& model : args.models) {
        if (!grid.graphs.contains(model)) {
          absl::StatusOr<tensor::Graph> graph = load_model(model, args.onnx);
          if (!graph.ok()) return graph.status();
          grid.graphs.emplace(model, *std::move(graph));
        }
        for (const std::string& strategy : args.strategies)
          grid.tasks.push_back({cost_name, model, strategy, budget});
      }
    }
  }
  return grid;
}

// Runs this rank's share of the grid (all of it without MPI): each run with
// the index of its task.
nlohmann::json run_my_tasks(const Args& args, const Grid& grid, Ranks& ranks) {
  nlohmann::json mine = nlohmann::json::array();
  for (std::size_t t; (t = ranks.next_task(grid.tasks.size())) < grid.tasks.size();) {
    const Task& task = grid.tasks[t];
    Run run = run_grid_point(args, grid.graphs.at(task.model), task.model, task.strategy,
                             task.cost, grid.costs.at(task.cost), task.budget);
    mine.push_back({{"task", t}, {"run", run_json(run)}});
  }
  return mine;
}

// The runs every rank sent, in the grid's order.
std::vector<Run> runs_in_task_order(const std::vector<std::string>& gathered,
                                    std::size_t num_tasks) {
  std::vector<Run> by_task(num_tasks);
  for (const std::string& part : gathered) {
    for (const nlohmann::json& done : nlohmann::json::parse(part))
      by_task[done["task"].get<std::size_t>()] = run_from_json(done["run"]);
  }
  return by_task;
}

void print_rows(const std::vector<Run>& runs) {
  fmt::print(
      "| model | cost | budget | strategy | before | after | improvement % | speedup % | e-nodes | "
      "peak MB | wall s | stop |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Run& run : runs) {
    auto with_spread = [&](const std::vector<double>& v) {
      return v.size() > 1 ? fmt::format("{:.2f} ± {:.2f}", run.mean(v), run.spread(v))
                          : fmt::format("{:.2f}", run.mean(v));
    };
    fmt::print("| {} | {} | {} | {} | {:.1f} | {:.1f} | {} | {} | {} | {:.2f} | {:.2f} | {} |\n",
               run.model, run.cost, run.budget, run.strategy, run.before, run.mean(run.after),
               with_spread(run.improvement), with_spread(run.speedup), run.nodes, run.bytes / 1e6,
               run.mean(run.seconds), run.error.empty() ? run.stop : "error: " + run.error);
  }
}

// The runs' figures summed per (cost, budget, strategy).
using GroupKey = std::tuple<std::string, std::size_t, std::string>;
struct Sums {
  double improvement = 0, speedup = 0, seconds = 0;
  int count = 0;
};
struct Groups {
  std::map<GroupKey, Sums> sums;
  // A failed run has no figures: it is left out of the means (and counted).
  std::size_t failed = 0;

  double mean_improvement(const GroupKey& key) const {
    auto it = sums.find(key);
    return it != sums.end() ? it->second.improvement / it->second.count : 0;
  }
};

Groups sum_groups(const std::vector<Run>& runs) {
  Groups groups;
  for (const Run& r : runs) {
    if (!r.error.empty()) {
      ++groups.failed;
      continue;
    }
    Sums& sum = groups.sums[std::make_tuple(r.cost, r.budget, r.strategy)];
    sum.improvement += r.mean(r.improvement);
    sum.speedup += r.mean(r.speedup);
    sum.seconds += r.mean(r.seconds);
    ++sum.count;
  }
  return groups;
}

void print_means(const Groups& groups) {
  fmt::print(
      "\n| cost | budget | strategy | mean improvement % | mean speedup % | mean wall s |\n"
      "|---|---|---|---|---|---|\n");
  for (const auto& [key, sum] : groups.sums) {
    const int n = sum.count;
    fmt::print("| {} | {} | {} | {:.2f} | {:.2f} | {:.2f} |\n", std::get<0>(key), std::get<1>(key),
               std::get<2>(key), sum.improvement / n, sum.speedup / n, sum.seconds / n);
  }
}

std::string results_json(const Args& args, const std::string& machine,
                         const std::vector<Run>& runs) {
  nlohmann::json j;
  j["machine"] = machine;
  j["rules"] = args.rules.empty() ? nlohmann::json("shipped") : nlohmann::json(args.rules);
  j["unverified_rules"] = args.unverified_rules;
  j["threads"] = args.threads;
  j["ilp_seconds"] = args.ilp_seconds;
  for (const Run& r : runs) {
    j["runs"].push_back({{"model", r.model},
                         {"strategy", r.strategy},
                         {"cost_model", r.cost},
                         {"budget_nodes", r.budget},
                         {"cost_before", r.before},
                         {"cost_after", r.after},
                         {"improvement_percent", r.improvement},
                         {"improvement_mean", r.mean(r.improvement)},
                         {"improvement_spread", r.spread(r.improvement)},
                         {"speedup_percent", r.speedup},
                         {"speedup_mean", r.mean(r.speedup)},
                         {"speedup_spread", r.spread(r.speedup)},
                         {"peak_nodes", r.nodes},
                         {"peak_bytes", r.bytes},
                         {"seconds", r.seconds},
                         {"stop_reason", r.stop},
                         {"error", r.error},
                         {"rules_applied", r.top_rules}});
  }
  return j.dump(2) + "\n";
}

// The plot: per cost model, improvement per model and strategy at the
// first budget, then the mean improvement against the budget.
std::string results_svg(const Args& args, const std::string& machine,
                        const std::vector<Run>& runs, const Groups& groups) {
  std::string svg;
  double y = 10;
  for (const std::string& cost_name : args.costs) {
    std::vector<std::vector<double>> per_model;
    for (const std::string& model : args.models) {
      std::vector<double> row;
      for (const std::string& strategy : args.strategies) {
        double v = 0;
        for (const Run& r : runs)
          if (r.model == model && r.strategy == strategy && r.cost == cost_name &&
              r.budget == args.budgets.front() && r.error.empty())
            v = r.mean(r.improvement);
        row.push_back(v);
      }
      per_model.push_back(row);
    }
    svg += bench::bar_chart(fmt::format("cost reduction (%) per model, {} cost, {} e-node budget",
                                        cost_name, args.budgets.front()),
                            args.models, args.strategies, per_model, 10, y);
    y += 270;
    std::vector<std::string> budget_names;
    std::vector<std::vector<double>> per_budget;
    for (std::size_t budget : args.budgets) {
      budget_names.push_back(fmt::format("{} e-nodes", budget));
      std::vector<double> row;
      for (const std::string& strategy : args.strategies)
        row.push_back(groups.mean_improvement(std::make_tuple(cost_name, budget, strategy)));
      per_budget.push_back(row);
    }
    svg +=
        bench::bar_chart(fmt::format("mean cost reduction (%) against budget, {} cost", cost_name),
                         budget_names, args.strategies, per_budget, 10, y);
    y += 270;
  }
  return bench::svg_page(svg, y, machine);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (std::optional<int> exit = parse_args(argc, argv, args)) return *exit;
  const std::string machine = machine_description();
  fmt::print("machine: {}\n", machine);
  fmt::print("rules: {}{}\n\n",
             args.rules.empty() ? std::string("shipped")
                                : fmt::format("{}", fmt::join(args.rules, ", ")),
             args.unverified_rules ? " (unverified)" : "");
  absl::StatusOr<Grid> grid = build_grid(args);
  if (!grid.ok()) {
    fmt::print(stderr, "compare_search: {}\n", message(grid.status()));
    return 2;
  }
  // Runs spread over MPI ranks (base/ranks.h) when launched with mpirun; the
  // rows are printed in grid order once all are in.
  Ranks ranks;
  const std::vector<std::string> gathered = ranks.gather(run_my_tasks(args, *grid, ranks).dump());
  if (ranks.rank() != 0) return 0;  // rank 0 reports, and its exit code is the run's
  const std::vector<Run> runs = runs_in_task_order(gathered, grid->tasks.size());
  fmt::print("ranks: {}\n\n", ranks.size());
  print_rows(runs);
  const Groups groups = sum_groups(runs);
  print_means(groups);
  const int mcts_worse = print_mcts_checks(runs);

  std::filesystem::create_directories(args.out);
  const std::string json_path = args.out + "/compare_search.json";
  const std::string svg_path = args.out + "/compare_search.svg";
  for (const auto& [path, text] : {std::pair{json_path, results_json(args, machine, runs)},
                                   std::pair{svg_path, results_svg(args, machine, runs, groups)}}) {
    if (absl::Status s = write_text_file(path, text); !s.ok()) {
      fmt::print(stderr, "compare_search: {}\n", message(s));
      return 1;
    }
  }
  fmt::print("\nwrote {} and {}\n", json_path, svg_path);
  std::fflush(stdout);  // the rows come before the summary on stderr
  if (groups.failed > 0) {
    fmt::print(stderr, "compare_search: {} of {} runs failed (their rows say why)\n",
               groups.failed, runs.size());
    return 1;
  }
  if (mcts_worse > 0) {
    fmt::print(stderr, "compare_search: MCTS is worse than greedy in {} of the checks\n",
               mcts_worse);
    return 1;
  }
  return 0;
}

// `saturn optimize`: search, extract, report, and optionally check the result
// in onnxruntime.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/base/cli.h"
#include "saturn/base/file.h"
#include "saturn/base/ranks.h"
#include "saturn/base/status.h"
#include "saturn/base/stopwatch.h"
#include "saturn/optimize/optimize.h"
#include "saturn/optimize/self_check.h"
#include "saturn/tensor/json/json_model.h"
#include "saturn/tools/commands.h"
#include "saturn/tools/model_files.h"
#include "saturn/tools/optimize_command.h"
#include "saturn/tools/runtime_commands.h"

namespace saturn::tools {

using tensor::Graph;

namespace {

// The progress line: rewritten in place on a terminal, at most 10 times a
// second, from any search thread.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  ~ProgressLine() { finish(); }

  void update(const SearchProgress& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    best_ = std::min(best_, p.cost);
    if (!enabled_ || (shown_ && clock_.seconds() - last_ < 0.1)) return;
    last_ = clock_.seconds();
    shown_ = true;
    if (p.region_structures > 0) {
      // Costs of different regions do not compare: show the searches' count.
      fmt::print(stderr,
                 "\r  search {:6.1f} s  region structures searched {} / {}  {:>7} / {} e-nodes   ",
                 last_, p.regions_searched, p.region_structures, p.nodes, p.max_nodes);
    } else {
      fmt::print(stderr, "\r  search {:6.1f} s  {:>7} / {} e-nodes  best cost {:.2f} ({:+.2f}%)   ",
                 last_, p.nodes, p.max_nodes, best_,
                 p.initial_cost > 0 ? 100.0 * (best_ - p.initial_cost) / p.initial_cost : 0.0);
    }
    std::fflush(stderr);
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shown_) fmt::print(stderr, "\r{:80}\r", "");
    shown_ = false;
  }

 private:
  bool enabled_;
  std::mutex mutex_;
  Stopwatch clock_;
  double last_ = 0, best_ = std::numeric_limits<double>::infinity();
  bool shown_ = false;
};

// Writes STEM.dot (and STEM.svg when Graphviz's `dot` is on the PATH).
absl::Status write_dot(const Graph& graph, const std::filesystem::path& dir,
                       const std::string& stem) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(fmt::format("{}: {}", dir.string(), ec.message()));
  const std::filesystem::path dot = dir / (stem + ".dot");
  if (absl::Status s = write_text_file(dot.string(), tensor::to_dot(graph)); !s.ok()) return s;
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    const std::string cmd = fmt::format("dot -Tsvg {} -o {}", ort::shell_quote(dot.string()),
                                        ort::shell_quote((dir / (stem + ".svg")).string()));
    if (std::system(cmd.c_str()) != 0)
      return absl::InternalError(fmt::format("{}: graphviz could not render it", dot.string()));
  }
  return absl::OkStatus();
}

// Whether the result is an ONNX input kept as it was, to be copied to an
// ONNX output byte for byte.
bool kept_onnx_input(const OptimizeCommandOptions& o, const OptimizeResult& r) {
  return r.kept_input && o.model.ends_with(".onnx") && o.out.ends_with(".onnx");
}

// Why the optimized graph of a model with symbolic dimensions does not hold
// at other sizes, or nullopt when it does: the export must write it for any
// size (tensor/onnx/export_symbolic.cc), and the input and the export, both
// read with every symbol 2 larger than it was, must compute the same in the
// interpreter (the self-check at those sizes). `exported` gets the checked
// export, which is what -o then gets.
std::optional<std::string> fails_at_other_sizes(const OptimizeCommandOptions& o,
                                                const OptimizeResult& r, std::string& exported) {
  absl::StatusOr<std::string> bytes = tensor::to_onnx_model(r.graph);
  if (!bytes.ok()) return std::string(message(bytes.status()));
  tensor::OnnxImportOptions other;
  for (const auto& [symbol, size] : r.graph.symbols.sizes) other.dims[symbol] = size + 2;
  absl::StatusOr<Graph> input = tensor::load_onnx_model(o.model, other);
  if (!input.ok()) return std::string(message(input.status()));
  absl::StatusOr<Graph> output = tensor::parse_onnx_model(*bytes, o.out, other);
  if (!output.ok()) return std::string(message(output.status()));
  absl::StatusOr<SelfCheck> check = self_check(*input, *output, r.rules_applied);
  if (!check.ok()) return std::string(message(check.status()));
  exported = *std::move(bytes);
  return std::nullopt;
}

// Keeps the input where the optimized graph holds only at the given sizes
// of its symbolic dimensions; returns why (empty when it holds at any size).
// `exported` gets the export that was checked, if one was.
std::string keep_input_unless_generic(const Graph& input, const OptimizeCommandOptions& o,
                                      OptimizeResult& r, std::string& exported) {
  if (r.kept_input || r.graph.symbols.empty() || !o.out.ends_with(".onnx")) return "";
  std::optional<std::string> why = fails_at_other_sizes(o, r, exported);
  if (!why) return "";
  r.graph = input;
  r.kept_input = true;
  r.cost_after = r.cost_before;
  r.self_check = "the input was kept: nothing to check";
  return *why;
}

// `sizes_only`: why the optimized graph held at the given sizes only (it was not kept).
void print_summary(const Graph& graph, const OptimizeResult& r, const OptimizeCommandOptions& o,
                   const std::string& sizes_only) {
  fmt::print(
      "{}: {} search, {} cost: {:.2f} -> {:.2f} ({:.2f}% lower, predicted speedup {:.3f}x)\n",
      graph.name, r.stats.strategy, r.cost_model, r.cost_before, r.cost_after,
      r.improvement_percent(), r.speedup());
  const char* per_region = r.regions > 1 ? " per region" : "";
  fmt::print("  ops {} -> {}; peak {} e-nodes of {}{}; stop: {}; extraction {}\n",
             tensor::total_ops(graph), tensor::total_ops(r.graph), r.stats.peak_nodes,
             o.optimize.budget.max_nodes, per_region, r.stats.stop_reason, to_string(r.extraction));
  if (!o.optimize.rule_files.empty() && !o.optimize.unverified_rules)
    fmt::print(
        "  rule files: {} rules verified, {} not verifiable ({} of {} files from the cache)\n",
        r.rule_check.verified, r.rule_check.unverified.size(), r.rule_check.files_from_cache,
        o.optimize.rule_files.size());
  if (r.regions > 1)
    fmt::print("  regions: {}, {} structures searched, {} reused a search\n", r.regions,
               r.region_summaries.size(), r.region_cache_hits());
  fmt::print("  weights held {:.1f} MB -> {:.1f} MB (charged beyond the cache: {:.2f})\n",
             r.weight_bytes_before / 1e6, r.weight_bytes_after / 1e6, r.weight_spill);
  fmt::print("  time: rules {:.2f} s, search {:.2f} s, extraction {:.2f} s, total {:.2f} s\n",
             r.times.rules, r.times.search, r.times.extract, r.times.total);
  fmt::print("  self-check: {}\n", r.self_check);
  if (!sizes_only.empty())
    fmt::print(
        "  kept the input: the best graph found costs {:.2f}, but it holds only at the given "
        "sizes of its symbolic dimensions: {}\n",
        r.cost_found, sizes_only);
  else if (r.kept_input && r.found_cheaper())
    fmt::print(
        "  kept the input: the best graph found costs {:.2f} ({:.3f}% lower, below the "
        "minimum gain of {:.3g}%)\n",
        r.cost_found, 100 * (r.cost_before - r.cost_found) / r.cost_before,
        100 * min_gain_of(o.optimize));
  for (std::size_t i = 0; i < r.rules_applied.size() && i < 8; ++i)
    fmt::print("  {:>6}  {}\n", r.rules_applied[i].count, r.rules_applied[i].name);
  if (!o.out.empty())
    fmt::print("wrote {}{}\n", o.out, kept_onnx_input(o, r) ? " (a copy of the input file)" : "");
  if (!o.dot_dir.empty())
    fmt::print("wrote {}/before.dot and {}/after.dot\n", o.dot_dir, o.dot_dir);
}

}  // namespace

// The summary as --report writes it.
nlohmann::json report_json(const Graph& graph, const OptimizeResult& r,
                           const OptimizeCommandOptions& o, const std::string& sizes_only) {
  nlohmann::json rules = nlohmann::json::array();
  for (const RuleApplication& a : r.rules_applied)
    rules.push_back({{"rule", a.name}, {"count", a.count}});
  nlohmann::json conflicting = nlohmann::json::array();
  for (const RuleApplication& a : r.rules_conflicting)
    conflicting.push_back({{"rule", a.name}, {"refusals", a.count}});
  nlohmann::json regions = nlohmann::json::array();
  for (const RegionSummary& s : r.region_summaries)
    regions.push_back({{"first_region", s.first},
                       {"copies", s.copies},
                       {"ops", s.ops},
                       {"cost_before", s.cost_before},
                       {"cost_after", s.cost_after},
                       {"stop_reason", s.stop_reason},
                       {"peak_nodes", s.peak_nodes},
                       {"seconds", s.seconds}});
  return {{"model", graph.name},
          {"strategy", r.stats.strategy},
          {"cost_model", r.cost_model},
          {"target", o.optimize.target == Target::kOnnx ? "onnx" : "onnxruntime"},
          {"cost_before", r.cost_before},
          {"cost_after", r.cost_after},
          {"improvement_percent", r.improvement_percent()},
          {"kept_input", r.kept_input},
          {"not_searched", r.not_searched.empty() ? nlohmann::json() : nlohmann::json(r.not_searched)},
          {"symbolic_dimensions", graph.symbols.sizes},
          {"holds_only_at_given_sizes",
           sizes_only.empty() ? nlohmann::json() : nlohmann::json(sizes_only)},
          {"cost_found", r.cost_found},
          {"min_gain_percent", 100 * min_gain_of(o.optimize)},
          {"ops_before", tensor::total_ops(graph)},
          {"ops_after", tensor::total_ops(r.graph)},
          {"opaque_ops_before", opaque_op_types(graph)},
          {"opaque_ops_after", opaque_op_types(r.graph)},
          {"weight_bytes_before", r.weight_bytes_before},
          {"weight_bytes_after", r.weight_bytes_after},
          {"weight_spill", r.weight_spill},
          {"peak_nodes", r.stats.peak_nodes},
          {"peak_bytes", r.stats.peak_bytes},
          {"budget_nodes", o.optimize.budget.max_nodes},
          {"stop_reason", r.stats.stop_reason},
          {"extraction", std::string(to_string(r.extraction))},
          {"simulations", r.stats.simulations},
          {"regions", r.regions},
          {"region_structures", regions},
          {"region_cache_hits", r.region_cache_hits()},
          {"rules_applied", rules},
          {"rules_rejected_type_mismatch", conflicting},
          {"unverified_rules", r.rule_check.unverified},
          {"self_check", r.self_check},
          {"rule_files",
           {{"files", o.optimize.rule_files},
            {"checked", !o.optimize.rule_files.empty() && !o.optimize.unverified_rules},
            {"verified", r.rule_check.verified},
            {"files_from_cache", r.rule_check.files_from_cache}}},
          {"seconds",
           {{"rules", r.times.rules},
            {"search", r.times.search},
            {"extract", r.times.extract},
            {"total", r.times.total}}}};
}

absl::StatusOr<OptimizeOutcome> optimize_file(OptimizeCommandOptions& o) {
  o.optimize.search.strategy = *parse_strategy(o.search);
  o.optimize.target = o.target == "onnx" ? Target::kOnnx : Target::kOnnxRuntime;
  absl::StatusOr<Graph> graph = load_model(o.model, o.onnx);
  if (!graph.ok()) return graph.status();
  note_default_sizes(*graph, o.onnx);
  absl::StatusOr<std::shared_ptr<const CostModel>> cost_model = cost_model_for(o.cost);
  if (!cost_model.ok()) return cost_model.status();
  o.optimize.cost_model = *cost_model;
  // Unset, the library's default (min_gain_of).
  if (o.min_gain_percent) o.optimize.min_gain = *o.min_gain_percent / 100;
  absl::StatusOr<OptimizeResult> r = optimize(*graph, o.optimize);
  if (!r.ok()) return with_context(r.status(), o.model);
  if (r->worker) return OptimizeOutcome{*std::move(graph), *std::move(r), ""};
  if (o.optimize.unverified_rules && !o.optimize.rule_files.empty()) {
    fmt::print(stderr,
               "saturn: warning: the rule files were used unverified (--unverified-rules)\n");
  } else {
    for (const std::string& rule : r->rule_check.unverified)
      fmt::print(stderr, "saturn: warning: could not verify {}\n", rule);
  }
  for (const RuleApplication& rule : r->rules_conflicting)
    fmt::print(stderr,
               "saturn: warning: rule {} rejected: type mismatch ({} refusals; its result's shape "
               "or dtype differs from the matched value's, so the rule is unsound)\n",
               rule.name, rule.count);
  OptimizeOutcome outcome{*std::move(graph), *std::move(r), ""};
  std::string exported;  // the export checked at other sizes, if any
  outcome.sizes_only = keep_input_unless_generic(outcome.input, o, outcome.result, exported);
  if (!o.out.empty()) {
    // A kept ONNX input is written as it came, not as saturn would export it.
    absl::Status s = kept_onnx_input(o, outcome.result) ? tensor::copy_onnx_model(o.model, o.out)
                     : !exported.empty()                ? write_text_file(o.out, exported)
                                                        : save_model(outcome.result.graph, o.out);
    if (!s.ok()) return s;
  }
  return outcome;
}

namespace {

// Checks what the options name before any work: no output over an input,
// output formats, and --verify's need for an ONNX output.
int check_optimize_options(const CLI::App& app, const OptimizeCommandOptions& o) {
  std::vector<std::string> inputs = o.optimize.rule_files;
  inputs.push_back(o.model);
  inputs.push_back(cost_file(o.cost));
  std::vector<std::string> outputs = {o.out, o.report};
  // A model past 2 GB writes its weights beside it.
  if (o.out.ends_with(".onnx")) outputs.push_back(tensor::external_data_file(o.out));
  if (!o.dot_dir.empty()) {
    for (const char* file : {"before.dot", "after.dot", "before.svg", "after.svg"})
      outputs.push_back((std::filesystem::path(o.dot_dir) / file).string());
  }
  if (absl::Status s = check_outputs(inputs, outputs); !s.ok()) return fail(s);
  if (!o.out.empty() && !o.out.ends_with(".onnx") && !o.out.ends_with(".json"))
    return usage_error(app, "-o needs a .onnx or .json file name");
  if (o.verify && !o.out.ends_with(".onnx"))
    return usage_error(app, "--verify, --keep-faster and --min-speedup need -o OUT.onnx");
  return 0;
}

// The ranks of an MPI launch as the processes a search is spread over.
class RankProcesses final : public Processes {
 public:
  int rank() const override { return ranks_.rank(); }
  int size() const override { return ranks_.size(); }
  std::size_t next_task(std::size_t count) override { return ranks_.next_task(count); }
  std::vector<std::string> gather(const std::string& mine) override {
    return ranks_.gather(mine);
  }
  std::vector<std::string> all_gather(const std::string& mine) override {
    return ranks_.all_gather(mine);
  }

 private:
  Ranks ranks_;
};

int run_optimize(const CLI::App& app, OptimizeCommandOptions& o) {
  if (o.keep_faster && !o.min_speedup) o.min_speedup = 1.0;
  o.verify = o.verify || o.min_speedup.has_value();
  if (int rc = check_optimize_options(app, o); rc != 0) return rc;
  // Under mpirun, the region searches spread over the ranks; rank 0 reports
  // and writes.
  std::unique_ptr<RankProcesses> ranks;
  if (Ranks::launched()) ranks = std::make_unique<RankProcesses>();
  const bool root = ranks == nullptr || ranks->rank() == 0;
  if (ranks != nullptr && ranks->size() > 1) o.optimize.search.processes = ranks.get();
  ProgressLine progress(root && !o.quiet && isatty(fileno(stderr)));
  o.optimize.on_progress = [&progress](const SearchProgress& p) { progress.update(p); };
  absl::StatusOr<OptimizeOutcome> outcome = optimize_file(o);
  progress.finish();
  if (!outcome.ok()) return fail(outcome.status());
  if (outcome->result.worker) return 0;
  const Graph* graph = &outcome->input;
  const OptimizeResult* r = &outcome->result;
  const std::string& sizes_only = outcome->sizes_only;
  if (!o.dot_dir.empty()) {
    for (const auto& [g, stem] : {std::pair{&*graph, "before"}, std::pair{&r->graph, "after"}}) {
      if (absl::Status s = write_dot(*g, o.dot_dir, stem); !s.ok()) return fail(s);
    }
  }
  if (!r->not_searched.empty())
    fmt::print(stderr, "saturn: {}: kept unsearched, since {} (a larger --budget-nodes or "
                       "--budget-mem searches it)\n",
               o.model, r->not_searched);
  if (!o.quiet) print_summary(*graph, *r, o, sizes_only);
  if (!o.report.empty()) {
    const std::string text = report_json(*graph, *r, o, sizes_only).dump(2) + "\n";
    if (absl::Status s = write_text_file(o.report, text); !s.ok()) return fail(s);
  }
  if (o.verify)
    return run_verify(o.model, *graph, o.out, r->graph, o.verify_options, "", o.onnx,
                      o.min_speedup);
  return 0;
}

}  // namespace

// The search's own options: strategy, budget, cost, rules, threads.
void add_search_options(CLI::App& app, OptimizeCommandOptions& o) {
  SearchBudget& budget = o.optimize.budget;
  app.add_option("--search", o.search, "the search strategy")
      ->capture_default_str()
      ->check(CLI::IsMember({"mcts", "greedy", "default", "taso"}));
  app.add_option("--budget-nodes", budget.max_nodes, "e-node budget")->capture_default_str();
  app.add_option("--budget-mem", budget.max_bytes, "byte budget (default unlimited)");
  app.add_option("--time-limit", budget.time_limit_seconds, "search time limit in seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber & kFinite);
  app.add_option("--cost", o.cost, "opcount | roofline | roofline:PROFILE | measured:FILE")
      ->capture_default_str();
  app.add_option("--rules", o.optimize.rule_files,
                 "a rule file (repeatable; default: the shipped tensor rules); its rules are "
                 "verified first and a file with an unsound rule is refused")
      ->allow_extra_args(false);
  app.add_option("--target", o.target,
                 "onnxruntime: onnxruntime's fused operators (com.microsoft domain) may be chosen; "
                 "onnx: standard ONNX operators only")
      ->capture_default_str()
      ->check(CLI::IsMember({"onnxruntime", "onnx"}));
  app.add_flag("--unverified-rules", o.optimize.unverified_rules,
               "use the --rules files without verifying their rules");
  app.add_option("--threads", o.optimize.search.threads, "search threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--seed", o.optimize.search.seed, "search seed")->capture_default_str();
  app.add_option_function<int>(
         "--region-ops",
         [&o](int ops) { o.optimize.regions = {.target_ops = ops, .max_ops = ops * 5 / 2}; },
         fmt::format("cut a larger graph into regions of about N operators, each searched on its "
                     "own (budgets are per region); 0: search it whole (default {})",
                     o.optimize.regions.target_ops))
      ->check(CLI::Range(0, 1000000));
  app.add_option("--ilp-seconds", o.optimize.ilp_seconds,
                 "exact extraction time limit; 0: greedy only")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber & kFinite);
  app.add_option("--min-gain", o.min_gain_percent,
                 "keep the input unless the result is predicted P% cheaper (default 0.5 under a "
                 "latency cost, 0 under opcount)")
      ->check(CLI::Range(0.0, 99.999999));
}

Command add_optimize_command(CLI::App& program) {
  auto o = std::make_shared<OptimizeCommandOptions>();
  o->optimize.search.threads = 2;
  CLI::App* app = program.add_subcommand("optimize", "Search, extract, report");
  app->add_option("MODEL", o->model, "an ONNX file, a saturn JSON file or a zoo model name")
      ->required();
  app->add_option("-o", o->out, "write the optimized model, .onnx or .json (never the input)");
  add_search_options(*app, *o);
  app->add_option("--report", o->report, "write the summary as JSON");
  app->add_option("--dot", o->dot_dir,
                  "write before.dot and after.dot (and .svg when graphviz is installed) to DIR");
  app->add_flag("--quiet", o->quiet, "no progress line and no summary (errors still go to stderr)");
  app->add_flag(
      "--no-check", [o](std::int64_t) { o->optimize.self_check = false; },
      "do not run the result beside the input in the interpreter before writing it");
  app->add_flag("--verify", o->verify,
                "run the output and the input in onnxruntime: outputs must match (-o .onnx)");
  app->add_option("--verify-runs", o->verify_options.runs, "timed runs for --verify")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app->add_flag("--keep-faster", o->keep_faster,
                "--verify, and write the input instead if the output runs slower");
  app->add_option("--min-speedup", o->min_speedup,
                  "the same, unless the output runs at least X times as fast")
      ->check(CLI::PositiveNumber & kFinite);
  add_dim_option(*app, o->onnx);
  return {app, [app, o] { return run_optimize(*app, *o); }};
}

}  // namespace saturn::tools

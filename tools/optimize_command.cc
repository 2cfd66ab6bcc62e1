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
#include "saturn/optimize/options.h"
#include "saturn/optimize/report.h"
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

void print_summary(const Graph& graph, const OptimizeResult& r, const OptimizeCommandOptions& o) {
  // Unmeasured fused kernels both graphs hold are left out of the figures.
  const auto [before, after] = comparable_costs(r.cost_before, r.cost_after);
  fmt::print(
      "{}: {} search, {} cost: {:.2f} -> {:.2f} ({:.2f}% lower, predicted speedup {:.3f}x){}\n",
      graph.name, r.stats.strategy, r.cost_model, before, after, r.improvement_percent(),
      r.speedup(), before == r.cost_before ? "" : ", fused kernels the table has not timed left out");
  const char* per_region = r.regions > 1 ? " per region" : "";
  fmt::print("  ops {} -> {}; peak {} e-nodes of {}{}; stop: {}; extraction {}\n",
             tensor::total_ops(graph), tensor::total_ops(r.graph), r.stats.peak_nodes,
             o.optimize.budget.max_nodes, per_region, stop_summary(r), to_string(r.extraction));
  if (const std::string blocks = blocks_summary(r); !blocks.empty())
    fmt::print("  blocks: {}\n", blocks);
  for (const SubgraphSummary& s : r.subgraphs)
    fmt::print("  subgraph {} of '{}': {} -> {} ops, {}\n", s.attribute, s.node, s.ops_before,
               s.ops_after, s.replaced ? "replaced; " + s.note : s.note);
  if (!o.optimize.rule_files.empty() && !o.optimize.unverified_rules)
    fmt::print(
        "  rule files: {} rules verified, {} not verifiable ({} of {} files from the cache)\n",
        r.rule_check.verified, r.rule_check.unverified.size(), r.rule_check.files_from_cache,
        o.optimize.rule_files.size());
  if (r.regions > 1)
    fmt::print("  regions: {}, {} structures searched, {} reused a search\n", r.regions,
               r.region_summaries.size(), r.region_cache_hits());
  if (r.cost_source != r.cost_model) fmt::print("  priced by: {}\n", r.cost_source);
  fmt::print("  weights held {:.1f} MB -> {:.1f} MB (charged beyond the cache: {:.2f})\n",
             r.weight_bytes_before / 1e6, r.weight_bytes_after / 1e6, r.weight_spill);
  fmt::print(
      "  time: rules {:.2f} s, search {:.2f} s, extraction {:.2f} s, checks {:.2f} s, timing in "
      "onnxruntime {:.2f} s, total {:.2f} s\n",
      r.times.rules, r.times.search, r.times.extract, r.times.check, r.times.measure,
      r.times.total);
  fmt::print("  peak memory: saturn {:.0f} MB{}\n", r.peak_memory.process_bytes / 1e6,
             r.peak_memory.children_bytes > 0
                 ? fmt::format(", onnxruntime's harness {:.0f} MB", r.peak_memory.children_bytes / 1e6)
                 : "");
  fmt::print("  self-check: {}\n", r.self_check);
  fmt::print("  decision: {}\n", r.decision.summary());
  const bool timed = r.measured && r.measured->timed;
  if (r.measured)
    fmt::print("  onnxruntime: {}{}\n", r.measured->note,
               timed ? fmt::format(" ({} runs in {} sessions, {}, timed by {}, one model's sessions "
                                   "{:.1f}% apart)",
                                   r.measured->rounds, r.measured->sessions, r.measured->runtime,
                                   r.measured->clock, 100 * r.measured->noise)
                     : "");
  if (r.measured && !r.measured->candidate.empty()) {
    fmt::print("  candidate: {}\n", r.measured->candidate);
    for (const std::string& other : r.measured->other_candidates)
      fmt::print("  beside it: {}\n", other);
  }
  if (!r.regions_kept_for_sizes.empty())
    fmt::print("  kept {} region{} as {} came: {} only at the given sizes of the symbolic "
               "dimensions (first: {})\n",
               r.regions_kept_for_sizes.size(), r.regions_kept_for_sizes.size() == 1 ? "" : "s",
               r.regions_kept_for_sizes.size() == 1 ? "it" : "they",
               r.regions_kept_for_sizes.size() == 1 ? "its search result holds" : "their search results hold",
               r.regions_kept_for_sizes.front());
  if (!r.holds_only_at_given_sizes.empty())
    fmt::print(
        "  kept the input: the best graph found costs {:.2f}, but it holds only at the given "
        "sizes of its symbolic dimensions: {}\n",
        r.cost_found, r.holds_only_at_given_sizes);
  else if (r.kept_input() && r.found_cheaper() && !timed)
    fmt::print(
        "  kept the input: the best graph found costs {:.2f} ({:.3f}% lower, below the "
        "minimum gain of {:.3g}%)\n",
        r.cost_found, r.found_percent(),
        100 * min_gain_of(o.optimize));
  for (std::size_t i = 0; i < r.rules_applied.size() && i < 8; ++i)
    fmt::print("  {:>6}  {}\n", r.rules_applied[i].count, r.rules_applied[i].name);
  if (!o.out.empty())
    fmt::print("wrote {}{}\n", o.out,
               saves_a_copy(r, o.out) ? " (a copy of the input file)" : "");
  if (!o.dot_dir.empty())
    fmt::print("wrote {}/before.dot and {}/after.dot\n", o.dot_dir, o.dot_dir);
}

}  // namespace

absl::StatusOr<OptimizeOutcome> optimize_file(OptimizeCommandOptions& o) {
  absl::StatusOr<Graph> graph = load_model(o.model, o.onnx);
  if (!graph.ok()) return graph.status();
  note_default_sizes(*graph, o.onnx);
  absl::StatusOr<std::shared_ptr<const CostModel>> cost_model = cost_model_for(cost_spec(o.optimize));
  if (!cost_model.ok()) return cost_model.status();
  o.optimize.cost_model = *cost_model;
  // Most runs keep their input: its copy is made while the search runs
  // (a model of gigabytes takes seconds to copy), halted while onnxruntime
  // times a candidate, and finished or dropped at the end.
  std::optional<StagedCopy> copy;
  OptimizeOptions options = o.optimize;
  const Processes* ranks = options.search.processes;
  if (o.out.ends_with(".onnx") && !graph->source.empty() && (!ranks || ranks->rank() == 0)) {
    absl::StatusOr<StagedCopy> staged = tensor::stage_onnx_copy(graph->source, o.out);
    if (!staged.ok()) return staged.status();
    copy = *std::move(staged);
    copy->start();
    options.before_timing = [&copy] { copy->stop(); };
  }
  absl::StatusOr<OptimizeResult> r = optimize(*graph, options);
  if (!r.ok()) return with_context(r.status(), o.model);
  if (r->worker) return OptimizeOutcome{*std::move(graph), *std::move(r)};
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
  if (!o.out.empty()) {
    const bool copied = copy && saves_a_copy(*r, o.out);
    if (!copied) copy.reset();  // its temporary files go before the result is written
    if (absl::Status s = copied ? copy->commit() : save_result(*r, o.out); !s.ok()) return s;
  }
  return OptimizeOutcome{*std::move(graph), *std::move(r)};
}

namespace {

// Checks what the options name before any work: no output over an input,
// output formats, and --verify's need for an ONNX output.
int check_optimize_options(const CLI::App& app, const OptimizeCommandOptions& o) {
  std::vector<std::string> inputs = o.optimize.rule_files;
  inputs.push_back(o.model);
  inputs.push_back(cost_file(o.optimize.cost));
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
    return usage_error(app, "--verify needs -o OUT.onnx");
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
  // Timed, and measurably faster: the decision's measured gate.
  if (o.keep_faster && !o.optimize.min_speedup) o.optimize.min_speedup = 1.0;
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
  if (!o.dot_dir.empty()) {
    for (const auto& [g, stem] : {std::pair{&*graph, "before"}, std::pair{&r->graph, "after"}}) {
      if (absl::Status s = write_dot(*g, o.dot_dir, stem); !s.ok()) return fail(s);
    }
  }
  if (!r->not_searched.empty())
    fmt::print(stderr, "saturn: {}: kept unsearched, since {} (a larger --budget-nodes or "
                       "--budget-mem searches it)\n",
               o.model, r->not_searched);
  if (!o.quiet) print_summary(*graph, *r, o);
  if (!o.report.empty()) {
    const std::string text = optimize_report(*graph, *r, o.optimize).dump(2) + "\n";
    if (absl::Status s = write_text_file(o.report, text); !s.ok()) return fail(s);
  }
  if (o.verify)
    return run_verify(o.model, *graph, o.out, r->graph, o.verify_options, "", o.onnx);
  return 0;
}

}  // namespace

void add_search_options(CLI::App& app, OptimizeCommandOptions& o) {
  for (const OptionInfo& info : optimize_options()) {
    const std::string name(info.name), flag = "--" + name, help = option_help(info);
    auto set = [&o, name, flag](const std::string& value) {
      if (absl::Status s = set_option(o.optimize, name, value); !s.ok())
        throw CLI::ValidationError(flag, std::string(message(s)));
    };
    switch (info.kind) {
      case OptionInfo::Kind::kFlag:
        app.add_flag_callback(flag, [set] { set("true"); }, help);
        break;
      case OptionInfo::Kind::kList:
        app.add_option_function<std::vector<std::string>>(
               flag,
               [set](const std::vector<std::string>& values) {
                 for (const std::string& v : values) set(v);
               },
               help)
            ->type_name(std::string(info.value))
            ->allow_extra_args(false);
        break;
      case OptionInfo::Kind::kValue:
        app.add_option_function<std::string>(flag, set, help)
            ->type_name(std::string(info.value));
        break;
    }
  }
}

Command add_optimize_command(CLI::App& program) {
  auto o = std::make_shared<OptimizeCommandOptions>();
  CLI::App* app = program.add_subcommand("optimize", "Search, extract, report");
  app->add_option("MODEL", o->model, "an ONNX file, a saturn JSON file or a zoo model name")
      ->required();
  app->add_option("-o", o->out, "write the optimized model, .onnx or .json (never the input)");
  add_search_options(*app, *o);
  app->add_option("--report", o->report, "write the summary as JSON");
  app->add_option("--dot", o->dot_dir,
                  "write before.dot and after.dot (and .svg when graphviz is installed) to DIR");
  app->add_flag("--quiet", o->quiet, "no progress line and no summary (errors still go to stderr)");
  app->add_flag("--verify", o->verify,
                "run the output and the input in onnxruntime: outputs must match (-o .onnx)");
  app->add_option("--verify-runs", o->verify_options.runs, "timed runs for --verify")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app->add_flag("--keep-faster", o->keep_faster,
                "keep the input unless the result is timed in onnxruntime and runs measurably "
                "faster (--min-speedup 1)");
  add_dim_option(*app, o->onnx.dims);
  return {app, [app, o] { return run_optimize(*app, *o); }};
}

}  // namespace saturn::tools

// The saturn command line.
//
//   saturn zoo                      list the zoo models with their op counts
//   saturn zoo --eval [NAME...]     also run them in the reference interpreter
//   saturn zoo NAME --save OUT.json write a zoo model in saturn's JSON format
//   saturn check MODEL              load, type-check, count ops and evaluate a model
//   saturn info MODEL               inputs, outputs, ops by type, weights and cost
//   saturn rules list [FILE...]     each rule's name, kind and group (default: the shipped rules)
//   saturn rules verify [FILE...]   check each rule's soundness on random shapes and values
//   saturn optimize MODEL [-o OUT] [options]   search, extract, report (see --help)
//   saturn verify A.onnx B.onnx     compare and time two models in onnxruntime
//   saturn calibrate MODEL... -o T  measure operator signatures in onnxruntime
//   saturn env                      the search environment over line-based JSON on stdin/stdout
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <unistd.h>

#include "egraph/file.h"
#include "egraph/flags.h"
#include "egraph/status.h"
#include "egraph/stopwatch.h"
#include "fmt/format.h"
#include "mcts/optimize.h"
#include "mcts/protocol.h"
#include "nlohmann/json.hpp"
#include "rules/parser.h"
#include "rules/tensor/tensor_rules.h"
#include "tensor/interpreter.h"
#include "tensor/json_model.h"
#include "tensor/onnx.h"
#include "tensor/zoo/zoo.h"
#include "tools/runtime.h"

namespace {

using namespace saturn;
using namespace saturn::tensor;

constexpr std::string_view kUsage = R"(usage:
  MODEL is an ONNX file (.onnx), a saturn JSON model (.json) or a zoo model name;
  --dim NAME=SIZE gives a symbolic ONNX input dimension its size (any command that reads MODEL).
  saturn zoo [--eval] [NAME...]      list zoo models (op counts; --eval: interpreter time)
  saturn zoo NAME --save OUT         write a zoo model (.json or .onnx)
  saturn check MODEL [--eval]        load and type-check a model, print its op counts
  saturn info MODEL [--cost C]       inputs, outputs, ops by type, weights, cost (by op type)
  saturn rules list [FILE...]        list rules: name, kind, group, interchangeable patterns
  saturn rules verify [FILE...]      verify rules on random shapes and values; non-zero exit if any fails
  saturn optimize MODEL [options]    search, extract, report
      -o OUT                         write the optimized model, .onnx or .json (never the input file)
      --search mcts|greedy|default|taso   (default mcts)
      --budget-nodes N               e-node budget (default 2000)
      --budget-mem BYTES             byte budget (default unlimited)
      --time-limit S                 search time limit in seconds (default 60)
      --cost opcount|roofline|roofline:PROFILE|measured:FILE   (default roofline)
      --rules FILE...                rule files (default: the shipped tensor rules)
      --threads N  --seed N          (defaults 2 and 1)
      --ilp-seconds S                exact extraction time limit; 0: greedy only (default 10)
      --min-gain P                   keep the input unless the result is predicted P% cheaper
                                     (default 0.5 under a latency cost, 0 under opcount)
      --report FILE.json             write the summary as JSON
      --dot DIR                      write before.dot and after.dot (and .svg when graphviz is installed)
      --quiet                        no progress line and no summary (errors still go to stderr)
      --verify                       run the output and the input in onnxruntime: outputs must match (-o .onnx)
      --verify-runs N                timed runs for --verify (default 20)
      --keep-faster                  --verify, and write the input instead if the output runs slower
      --min-speedup X                the same, unless the output runs at least X times as fast
  saturn verify ORIGINAL OPTIMIZED [--runs N] [--warmup N] [--rtol R] [--atol A] [--seed S]
                [--threads T] [--json FILE]
                                     run both in onnxruntime (CPU, all graph optimizations) on the same
                                     seeded inputs: compare every output, time them (median, A/B alternating);
                                     exit 1 on a mismatch
  saturn calibrate MODEL... -o COSTS.json [--runs N] [--warmup N] [--seed S] [--passes P] [--refresh]
                [--explore N] [--threads T]
                                     time each distinct operator signature in onnxruntime (its kernel
                                     time), also those the rules reach in an e-graph of N e-nodes
                                     (default 2000; 0: the models' own); an operator that reads a
                                     convolution is also timed between convolutions, the layout reorders
                                     it causes included; writes (or extends) the table for
                                     --cost measured:COSTS.json; each model is timed in P passes (default
                                     3) and its fastest kept; --refresh times the table's entries again
  saturn env                         serve the search environment: JSON requests on stdin, one per line
Exit codes: 0 success; 1 an error (bad input, failed verification); 2 bad usage.
)";

// An ONNX file, a saturn JSON file, or a zoo model by name.
absl::StatusOr<Graph> load_model(const std::string& name, const OnnxImportOptions& onnx = {}) {
  if (name.ends_with(".onnx")) return load_onnx_model(name, onnx);
  if (name.ends_with(".json")) return load_json_model(name);
  if (name.find('/') != std::string::npos || std::filesystem::exists(name))
    return absl::InvalidArgumentError(
        fmt::format("{}: unknown model format (expected .onnx or .json)", name));
  return build_zoo_model(name);
}

absl::Status save_model(const Graph& graph, const std::string& path) {
  if (path.ends_with(".onnx")) return save_onnx_model(graph, path);
  if (path.ends_with(".json")) return save_json_model(graph, path);
  return absl::InvalidArgumentError(
      fmt::format("{}: unknown output format (use .onnx or .json)", path));
}

// Splits `--dim NAME=SIZE` options out of `args`; false on a malformed one.
bool take_dims(std::vector<std::string>& args, OnnxImportOptions& onnx, std::string& error) {
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--dim") {
      rest.push_back(args[i]);
      continue;
    }
    const std::string spec = i + 1 < args.size() ? args[++i] : "";
    const std::size_t eq = spec.find('=');
    try {
      if (eq == std::string::npos || eq == 0) throw std::invalid_argument(spec);
      std::size_t used = 0;
      const long long size = std::stoll(spec.substr(eq + 1), &used);
      if (used != spec.size() - eq - 1 || size < 0) throw std::invalid_argument(spec);
      onnx.dims[spec.substr(0, eq)] = size;
    } catch (const std::exception&) {
      error = fmt::format("--dim needs NAME=SIZE, got '{}'", spec);
      return false;
    }
  }
  args = std::move(rest);
  return true;
}

int fail(const absl::Status& status) {
  fmt::print(stderr, "saturn: {}\n", message(status));
  return 1;
}

// Whether paths `a` and `b` name one file: the same file when both exist
// (links and "./" included), otherwise the same normalized path.
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

// Refuses a command that would write one of `outputs` over one of `inputs`
// (the files it reads) or over another of its outputs. Empty names are
// options not given.
absl::Status check_outputs(const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].empty()) continue;
    for (const std::string& in : inputs) {
      if (!in.empty() && same_file(outputs[i], in))
        return absl::InvalidArgumentError(
            fmt::format("{}: will not overwrite the input file {}", outputs[i], in));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (!outputs[j].empty() && same_file(outputs[i], outputs[j]))
        return absl::InvalidArgumentError(
            fmt::format("{}: named for two outputs of one command", outputs[i]));
    }
  }
  return absl::OkStatus();
}

// The file a --cost option reads, if any ("measured:FILE", "roofline:FILE.json").
std::string cost_file(std::string_view spec) {
  const std::size_t colon = spec.find(':');
  return colon == std::string_view::npos ? "" : std::string(spec.substr(colon + 1));
}

// The cost model named by --cost. A measured table timed on another machine
// prices this one's kernels only roughly, so that is said (on stderr; the
// command goes on).
absl::StatusOr<std::shared_ptr<const CostModel>> cost_model_for(std::string_view spec) {
  absl::StatusOr<std::shared_ptr<const CostModel>> model = cost_model_by_name(spec);
  if (!model.ok()) return model;
  const auto* measured = dynamic_cast<const MeasuredCostModel*>(model->get());
  if (measured != nullptr && !measured->measured_on().empty()) {
    const std::string here = machine_description();
    if (measured->measured_on() != here) {
      fmt::print(stderr,
                 "saturn: note: {} was measured on {}, this machine is {} (saturn calibrate "
                 "--refresh times its entries here)\n",
                 spec.substr(spec.find(':') + 1), measured->measured_on(), here);
    }
  }
  return model;
}

std::string op_summary(const Graph& graph) {
  std::string out;
  for (const auto& [op, count] : op_counts(graph)) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", op_name(op), count);
  }
  return out;
}

// Runs the graph on seeded random inputs; returns seconds or an error.
absl::StatusOr<double> time_evaluation(const Graph& graph) {
  Inputs inputs = random_inputs(graph, 1);
  const Stopwatch clock;
  absl::StatusOr<std::vector<Tensor>> out = evaluate(graph, inputs);
  if (!out.ok()) return out.status();
  return clock.seconds();
}

int describe(const Graph& graph, bool eval) {
  fmt::print("{:<14} {:>5} ops  {}\n", graph.name, total_ops(graph), op_summary(graph));
  if (!eval) return 0;
  absl::StatusOr<double> seconds = time_evaluation(graph);
  if (!seconds.ok()) return fail(with_context(seconds.status(), graph.name));
  fmt::print("{:<14} evaluated in {:.2f} s\n", "", *seconds);
  return 0;
}

int zoo(const std::vector<std::string>& args) {
  bool eval = false;
  std::string save;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--eval") {
      eval = true;
    } else if (args[i] == "--save" && i + 1 < args.size()) {
      save = args[++i];
    } else if (args[i].starts_with("-")) {
      fmt::print(stderr, "saturn zoo: unknown option '{}'\n{}", args[i], kUsage);
      return 2;
    } else {
      names.push_back(args[i]);
    }
  }
  if (names.empty()) {
    for (const ZooModel& m : zoo_models()) names.emplace_back(m.name);
  }
  if (!save.empty() && names.size() != 1) {
    fmt::print(stderr, "saturn zoo: --save needs exactly one model name\n");
    return 2;
  }
  for (const std::string& name : names) {
    absl::StatusOr<Graph> graph = build_zoo_model(name);
    if (!graph.ok()) return fail(graph.status());
    if (int rc = describe(*graph, eval); rc != 0) return rc;
    if (!save.empty()) {
      if (absl::Status s = save_model(*graph, save); !s.ok()) return fail(s);
      fmt::print("wrote {}\n", save);
    }
  }
  return 0;
}

int check(const std::vector<std::string>& args, const OnnxImportOptions& onnx) {
  if (args.empty() || args.size() > 2 || (args.size() == 2 && args[1] != "--eval")) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  absl::StatusOr<Graph> graph = load_model(args[0], onnx);
  if (!graph.ok()) return fail(graph.status());
  return describe(*graph, args.size() == 2);
}

int info(const std::vector<std::string>& args, const OnnxImportOptions& onnx) {
  std::string model, cost = "roofline";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--cost" && i + 1 < args.size())
      cost = args[++i];
    else if (args[i].starts_with("-") || !model.empty())
      return fmt::print(stderr, "saturn info: unexpected '{}'\n{}", args[i], kUsage), 2;
    else
      model = args[i];
  }
  if (model.empty()) return fmt::print(stderr, "saturn info: which model?\n{}", kUsage), 2;
  absl::StatusOr<Graph> graph = load_model(model, onnx);
  if (!graph.ok()) return fail(graph.status());
  absl::StatusOr<std::vector<ValueType>> types = infer_types(*graph);
  if (!types.ok()) return fail(with_context(types.status(), model));
  absl::StatusOr<std::shared_ptr<const CostModel>> cost_model = cost_model_for(cost);
  if (!cost_model.ok()) return fail(cost_model.status());
  fmt::print("{}: {} ops\n", graph->name, total_ops(*graph));
  if (!graph->opsets.empty()) {
    std::string opsets;
    for (const auto& [domain, version] : graph->opsets)
      opsets +=
          fmt::format(" {}{}", domain.empty() ? "ai.onnx" : domain, fmt::format(":{}", version));
    fmt::print("  opsets:{}\n", opsets);
  }
  std::int64_t weight_bytes = 0, weights = 0;
  std::map<std::string, int> opaque;
  for (int i = 0; i < graph->size(); ++i) {
    const Node& n = graph->nodes[i];
    if (n.op == Op::kInput) {
      const std::string& name = *n.attributes.get_string("name");
      fmt::print("  input  {:<24} {}{}\n", name, to_string((*types)[i]),
                 graph->input_defaults.contains(name) ? "  (has a default)" : "");
    }
    if (n.op == Op::kWeight) {
      ++weights;
      weight_bytes += (*types)[i].tensor().num_bytes();
    }
    if (n.op == Op::kOpaque) ++opaque[*n.attributes.get_string("op_type")];
  }
  for (const GraphOutput& o : graph->outputs)
    fmt::print("  output {:<24} {}\n", o.name, to_string((*types)[o.node]));
  fmt::print("  weights: {} tensors, {:.1f} MB\n", weights, weight_bytes / 1e6);
  fmt::print("  ops: {}\n", op_summary(*graph));
  for (const auto& [op_type, count] : opaque)
    fmt::print("  kept as opaque: {} x{}\n", op_type, count);
  absl::StatusOr<std::vector<double>> costs = graph_node_costs(**cost_model, *graph);
  if (!costs.ok()) return fail(with_context(costs.status(), model));
  // The cost by operator type, dearest first.
  std::map<std::string, std::pair<double, int>> by_op;
  double total = 0;
  for (int i = 0; i < graph->size(); ++i) {
    if ((*costs)[i] == 0) continue;
    auto& [sum, count] = by_op[std::string(tensor::op_name(graph->nodes[i].op))];
    sum += (*costs)[i];
    ++count;
    total += (*costs)[i];
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> ranked(by_op.begin(), by_op.end());
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  fmt::print("  cost ({}): {:.2f}\n", (*cost_model)->name(), total);
  for (const auto& [op, sum_count] : ranked)
    fmt::print("    {:<20} {:>12.2f}  {:5.1f}%  ({} op{})\n", op, sum_count.first,
               total > 0 ? 100 * sum_count.first / total : 0.0, sum_count.second,
               sum_count.second == 1 ? "" : "s");
  return 0;
}

int rules_command(const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "list" && args[0] != "verify")) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  std::vector<std::string> files(args.begin() + 1, args.end());
  if (files.empty()) files = tensor_rule_files();
  TensorLanguage lang;
  ConditionRegistry conditions = tensor_conditions();
  int failed = 0, unverified = 0, verified = 0;
  for (const std::string& file : files) {
    absl::StatusOr<RuleSet> rules = load_rules(file, lang, conditions);
    if (!rules.ok()) return fail(rules.status());
    for (const Rule& rule : rules->rules()) {
      if (args[0] == "list") {
        std::string symmetry;
        for (auto [i, j] : rule.interchangeable) {
          symmetry += symmetry.empty() ? "  interchangeable:" : ",";
          symmetry += fmt::format(" {}~{}", i + 1, j + 1);
        }
        fmt::print("{:<32} {:<6} {:<12} {}{}\n", rule.name, rule.kind(), rule.group, file,
                   symmetry);
        continue;
      }
      RuleVerdict v = verify_rule(rule, lang);
      const char* word = v.outcome == VerifyOutcome::kVerified ? "verified"
                         : v.outcome == VerifyOutcome::kFailed ? "FAILED"
                                                               : "unverified";
      fmt::print("{:<10} {:<32} ({} draws){}{}\n", word, rule.name, v.draws,
                 v.detail.empty() ? "" : ": ", v.detail);
      if (v.outcome == VerifyOutcome::kFailed)
        ++failed;
      else if (v.outcome == VerifyOutcome::kUnverified)
        ++unverified;
      else
        ++verified;
    }
  }
  if (args[0] == "verify") {
    fmt::print("{} verified, {} failed, {} unverified\n", verified, failed, unverified);
    return failed + unverified == 0 ? 0 : 1;
  }
  return 0;
}

int usage_error(std::string_view command, const std::string& what) {
  fmt::print(stderr, "saturn {}: {}\n{}", command, what, kUsage);
  return 2;
}

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
    fmt::print(stderr, "\r  search {:6.1f} s  {:>7} / {} e-nodes  best cost {:.2f} ({:+.2f}%)   ",
               last_, p.nodes, p.max_nodes, best_,
               p.initial_cost > 0 ? 100.0 * (best_ - p.initial_cost) / p.initial_cost : 0.0);
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

// Writes graph.dot (and graph.svg when Graphviz's `dot` is on the PATH).
absl::Status write_dot(const Graph& graph, const std::filesystem::path& dir,
                       const std::string& stem) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(fmt::format("{}: {}", dir.string(), ec.message()));
  const std::filesystem::path dot = dir / (stem + ".dot");
  if (absl::Status s = write_text_file(dot.string(), to_dot(graph)); !s.ok()) return s;
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    const std::string cmd = fmt::format("dot -Tsvg {} -o {}", cli::shell_quote(dot.string()),
                                        cli::shell_quote((dir / (stem + ".svg")).string()));
    if (std::system(cmd.c_str()) != 0)
      return absl::InternalError(fmt::format("{}: graphviz could not render it", dot.string()));
  }
  return absl::OkStatus();
}

// Parses the options of the onnxruntime commands; false on a bad one.
bool runtime_option(const std::vector<std::string>& args, std::size_t& i, cli::RuntimeOptions& o,
                    std::string& json) {
  const std::string& a = args[i];
  if (i + 1 >= args.size()) return false;
  const std::string& v = args[i + 1];
  if (a == "--runs")
    o.runs = flag_value<decltype(o.runs)>("--runs", v);
  else if (a == "--warmup")
    o.warmup = flag_value<decltype(o.warmup)>("--warmup", v);
  else if (a == "--rtol")
    o.rtol = flag_value<decltype(o.rtol)>("--rtol", v);
  else if (a == "--atol")
    o.atol = flag_value<decltype(o.atol)>("--atol", v);
  else if (a == "--seed")
    o.seed = flag_value<decltype(o.seed)>("--seed", v);
  else if (a == "--threads")
    o.threads = flag_value<decltype(o.threads)>("--threads", v);
  else if (a == "--json")
    json = v;
  else
    return false;
  ++i;
  return true;
}

// Runs ORIGINAL and OPTIMIZED in onnxruntime and prints the comparison;
// 0 when the outputs match. An OPTIMIZED whose median speedup is below
// `min_speedup` (when given) is replaced by the ORIGINAL model as
// onnxruntime ran it.
int run_verify(const std::string& original, const Graph& original_graph,
               const std::string& optimized, const Graph& optimized_graph,
               const cli::RuntimeOptions& options, const std::string& json,
               const OnnxImportOptions& onnx, std::optional<double> min_speedup = {}) {
  cli::TempDir dir;
  absl::StatusOr<std::string> a =
      cli::runtime_file(original, original_graph, dir, "original", onnx);
  if (!a.ok()) return fail(a.status());
  absl::StatusOr<std::string> b =
      cli::runtime_file(optimized, optimized_graph, dir, "optimized", onnx);
  if (!b.ok()) return fail(b.status());
  absl::StatusOr<cli::VerifyReport> r = cli::verify_models(*a, *b, options);
  if (!r.ok()) return fail(r.status());
  r->json["original"] = original;
  r->json["optimized"] = optimized;
  fmt::print("verify {} against {}:\n{}", optimized, original, cli::describe(*r));
  if (min_speedup && r->ok && r->speedup < *min_speedup) {
    std::error_code ec;
    std::filesystem::copy_file(*a, optimized, std::filesystem::copy_options::overwrite_existing,
                               ec);
    if (ec)
      return fail(
          absl::InternalError(fmt::format("{}: cannot write: {}", optimized, ec.message())));
    fmt::print(
        "kept the input model: the optimized one ran {:.3f}x as fast (below {:.3f}x); wrote {} "
        "unchanged\n",
        r->speedup, *min_speedup, optimized);
    r->json["kept_input"] = true;
  }
  if (!json.empty()) {
    if (absl::Status s = write_text_file(json, r->json.dump(2) + "\n"); !s.ok()) return fail(s);
  }
  return r->ok ? 0 : 1;
}

int verify_command(const std::vector<std::string>& args, const OnnxImportOptions& onnx) {
  cli::RuntimeOptions options;
  std::string json;
  std::vector<std::string> models;
  try {
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i].starts_with("-")) {
        if (!runtime_option(args, i, options, json))
          return usage_error("verify", "unexpected '" + args[i] + "'");
      } else {
        models.push_back(args[i]);
      }
    }
  } catch (const std::exception& e) {
    return usage_error("verify", e.what());
  }
  if (models.size() != 2) return usage_error("verify", "needs ORIGINAL and OPTIMIZED");
  if (absl::Status s = check_outputs(models, {json}); !s.ok()) return fail(s);
  absl::StatusOr<Graph> a = load_model(models[0], onnx);
  if (!a.ok()) return fail(a.status());
  absl::StatusOr<Graph> b = load_model(models[1], onnx);
  if (!b.ok()) return fail(b.status());
  return run_verify(models[0], *a, models[1], *b, options, json, onnx);
}

int calibrate_command(const std::vector<std::string>& args, const OnnxImportOptions& onnx) {
  cli::CalibrationOptions options;
  std::string out, json;
  std::vector<std::string> models;
  try {
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "-o" && i + 1 < args.size())
        out = args[++i];
      else if (args[i] == "--explore" && i + 1 < args.size())
        options.explore_nodes = flag_value<decltype(options.explore_nodes)>("--explore", args[++i]);
      else if (args[i] == "--passes" && i + 1 < args.size())
        options.passes = flag_value<decltype(options.passes)>("--passes", args[++i]);
      else if (args[i] == "--refresh")
        options.refresh = true;
      else if (args[i].starts_with("-")) {
        // Timing has no tolerances and no JSON report.
        const bool comparison_only =
            args[i] == "--rtol" || args[i] == "--atol" || args[i] == "--json";
        if (comparison_only || !runtime_option(args, i, options.runtime, json))
          return usage_error("calibrate", "unexpected '" + args[i] + "'");
      } else
        models.push_back(args[i]);
    }
  } catch (const std::exception& e) {
    return usage_error("calibrate", e.what());
  }
  if (models.empty() || out.empty())
    return usage_error("calibrate", "needs MODEL... -o COSTS.json");
  if (absl::Status s = check_outputs(models, {out}); !s.ok()) return fail(s);
  std::vector<Graph> graphs;
  for (const std::string& m : models) {
    absl::StatusOr<Graph> g = load_model(m, onnx);
    if (!g.ok()) return fail(g.status());
    graphs.push_back(std::move(*g));
  }
  std::vector<const Graph*> pointers;
  for (const Graph& g : graphs) pointers.push_back(&g);
  const Stopwatch clock;
  absl::StatusOr<cli::CalibrationStats> stats = cli::calibrate(pointers, out, options);
  if (!stats.ok()) return fail(stats.status());
  if (stats->stale > 0)
    fmt::print("{} held {} entries timed another way (an older saturn); measured anew\n", out,
               stats->stale);
  if (stats->foreign > 0)
    fmt::print("{} keeps {}; --refresh times them here\n", out, cli::describe_foreign(*stats));
  fmt::print(
      "{} operator signatures: {} measured, {} already in the table, {} not measurable; wrote {} "
      "({:.1f} s)\n",
      stats->signatures, stats->measured, stats->cached, stats->skipped, out, clock.seconds());
  if (stats->measured > 0) fmt::print("{}\n", cli::describe(stats->correction));
  return 0;
}

int optimize_command(const std::vector<std::string>& args, const OnnxImportOptions& onnx) {
  std::string model, out, report, dot_dir, cost = "roofline";
  bool quiet = false, verify = false;
  std::optional<double> min_speedup;  // --keep-faster, --min-speedup
  std::optional<double> min_gain_percent;
  cli::RuntimeOptions verify_options;
  OptimizeOptions options;
  options.search.threads = 2;
  try {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> const std::string& {
        if (i + 1 >= args.size()) throw std::invalid_argument("missing value after " + a);
        return args[++i];
      };
      if (a == "-o")
        out = value();
      else if (a == "--search") {
        std::optional<Strategy> s = parse_strategy(value());
        if (!s) return usage_error("optimize", "unknown search '" + args[i] + "'");
        options.search.strategy = *s;
      } else if (a == "--budget-nodes")
        options.budget.max_nodes =
            flag_value<decltype(options.budget.max_nodes)>("--budget-nodes", value());
      else if (a == "--budget-mem")
        options.budget.max_bytes =
            flag_value<decltype(options.budget.max_bytes)>("--budget-mem", value());
      else if (a == "--time-limit")
        options.budget.time_limit_seconds =
            flag_value<decltype(options.budget.time_limit_seconds)>("--time-limit", value());
      else if (a == "--cost")
        cost = value();
      else if (a == "--threads")
        options.search.threads = flag_value<decltype(options.search.threads)>("--threads", value());
      else if (a == "--seed")
        options.search.seed = flag_value<decltype(options.search.seed)>("--seed", value());
      else if (a == "--ilp-seconds")
        options.ilp_seconds = flag_value<decltype(options.ilp_seconds)>("--ilp-seconds", value());
      else if (a == "--min-gain")
        min_gain_percent = flag_value<double>("--min-gain", value());
      else if (a == "--report")
        report = value();
      else if (a == "--dot")
        dot_dir = value();
      else if (a == "--quiet")
        quiet = true;
      else if (a == "--verify")
        verify = true;
      else if (a == "--verify-runs")
        verify_options.runs = flag_value<decltype(verify_options.runs)>("--verify-runs", value());
      else if (a == "--keep-faster")
        min_speedup = 1.0;
      else if (a == "--min-speedup")
        min_speedup = flag_value<double>("--min-speedup", value());
      else if (a == "--rules") {
        while (i + 1 < args.size() && !args[i + 1].starts_with("-"))
          options.rule_files.push_back(args[++i]);
        if (options.rule_files.empty()) return usage_error("optimize", "--rules needs files");
      } else if (a.starts_with("-") || !model.empty())
        return usage_error("optimize", "unexpected '" + a + "'");
      else
        model = a;
    }
  } catch (const std::exception& e) {
    return usage_error("optimize", e.what());
  }
  if (model.empty()) return usage_error("optimize", "which model?");
  if (min_gain_percent && !(*min_gain_percent >= 0 && *min_gain_percent < 100))
    return usage_error("optimize", fmt::format("--min-gain needs a percent in [0, 100), got {}",
                                               *min_gain_percent));
  std::vector<std::string> inputs = options.rule_files;
  inputs.push_back(model);
  inputs.push_back(cost_file(cost));
  std::vector<std::string> outputs = {out, report};
  if (!dot_dir.empty()) {
    for (const char* file : {"before.dot", "after.dot", "before.svg", "after.svg"})
      outputs.push_back((std::filesystem::path(dot_dir) / file).string());
  }
  if (absl::Status s = check_outputs(inputs, outputs); !s.ok()) return fail(s);
  if (!out.empty() && !out.ends_with(".onnx") && !out.ends_with(".json"))
    return usage_error("optimize", "-o needs a .onnx or .json file name");
  verify = verify || min_speedup.has_value();
  if (verify && !out.ends_with(".onnx"))
    return usage_error("optimize", "--verify, --keep-faster and --min-speedup need -o OUT.onnx");
  absl::StatusOr<Graph> graph = load_model(model, onnx);
  if (!graph.ok()) return fail(graph.status());
  absl::StatusOr<std::shared_ptr<const CostModel>> cost_model = cost_model_for(cost);
  if (!cost_model.ok()) return fail(cost_model.status());
  options.cost_model = *cost_model;
  // A latency model's per-kernel figures carry errors of a few percent: a
  // smaller predicted gain is not worth a different graph.
  options.min_gain = min_gain_percent.value_or(cost == "opcount" ? 0.0 : 0.5) / 100;
  ProgressLine progress(!quiet && isatty(fileno(stderr)));
  options.on_progress = [&progress](const SearchProgress& p) { progress.update(p); };
  absl::StatusOr<OptimizeResult> r = optimize(*graph, options);
  progress.finish();
  if (!r.ok()) return fail(with_context(r.status(), model));
  if (!out.empty()) {
    if (absl::Status s = save_model(r->graph, out); !s.ok()) return fail(s);
  }
  if (!dot_dir.empty()) {
    for (const auto& [g, stem] : {std::pair{&*graph, "before"}, std::pair{&r->graph, "after"}}) {
      if (absl::Status s = write_dot(*g, dot_dir, stem); !s.ok()) return fail(s);
    }
  }

  if (!quiet) {
    fmt::print(
        "{}: {} search, {} cost: {:.2f} -> {:.2f} ({:.2f}% lower, predicted speedup {:.3f}x)\n",
        graph->name, r->stats.strategy, r->cost_model, r->cost_before, r->cost_after,
        r->improvement_percent(), r->speedup());
    fmt::print("  ops {} -> {}; peak {} e-nodes of {}; stop: {}; extraction {}\n",
               total_ops(*graph), total_ops(r->graph), r->stats.peak_nodes,
               options.budget.max_nodes, r->stats.stop_reason, to_string(r->extraction));
    fmt::print("  weights held {:.1f} MB -> {:.1f} MB (charged beyond the cache: {:.2f})\n",
               r->weight_bytes_before / 1e6, r->weight_bytes_after / 1e6, r->weight_spill);
    fmt::print("  time: rules {:.2f} s, search {:.2f} s, extraction {:.2f} s, total {:.2f} s\n",
               r->times.rules, r->times.search, r->times.extract, r->times.total);
    if (r->kept_input && r->found_cheaper())
      fmt::print(
          "  kept the input: the best graph found costs {:.2f} ({:.3f}% lower, below the "
          "minimum gain of {:.3g}%)\n",
          r->cost_found, 100 * (r->cost_before - r->cost_found) / r->cost_before,
          100 * options.min_gain);
    for (std::size_t i = 0; i < r->rules_applied.size() && i < 8; ++i)
      fmt::print("  {:>6}  {}\n", r->rules_applied[i].count, r->rules_applied[i].name);
    if (!out.empty()) fmt::print("wrote {}\n", out);
    if (!dot_dir.empty()) fmt::print("wrote {}/before.dot and {}/after.dot\n", dot_dir, dot_dir);
  }
  if (!report.empty()) {
    nlohmann::json rules = nlohmann::json::array();
    for (const RuleApplication& a : r->rules_applied)
      rules.push_back({{"rule", a.name}, {"count", a.count}});
    nlohmann::json j = {{"model", graph->name},
                        {"strategy", r->stats.strategy},
                        {"cost_model", r->cost_model},
                        {"cost_before", r->cost_before},
                        {"cost_after", r->cost_after},
                        {"improvement_percent", r->improvement_percent()},
                        {"kept_input", r->kept_input},
                        {"cost_found", r->cost_found},
                        {"min_gain_percent", 100 * options.min_gain},
                        {"ops_before", total_ops(*graph)},
                        {"ops_after", total_ops(r->graph)},
                        {"weight_bytes_before", r->weight_bytes_before},
                        {"weight_bytes_after", r->weight_bytes_after},
                        {"weight_spill", r->weight_spill},
                        {"peak_nodes", r->stats.peak_nodes},
                        {"peak_bytes", r->stats.peak_bytes},
                        {"budget_nodes", options.budget.max_nodes},
                        {"stop_reason", r->stats.stop_reason},
                        {"extraction", std::string(to_string(r->extraction))},
                        {"simulations", r->stats.simulations},
                        {"rules_applied", rules},
                        {"seconds",
                         {{"rules", r->times.rules},
                          {"search", r->times.search},
                          {"extract", r->times.extract},
                          {"total", r->times.total}}}};
    if (absl::Status s = write_text_file(report, j.dump(2) + "\n"); !s.ok()) return fail(s);
  }
  if (verify)
    return run_verify(model, *graph, out, r->graph, verify_options, "", onnx, min_speedup);
  return 0;
}

int env_command(const std::vector<std::string>& args) {
  if (!args.empty()) return usage_error("env", "takes no arguments");
  auto loader = [](const std::string& name) { return load_model(name); };
  return serve_environment(std::cin, std::cout, loader) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    fmt::print(args.empty() ? stderr : stdout, "{}", kUsage);
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  // `saturn COMMAND --help`: the usage of every command, exit 0.
  if (std::find(args.begin(), args.end(), "--help") != args.end() ||
      std::find(args.begin(), args.end(), "-h") != args.end()) {
    fmt::print("{}", kUsage);
    return 0;
  }
  OnnxImportOptions onnx;
  if (std::string error; !take_dims(args, onnx, error)) {
    fmt::print(stderr, "saturn {}: {}\n", command, error);
    return 2;
  }
  // A model whose tensors pass the size limit (tensor::kMaxTensorBytes)
  // may still not fit in this machine's memory.
  try {
    if (command == "zoo") return zoo(args);
    if (command == "check") return check(args, onnx);
    if (command == "info") return info(args, onnx);
    if (command == "rules") return rules_command(args);
    if (command == "optimize") return optimize_command(args, onnx);
    if (command == "verify") return verify_command(args, onnx);
    if (command == "calibrate") return calibrate_command(args, onnx);
    if (command == "env") return env_command(args);
  } catch (const std::bad_alloc&) {
    fmt::print(stderr,
               "saturn {}: out of memory (the model's tensors do not fit in this machine)\n",
               command);
    return 1;
  }
  fmt::print(stderr, "saturn: unknown command '{}'\n{}", command, kUsage);
  return 2;
}

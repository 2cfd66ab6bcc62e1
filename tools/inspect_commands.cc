// The subcommands that look at models and rules: zoo, check, info, rules
// list, rules verify, and env (the search environment over a pipe).
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "saturn/base/cli.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "saturn/base/stopwatch.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "saturn/search/protocol.h"
#include "saturn/rules/parser.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/zoo/zoo.h"
#include "saturn/tools/commands.h"
#include "saturn/tools/model_files.h"

namespace saturn::tools {

using namespace saturn::tensor;

namespace {

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

// One line of op counts; with `eval`, a second with the interpreter's time.
int describe(const Graph& graph, bool eval) {
  fmt::print("{:<14} {:>5} ops  {}\n", graph.name, total_ops(graph), op_summary(graph));
  if (!eval) return 0;
  absl::StatusOr<double> seconds = time_evaluation(graph);
  if (!seconds.ok()) return fail(with_context(seconds.status(), graph.name));
  fmt::print("{:<14} evaluated in {:.2f} s\n", "", *seconds);
  return 0;
}

struct ZooOptions {
  std::vector<std::string> names;
  bool eval = false;
  std::string save;
};

int run_zoo(const CLI::App& app, ZooOptions& o) {
  if (o.names.empty()) {
    for (const ZooModel& m : zoo_models()) o.names.emplace_back(m.name);
  }
  if (!o.save.empty() && o.names.size() != 1)
    return usage_error(app, "--save needs exactly one model name");
  for (const std::string& name : o.names) {
    absl::StatusOr<Graph> graph = build_zoo_model(name);
    if (!graph.ok()) return fail(graph.status());
    if (int rc = describe(*graph, o.eval); rc != 0) return rc;
    if (!o.save.empty()) {
      if (absl::Status s = save_model(*graph, o.save); !s.ok()) return fail(s);
      fmt::print("wrote {}\n", o.save);
    }
  }
  return 0;
}

// The cost of `graph` under `cost_model` by operator type, dearest first.
void print_cost_by_op(const Graph& graph, const CostModel& cost_model,
                      const std::vector<double>& costs) {
  std::map<std::string, std::pair<double, int>> by_op;
  double total = 0;
  for (int i = 0; i < graph.size(); ++i) {
    if (costs[i] == 0) continue;
    auto& [sum, count] = by_op[std::string(op_name(graph.nodes[i].op))];
    sum += costs[i];
    ++count;
    total += costs[i];
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> ranked(by_op.begin(), by_op.end());
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  fmt::print("  cost ({}): {:.2f}\n", cost_model.name(), total);
  for (const auto& [op, sum_count] : ranked)
    fmt::print("    {:<20} {:>12.2f}  {:5.1f}%  ({} op{})\n", op, sum_count.first,
               total > 0 ? 100 * sum_count.first / total : 0.0, sum_count.second,
               sum_count.second == 1 ? "" : "s");
}

// "  as [batch,seq,64]" for an input or output with symbolic axes.
std::string symbolic_shape(const Graph& graph, const std::string& name, const ValueType& type) {
  auto it = graph.symbols.axes.find(name);
  if (it == graph.symbols.axes.end() || type.is_tuple) return "";
  std::vector<std::string> axes;
  for (std::size_t a = 0; a < type.tensor().rank(); ++a) {
    const bool named = a < it->second.size() && !it->second[a].empty();
    axes.push_back(named ? it->second[a] : fmt::format("{}", type.tensor().dims[a]));
  }
  return fmt::format("  as [{}]", fmt::join(axes, ","));
}

// Inputs, outputs, weights and opaque operators of `graph`.
void print_interface(const Graph& graph, const std::vector<ValueType>& types) {
  if (!graph.symbols.empty()) {
    std::vector<std::string> sizes;
    for (const auto& [symbol, size] : graph.symbols.sizes)
      sizes.push_back(fmt::format("{}={}", symbol, size));
    fmt::print("  symbolic dimensions (sized for costing): {}\n", fmt::join(sizes, ", "));
  }
  std::int64_t weight_bytes = 0, weights = 0;
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (n.op == Op::kInput) {
      const std::string& name = *n.attributes.get_string("name");
      fmt::print("  input  {:<24} {}{}{}\n", name, to_string(types[i]),
                 symbolic_shape(graph, name, types[i]),
                 graph.input_defaults.contains(name) ? "  (has a default)" : "");
    }
    if (n.op == Op::kWeight) {
      ++weights;
      weight_bytes += types[i].tensor().num_bytes();
    }
  }
  for (const GraphOutput& o : graph.outputs)
    fmt::print("  output {:<24} {}{}\n", o.name, to_string(types[o.node]),
               symbolic_shape(graph, o.name, types[o.node]));
  fmt::print("  weights: {} tensors, {:.1f} MB\n", weights, weight_bytes / 1e6);
  fmt::print("  ops: {}\n", op_summary(graph));
  if (!graph.folded_at_import.empty())
    fmt::print("  computed once at import, on every run by the source's runtime: {}\n",
               tensor::folded_work_summary(graph));
  for (const auto& [op_type, reasons] : tensor::opaque_op_reasons(graph)) {
    int count = 0;
    std::vector<std::string> why;
    for (const auto& [reason, n] : reasons) {
      count += n;
      why.push_back(reasons.size() == 1 ? reason : fmt::format("{} x{}", reason, n));
    }
    fmt::print("  kept as opaque: {} x{}: {}\n", op_type, count, fmt::join(why, "; "));
  }
}

struct InfoOptions {
  std::string model, cost = "roofline";
  OnnxImportOptions onnx;
};

int run_info(const InfoOptions& o) {
  absl::StatusOr<Graph> graph = load_model(o.model, o.onnx);
  if (!graph.ok()) return fail(graph.status());
  absl::StatusOr<std::vector<ValueType>> types = infer_types(*graph);
  if (!types.ok()) return fail(with_context(types.status(), o.model));
  absl::StatusOr<std::shared_ptr<const CostModel>> cost_model = cost_model_for(o.cost);
  if (!cost_model.ok()) return fail(cost_model.status());
  fmt::print("{}: {} ops\n", graph->name, total_ops(*graph));
  if (!graph->opsets.empty()) {
    std::string opsets;
    for (const auto& [domain, version] : graph->opsets)
      opsets += fmt::format(" {}:{}", domain.empty() ? "ai.onnx" : domain, version);
    fmt::print("  opsets:{}\n", opsets);
  }
  print_interface(*graph, *types);
  absl::StatusOr<std::vector<double>> costs = graph_node_costs(**cost_model, *graph);
  if (!costs.ok()) return fail(with_context(costs.status(), o.model));
  print_cost_by_op(*graph, **cost_model, *costs);
  return 0;
}

// `saturn rules list` and `saturn rules verify` over `files` (the shipped
// rules when empty).
struct RulesOptions {
  std::vector<std::string> files;
  VerifyOptions verify;
  bool coverage = false;
};

int run_rules(bool verify, RulesOptions o) {
  // The files named, or the shipped ones (compiled in), as (name, text).
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& file : o.files) {
    absl::StatusOr<std::string> text = read_text_file(file);
    if (!text.ok()) return fail(text.status());
    files.emplace_back(file, *std::move(text));
  }
  if (o.files.empty()) {
    for (const EmbeddedFile& f : shipped_tensor_rules()) files.emplace_back(f.name, f.text);
  }
  TensorLanguage lang;
  ConditionRegistry conditions = tensor_conditions();
  int failed = 0, unverified = 0, verified = 0;
  for (const auto& [file, text] : files) {
    absl::StatusOr<RuleSet> rules = parse_rules(text, file, lang, conditions);
    if (!rules.ok()) return fail(rules.status());
    for (const Rule& rule : rules->rules()) {
      if (!verify) {
        std::string symmetry;
        for (auto [i, j] : rule.interchangeable) {
          symmetry += symmetry.empty() ? "  interchangeable:" : ",";
          symmetry += fmt::format(" {}~{}", i + 1, j + 1);
        }
        fmt::print("{:<32} {:<6} {:<12} {}{}\n", rule.name, rule.kind(), rule.group, file,
                   symmetry);
        continue;
      }
      RuleVerdict v = verify_rule(rule, lang, o.verify);
      const char* word = v.outcome == VerifyOutcome::kVerified ? "verified"
                         : v.outcome == VerifyOutcome::kFailed ? "FAILED"
                                                               : "unverified";
      fmt::print("{:<10} {:<32} ({} draws){}{}\n", word, rule.name, v.draws,
                 v.detail.empty() ? "" : ": ", v.detail);
      if (o.coverage) fmt::print("           {}\n", v.coverage);
      int& tally = v.outcome == VerifyOutcome::kFailed       ? failed
                   : v.outcome == VerifyOutcome::kUnverified ? unverified
                                                             : verified;
      ++tally;
    }
  }
  if (!verify) return 0;
  fmt::print("{} verified, {} failed, {} unverified\n", verified, failed, unverified);
  return failed + unverified == 0 ? 0 : 1;
}

}  // namespace

Command add_zoo_command(CLI::App& program) {
  auto o = std::make_shared<ZooOptions>();
  CLI::App* app = program.add_subcommand(
      "zoo", "List the built-in models with their op counts, or write one as a model file");
  app->add_option("NAME", o->names, "zoo models (default: all)");
  app->add_flag("--eval", o->eval, "also run each in the reference interpreter and time it");
  app->add_option("--save", o->save, "write the one model named to OUT (.json or .onnx)");
  return {app, [app, o] { return run_zoo(*app, *o); }};
}

Command add_check_command(CLI::App& program) {
  struct Options {
    std::string model;
    bool eval = false;
    OnnxImportOptions onnx;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = program.add_subcommand(
      "check", "Load and type-check a model, print its op counts (and run it with --eval)");
  app->add_option("MODEL", o->model, "an ONNX file, a saturn JSON file or a zoo model name")
      ->required();
  app->add_flag("--eval", o->eval, "run the model in the reference interpreter and time it");
  add_dim_option(*app, o->onnx.dims);
  return {app, [o] {
            absl::StatusOr<Graph> graph = load_model(o->model, o->onnx);
            if (!graph.ok()) return fail(graph.status());
            return describe(*graph, o->eval);
          }};
}

Command add_info_command(CLI::App& program) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* app = program.add_subcommand(
      "info", "Inputs, outputs, opsets, ops by type, weights, and the cost by op type");
  app->add_option("MODEL", o->model, "an ONNX file, a saturn JSON file or a zoo model name")
      ->required();
  app->add_option("--cost", o->cost,
                  "opcount | roofline | roofline:PROFILE | measured:FILE (default roofline)");
  add_dim_option(*app, o->onnx.dims);
  return {app, [o] { return run_info(*o); }};
}

std::vector<Command> add_rules_commands(CLI::App& program) {
  CLI::App* rules = program.add_subcommand("rules", "List, verify or import rule files");
  rules->require_subcommand(1);
  std::vector<Command> commands;
  for (const bool verify : {false, true}) {
    auto o = std::make_shared<RulesOptions>();
    CLI::App* app = rules->add_subcommand(
        verify ? "verify" : "list",
        verify ? "Check each rule's soundness on random shapes and values; exit 1 if any fails"
               : "Each rule's name, kind, group, file and interchangeable patterns");
    app->add_option("FILE", o->files, "rule files (default: the shipped tensor rules)");
    if (verify) {
      app->add_option("--seed", o->verify.seed, "the draws' random seed (default 1)");
      app->add_option("--draws", o->verify.draws, "successful draws per rule (default 50)")
          ->check(CLI::Range(1, 100'000));
      app->add_flag("--coverage", o->coverage,
                    "also say where each rule's draws came from and what its conditions refused");
    }
    commands.push_back({app, [verify, o] { return run_rules(verify, *o); }});
  }
  commands.push_back(add_rules_import_command(*rules));
  return commands;
}

Command add_env_command(CLI::App& program) {
  CLI::App* app = program.add_subcommand(
      "env",
      "Serve the search environment: JSON requests on stdin, one per line (docs/env-protocol.md)");
  return {app, [] {
            auto loader = [](const std::string& name) { return load_model(name); };
            return serve_environment(std::cin, std::cout, loader) == 0 ? 0 : 1;
          }};
}

}  // namespace saturn::tools

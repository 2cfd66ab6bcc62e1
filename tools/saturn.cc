// The saturn command line.
//
//   saturn zoo                      list the zoo models with their op counts
//   saturn zoo --eval [NAME...]     also run them in the reference interpreter
//   saturn zoo NAME --save OUT.json write a zoo model in saturn's JSON format
//   saturn check MODEL.json         load, type-check, count ops and evaluate a model
//   saturn rules list [FILE...]     each rule's name, kind and group (default: the shipped rules)
//   saturn rules verify [FILE...]   check each rule's soundness on random shapes and values
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "egraph/status.h"
#include "fmt/format.h"
#include "rules/parser.h"
#include "rules/tensor/tensor_rules.h"
#include "tensor/interpreter.h"
#include "tensor/json_model.h"
#include "tensor/zoo/zoo.h"

namespace {

using namespace saturn;
using namespace saturn::tensor;

constexpr std::string_view kUsage = R"(usage:
  saturn zoo [--eval] [NAME...]      list zoo models (op counts; --eval: interpreter time)
  saturn zoo NAME --save OUT.json    write a zoo model as saturn JSON
  saturn check MODEL.json [--eval]   load and type-check a JSON model, print its op counts
  saturn rules list [FILE...]        list rules: name, kind, group (default: the shipped tensor rules)
  saturn rules verify [FILE...]      verify rules on random shapes and values; non-zero exit if any fails
)";

int fail(const absl::Status& status) {
  fmt::print(stderr, "saturn: {}\n", message(status));
  return 1;
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
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<Tensor>> out = evaluate(graph, inputs);
  if (!out.ok()) return out.status();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
      if (absl::Status s = save_json_model(*graph, save); !s.ok()) return fail(s);
      fmt::print("wrote {}\n", save);
    }
  }
  return 0;
}

int check(const std::vector<std::string>& args) {
  if (args.empty() || args.size() > 2 || (args.size() == 2 && args[1] != "--eval")) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  absl::StatusOr<Graph> graph = load_json_model(args[0]);
  if (!graph.ok()) return fail(graph.status());
  return describe(*graph, args.size() == 2);
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
        fmt::print("{:<32} {:<6} {:<12} {}\n", rule.name, rule.kind(), rule.group, file);
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

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    fmt::print(args.empty() ? stderr : stdout, "{}", kUsage);
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "zoo") return zoo(args);
  if (command == "check") return check(args);
  if (command == "rules") return rules_command(args);
  fmt::print(stderr, "saturn: unknown command '{}'\n{}", command, kUsage);
  return 2;
}

#include "saturn/search/protocol.h"

#include <istream>
#include <memory>
#include <ostream>

#include "saturn/base/status.h"
#include "fmt/format.h"
#include "saturn/search/environment.h"
#include "nlohmann/json.hpp"
#include "saturn/rules/tensor/rule_check.h"
#include "saturn/rules/tensor/tensor_rules.h"

namespace saturn {

namespace {

using nlohmann::json;

// Everything a reset creates; the environment refers to the rest.
struct Session {
  tensor::Graph graph;
  tensor::TensorLanguage language;
  ConditionRegistry conditions = tensor_conditions();
  RuleSet rules;
  std::shared_ptr<const CostModel> cost_model;
  std::unique_ptr<Environment> env;
};

json observation_json(Environment& env) {
  Observation o = env.observe();
  json ops = json::object();
  for (std::size_t i = 0; i < o.op_counts.size(); ++i) {
    if (o.op_counts[i] > 0)
      ops[std::string(tensor::op_name(static_cast<tensor::Op>(i)))] = o.op_counts[i];
  }
  return {
      {"op_counts", ops}, {"nodes", o.nodes},     {"classes", o.classes},
      {"bytes", o.bytes}, {"cost", o.cost},       {"initial_cost", o.initial_cost},
      {"steps", o.steps}, {"seconds", o.seconds}, {"budget_nodes", env.config().budget.max_nodes}};
}

absl::StatusOr<std::unique_ptr<Session>> reset(const json& request, const ModelLoader& load) {
  auto session = std::make_unique<Session>();
  if (!request.contains("model") || !request["model"].is_string())
    return absl::InvalidArgumentError("reset needs \"model\" (a zoo name or a model file)");
  absl::StatusOr<tensor::Graph> graph = load(request["model"].get<std::string>());
  if (!graph.ok()) return graph.status();
  session->graph = std::move(*graph);

  std::vector<std::string> files = request.value("rules", std::vector<std::string>{});
  if (!files.empty() && !request.value("unverified_rules", false)) {
    absl::StatusOr<RuleFileCheck> check = check_rule_files(
        files, session->language, session->conditions, default_rule_cache_dir());
    if (!check.ok()) return check.status();
  }
  absl::StatusOr<RuleSet> rules =
      files.empty() ? load_tensor_rules(session->language, session->conditions)
                    : load_tensor_rule_files(files, session->language, session->conditions);
  if (!rules.ok()) return rules.status();
  session->rules = std::move(*rules);

  absl::StatusOr<std::shared_ptr<const CostModel>> cost =
      cost_model_by_name(request.value("cost", std::string(kDefaultCost)));
  if (!cost.ok()) return cost.status();
  session->cost_model = *cost;

  SearchBudget budget;
  budget.max_nodes = request.value("budget_nodes", budget.max_nodes);
  budget.max_bytes = request.value("budget_bytes", budget.max_bytes);
  budget.time_limit_seconds = request.value("time_limit", budget.time_limit_seconds);
  EnvironmentConfig config{.graph = &session->graph,
                           .rules = &session->rules,
                           .cost_model = session->cost_model.get(),
                           .budget = budget};
  absl::StatusOr<std::unique_ptr<Environment>> env = Environment::create(config);
  if (!env.ok()) return env.status();
  session->env = std::move(*env);
  return session;
}

// Answers one request; throws nlohmann::json errors on mistyped fields.
absl::StatusOr<json> handle(const json& request, std::unique_ptr<Session>& session,
                            const ModelLoader& load) {
  if (!request.is_object() || !request.contains("cmd") || !request["cmd"].is_string())
    return absl::InvalidArgumentError("a request is an object with a \"cmd\" string");
  const std::string cmd = request["cmd"];
  if (cmd == "reset") {
    absl::StatusOr<std::unique_ptr<Session>> fresh = reset(request, load);
    if (!fresh.ok()) return fresh.status();
    session = std::move(*fresh);
    Environment& env = *session->env;
    return json{{"ok", true},
                {"num_actions", env.num_rules() + 1},
                {"stop_action", env.stop_action()},
                {"observation", observation_json(env)}};
  }
  if (session == nullptr)
    return absl::FailedPreconditionError(fmt::format("'{}' before the first reset", cmd));
  Environment& env = *session->env;
  if (cmd == "rules") {
    json rules = json::array();
    for (std::size_t r = 0; r < env.num_rules(); ++r)
      rules.push_back({{"action", r},
                       {"name", env.rule(r).name},
                       {"group", env.rule(r).group},
                       {"kind", env.rule(r).kind()}});
    return json{{"ok", true}, {"rules", rules}, {"stop_action", env.stop_action()}};
  }
  if (cmd == "actions") {
    json legal = json::array();
    for (std::size_t a : env.legal_actions())
      legal.push_back(
          {{"action", a}, {"matches", a == env.stop_action() ? 0 : env.matches(a).size()}});
    return json{{"ok", true}, {"legal", legal}};
  }
  if (cmd == "observe") return json{{"ok", true}, {"observation", observation_json(env)}};
  if (cmd == "step") {
    if (!request.contains("action") || !request["action"].is_number_unsigned())
      return absl::InvalidArgumentError("step needs \"action\", a number");
    const std::size_t action = request["action"];
    if (action > env.stop_action())
      return absl::OutOfRangeError(
          fmt::format("action {} is out of range (0 to {})", action, env.stop_action()));
    std::vector<std::size_t> subset = request.value("matches", std::vector<std::size_t>{});
    if (!subset.empty() && action == env.stop_action())
      return absl::InvalidArgumentError("the stop action takes no matches");
    if (!subset.empty()) {
      const std::size_t available = env.matches(action).size();
      for (std::size_t m : subset)
        if (m >= available)
          return absl::OutOfRangeError(
              fmt::format("match {} is out of range: rule '{}' has {} matches", m,
                          env.rule(action).name, available));
    }
    StepResult r = env.step(action, subset);
    return json{{"ok", true},
                {"reward", r.reward},
                {"done", r.done},
                {"applied", r.applied},
                {"filtered", r.filtered},
                {"conflicts", r.conflicts},
                {"observation", observation_json(env)}};
  }
  return absl::InvalidArgumentError(
      fmt::format("unknown cmd '{}' (reset, rules, actions, step, observe, quit)", cmd));
}

}  // namespace

int serve_environment(std::istream& in, std::ostream& out, const ModelLoader& load_model) {
  std::unique_ptr<Session> session;
  int failures = 0;
  std::size_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    absl::StatusOr<json> response = absl::UnknownError("");
    json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (request.is_discarded()) {
      response = absl::InvalidArgumentError("not valid JSON");
    } else if (request.is_object() && request.contains("cmd") && request["cmd"] == "quit") {
      out << json{{"ok", true}}.dump() << std::endl;
      break;
    } else {
      try {
        response = handle(request, session, load_model);
      } catch (const json::exception& e) {
        response =
            absl::InvalidArgumentError(fmt::format("a field has the wrong type: {}", e.what()));
      }
    }
    if (!response.ok()) {
      ++failures;
      response =
          json{{"ok", false},
               {"error", fmt::format("line {}: {}", line_number, message(response.status()))}};
    }
    out << response->dump() << std::endl;
  }
  return failures;
}

}  // namespace saturn

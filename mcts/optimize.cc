#include "mcts/optimize.h"
#include "egraph/stopwatch.h"

#include <algorithm>

#include "rules/tensor/tensor_rules.h"

namespace saturn {

absl::StatusOr<OptimizeResult> optimize(const tensor::Graph& graph,
                                        const OptimizeOptions& options) {
  const Stopwatch total;
  OptimizeResult result;

  std::shared_ptr<const CostModel> cost_model = options.cost_model;
  if (cost_model == nullptr) {
    absl::StatusOr<std::shared_ptr<const CostModel>> fallback = cost_model_by_name("roofline");
    if (!fallback.ok()) return fallback.status();
    cost_model = *fallback;
  }
  result.cost_model = std::string(cost_model->name());

  // Rules refer to the registry's conditions: both live for the call.
  tensor::TensorLanguage language;
  ConditionRegistry conditions = tensor_conditions();
  absl::StatusOr<RuleSet> rules =
      options.rule_files.empty() ? load_tensor_rules(language, conditions)
                                 : load_tensor_rule_files(options.rule_files, language, conditions);
  if (!rules.ok()) return rules.status();
  result.num_rules = rules->size();
  result.times.rules = total.seconds();

  Stopwatch phase;
  EnvironmentConfig config{.graph = &graph,
                           .rules = &*rules,
                           .cost_model = cost_model.get(),
                           .budget = options.budget,
                           .filter_cycles = true,
                           .cost_options = options.cost_options,
                           .on_progress = options.on_progress};
  absl::StatusOr<SearchOutcome> outcome = run_search(config, options.search);
  if (!outcome.ok()) return outcome.status();
  result.times.search = phase.seconds();
  result.stats = std::move(outcome->stats);
  Environment& env = *outcome->env;
  result.cost_before = outcome->input_cost;

  phase.restart();
  ExtractionResult extraction;
  absl::StatusOr<tensor::Graph> best =
      options.ilp_seconds > 0
          ? env.extract_graph(IlpExtractor(IlpOptions{.time_limit_seconds = options.ilp_seconds}),
                              &extraction)
          : env.extract_graph(DagGreedyExtractor(), &extraction);
  if (!best.ok()) return best.status();
  result.times.extract = phase.seconds();
  result.extraction = extraction.status;
  // Only a strictly cheaper graph replaces the input: an equal-cost one is a
  // rearrangement (operands commuted, sums re-associated) that the cost
  // model cannot tell apart but a runtime's own pattern fusions can. And a
  // heuristic extraction can miss the input graph itself: never return
  // something worse than what came in.
  if (extraction.dag_cost < result.cost_before * (1 - 1e-9)) {
    result.graph = std::move(*best);
    result.cost_after = extraction.dag_cost;
  } else {
    result.graph = graph;
    result.cost_after = result.cost_before;
  }

  for (std::size_t r = 0; r < result.stats.rule_applications.size(); ++r) {
    if (result.stats.rule_applications[r] > 0)
      result.rules_applied.push_back({(*rules)[r].name, result.stats.rule_applications[r]});
  }
  std::stable_sort(
      result.rules_applied.begin(), result.rules_applied.end(),
      [](const RuleApplication& a, const RuleApplication& b) { return a.count > b.count; });
  result.times.total = total.seconds();
  return result;
}

}  // namespace saturn

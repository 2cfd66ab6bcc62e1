// Optimizes a zoo model with saturn's library API and checks that the result
// computes the same outputs.
//
//   build/examples/optimize_model [MODEL] [mcts|greedy|default|taso]
#include <string>

#include "fmt/format.h"
#include "saturn/saturn.h"

using namespace saturn;

int main(int argc, char** argv) {
  absl::StatusOr<tensor::Graph> graph = tensor::build_zoo_model(argc > 1 ? argv[1] : "squeezenet");
  OptimizeOptions options;
  options.search.strategy = parse_strategy(argc > 2 ? argv[2] : "mcts").value_or(Strategy::kMcts);
  options.search.threads = 2;
  options.budget.max_nodes = 2000;
  if (!graph.ok()) return fmt::print(stderr, "{}\n", graph.status().ToString()), 1;
  absl::StatusOr<OptimizeResult> r = optimize(*graph, options);
  if (!r.ok()) return fmt::print(stderr, "{}\n", r.status().ToString()), 1;

  tensor::Inputs inputs = tensor::random_inputs(*graph, 7);
  absl::StatusOr<std::vector<tensor::Tensor>> before = tensor::evaluate(*graph, inputs);
  absl::StatusOr<std::vector<tensor::Tensor>> after = tensor::evaluate(r->graph, inputs);
  bool same = before.ok() && after.ok();
  for (std::size_t i = 0; same && i < before->size(); ++i)
    same = tensor::max_error_ratio((*after)[i], (*before)[i], 1e-4, 1e-5) <= 1;
  fmt::print(
      "{} ({}): cost {:.1f} -> {:.1f} us ({:.1f}% lower), {} e-nodes, {} rules applied, "
      "search {:.2f} s, extraction {:.2f} s ({}); outputs {}\n",
      graph->name, r->stats.strategy, r->cost_before, r->cost_after, r->improvement_percent(),
      r->stats.peak_nodes, r->rules_applied.size(), r->times.search, r->times.extract,
      to_string(r->extraction), same ? "match" : "DIFFER");
  return same ? 0 : 1;
}

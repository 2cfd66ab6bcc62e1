// An extraction problem in flat arrays: classes, their candidate nodes (each
// with a cost and child classes) and the root classes. Built from an e-graph
// and a cost function, or from an egraph-serialize file; every extractor
// works on it.
//
//   ExtractionProblem p = problem_from_egraph(egraph, roots, [](Id, const ENode&) { return 1.0; });
//   Selection s = DagGreedyExtractor().extract(p).selection;
//   absl::StatusOr<double> cost = check_selection(p, s);   // DAG cost, or why invalid
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/egraph/egraph.h"
#include "saturn/egraph/serialize.h"

namespace saturn {

struct ExtractionProblem {
  // Nodes are grouped by class: class c owns nodes [class_start[c], class_start[c + 1]).
  std::vector<std::uint32_t> class_start{0};
  std::vector<std::uint32_t> node_class;
  std::vector<double> node_cost;
  // Node n's child classes are child_class[child_start[n] .. child_start[n + 1]).
  std::vector<std::uint32_t> child_start{0};
  std::vector<std::uint32_t> child_class;
  std::vector<std::uint32_t> roots;
  // The e-graph class of each class (empty when built from a file).
  std::vector<Id> class_ids;

  std::size_t num_classes() const { return class_start.size() - 1; }
  std::size_t num_nodes() const { return node_class.size(); }
  std::span<const std::uint32_t> children(std::uint32_t node) const {
    return {child_class.data() + child_start[node], child_start[node + 1] - child_start[node]};
  }
};

// The problem of a rebuilt e-graph: its canonical classes, each node costed
// by `cost(class, node)`. Node k of class c is the e-graph's nodes(id)[k].
ExtractionProblem problem_from_egraph(const EGraph& egraph, std::span<const Id> roots,
                                      const std::function<double(Id, const ENode&)>& cost);
// The problem of an egraph-serialize file, with the file's node costs.
ExtractionProblem problem_from_serialized(const SerializedEGraph& serialized);

// A choice of one node per class; classes not needed by the roots may stay
// unchosen (-1). Node indices are global (see ExtractionProblem).
struct Selection {
  std::vector<std::int32_t> choice;
};

// The selection's DAG cost (each class reachable from the roots counted once)
// if every root is chosen, every chosen node's children are chosen and the
// chosen graph is acyclic; otherwise an error naming the class at fault.
absl::StatusOr<double> check_selection(const ExtractionProblem& problem,
                                       const Selection& selection);
// The tree cost: a class is paid once per use. Infinite on a cycle.
double tree_cost(const ExtractionProblem& problem, const Selection& selection);
// Keeps only the choices reachable from the roots (others become -1).
Selection prune_to_roots(const ExtractionProblem& problem, const Selection& selection);
// The three above in one walk over the chosen graph: the pruned selection
// (as far as the walk got), check_selection's status and cost, and the tree
// cost (both infinite when the status is an error).
struct SelectionSummary {
  Selection pruned;
  absl::Status status;
  double dag_cost = 0;
  double tree_cost = 0;
};
SelectionSummary summarize_selection(const ExtractionProblem& problem, const Selection& selection);
// Node n's child classes that are not decided up front (free[c] < 0 for
// those), sorted and distinct.
std::vector<std::uint32_t> needed_children(const ExtractionProblem& problem, std::uint32_t n,
                                           std::span<const std::int32_t> free);

// The strongly connected components of a class graph (`edges[c]` lists the
// classes c points to): the component of each class.
std::vector<int> strongly_connected_components(
    const std::vector<std::vector<std::uint32_t>>& edges);
// How many classes lie on a cycle of the problem (through any nodes); zero
// for an acyclic e-graph.
std::size_t classes_on_cycles(const ExtractionProblem& problem);

// For a problem built by problem_from_egraph: the chosen e-node of each
// e-graph class (null where nothing is chosen). The e-graph must not change
// while the function is in use.
std::function<const ENode*(Id)> chosen_enodes(const EGraph& egraph,
                                              const ExtractionProblem& problem,
                                              const Selection& selection);

}  // namespace saturn

// Extractors: pick one node per needed class so that the chosen graph is
// cheapest. Three are provided:
//
//   TreeExtractor      bottom-up, optimal for tree cost (a shared class is
//                      paid once per use); fast, the classic e-graph extractor
//   DagGreedyExtractor sharing-aware greedy: a candidate's cost is the cost of
//                      the union of its children's sub-DAGs (each class once),
//                      in the spirit of extraction-gym's faster-greedy-dag
//   IlpExtractor       exact: a CBC integer program over the nodes with lazy
//                      cycle cuts, warm-started from the DAG greedy result;
//                      on cyclic e-graphs that defeat its LP, a derivation
//                      search (derivation_search.h) bounds the optimum
//
//   ExtractionResult r = IlpExtractor(IlpOptions{.time_limit_seconds = 10}).extract(problem);
//   if (r.status == ExtractionStatus::kOptimal) ...
//
// Every result is acyclic and passes check_selection.
#pragma once

#include <string>
#include <string_view>

#include "saturn/extract/problem.h"

namespace saturn {

enum class ExtractionStatus : std::uint8_t {
  kHeuristic,   // a greedy extractor's answer (no optimality claim)
  kOptimal,     // proven optimal (ILP)
  kFeasible,    // the ILP stopped at its time limit with a gap
  kTimedOut,    // the ILP found nothing better than its warm start in time
  kNoSolution,  // some root class cannot be extracted (every candidate is cyclic)
};
std::string_view to_string(ExtractionStatus status);

struct ExtractionResult {
  Selection selection;
  double dag_cost = 0;
  double tree_cost = 0;
  double seconds = 0;
  ExtractionStatus status = ExtractionStatus::kHeuristic;
  double lower_bound = 0;         // ILP: best proven bound on the DAG cost
  int cycle_cuts = 0;             // ILP: cuts added to break cycles (up front and lazily)
  int fixed_nodes = 0;            // ILP: nodes dropped by reduced-cost fixing
  int search_parts = 0;           // ILP: parts the derivation search split the problem into
  std::size_t search_states = 0;  // ILP: states the derivation search reached
};

class Extractor {
 public:
  virtual ~Extractor() = default;
  virtual std::string_view name() const = 0;
  virtual ExtractionResult extract(const ExtractionProblem& problem) const = 0;
};

class TreeExtractor final : public Extractor {
 public:
  std::string_view name() const override { return "tree"; }
  ExtractionResult extract(const ExtractionProblem& problem) const override;
};

struct DagGreedyOptions {
  // After the greedy pass: how many trials of shared classes (a class several
  // chosen classes could read, such as the Split of a merged Q/K/V
  // projection, which pays off only when all readers switch together); a
  // trial prepays a batch of such classes and reruns the greedy pass;
  // 0 turns the improvement off.
  int sharing_trials = 16;
  // The improvement stops after this many trials of a single class in a row
  // that did not lower the cost (classes are offered best estimated gain
  // first, so the promising ones come early); 0: no such stop.
  int sharing_patience = 2;
  // Classes whose estimated gain is at most this fraction of the cost are
  // not tried (on TENSAT's ResNet-50 the last 0.1% took two thirds of the
  // time and none of it paid).
  double sharing_min_gain = 0.001;
};

class DagGreedyExtractor final : public Extractor {
 public:
  explicit DagGreedyExtractor(DagGreedyOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "dag-greedy"; }
  // Returns the better (by DAG cost) of its own answer and the tree
  // extractor's, so it is never worse than TreeExtractor; then tries the
  // sharing improvement.
  ExtractionResult extract(const ExtractionProblem& problem) const override;

 private:
  DagGreedyOptions options_;
};

struct IlpOptions {
  double time_limit_seconds = 60;  // default 60 s, over all cycle-cut rounds
  bool warm_start = true;          // start CBC from the DAG greedy answer
  // Cycles of up to this many classes get a cut before solving (0: none;
  // longer cycles are still excluded, by order variables and lazy cuts).
  int cycle_cut_length = 4;
  // Rounds of reduced-cost fixing before the search (0: none): nodes that
  // the LP relaxation shows cannot beat the warm start leave the problem,
  // and the rest is formulated again.
  int reduced_cost_rounds = 8;
  // On e-graphs with cycles where the LP relaxation stays more than
  // search_min_gap below the warm start, a derivation search
  // (extract/derivation_search.h) runs before CBC for up to search_share of
  // the time left (0: never). It
  // counts node costs below search_resolution times the warm start's cost
  // as zero; when its bound then leaves a gap of at most that fraction, CBC
  // is not started and the result is reported feasible with that bound.
  double search_share = 0.25;       // default a quarter of the time left
  double search_resolution = 1e-4;  // default 0.01%
  double search_min_gap = 0.01;     // default 1%
};

class IlpExtractor final : public Extractor {
 public:
  explicit IlpExtractor(IlpOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "ilp"; }
  // Never returns a selection worse than its warm start.
  ExtractionResult extract(const ExtractionProblem& problem) const override;

 private:
  IlpOptions options_;
};

}  // namespace saturn

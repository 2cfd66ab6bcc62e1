// The search environment: a tensor graph in an e-graph that grows one rule
// application at a time, under a budget of e-nodes, bytes and wall time.
// Every strategy (MCTS, greedy saturation, the fixed pass order, TASO-style
// search) and outside agents (over the JSON protocol, see protocol.h) drive
// the same interface, in the manner of CompilerGym / XLA Gym:
//
//   EnvironmentConfig config{.graph = &g, .rules = &rules, .cost_model = &roofline,
//                            .budget = {.max_nodes = 2000}};
//   std::unique_ptr<Environment> env = *Environment::create(config);
//   for (std::size_t a : env->legal_actions()) ...
//   StepResult r = env->step(action);   // r.reward: cost reduction / initial cost
//   if (r.done) ...
//   env->reset();                       // back to the input graph
//
// An action is a rule index (apply the rule to all its current matches, or to
// a chosen subset) or `stop_action()`. The cost of a state is the DAG cost of
// the sharing-aware greedy extraction, computed when first asked for and
// cached per state.
//
// `checkpoint()` / `restore()` use the e-graph's undo trail: a search explores
// a line of actions and returns without copying the e-graph.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/costmodel/cost_model.h"
#include "saturn/egraph/egraph.h"
#include "saturn/base/stopwatch.h"
#include "saturn/extract/extractor.h"
#include "saturn/search/class_reach.h"
#include "saturn/search/defaults.h"
#include "saturn/rules/rewrite.h"
#include "saturn/rules/rule.h"
#include "saturn/rules/stop_reason.h"
#include "saturn/tensor/analysis.h"
#include "saturn/tensor/graph.h"

namespace saturn {

struct SearchBudget {
  std::size_t max_nodes = kDefaultMaxNodes;    // e-nodes
  std::size_t max_bytes = Budget::kUnlimited;  // EGraph::memory_bytes(); default unlimited
  double time_limit_seconds = kDefaultTimeLimitSeconds;  // wall time from reset()
};

// Reported after every step (real or simulated) to an optional observer, for
// progress displays. MCTS calls it from its worker threads.
struct SearchProgress {
  std::size_t steps = 0;      // steps of this environment's episode
  std::size_t nodes = 0;      // e-nodes now
  std::size_t max_nodes = 0;  // the budget
  double cost = 0;            // the current state's cost
  double initial_cost = 0;
  double seconds = 0;  // since the environment was created
  // Searches of a graph cut into regions: the regions' structures and how
  // many of their searches have ended (0 and 0 for a graph searched whole).
  std::size_t region_structures = 0, regions_searched = 0;
};

struct EnvironmentConfig {
  const tensor::Graph* graph = nullptr;   // must outlive the environment
  const RuleSet* rules = nullptr;         // over a TensorLanguage; must outlive it
  const CostModel* cost_model = nullptr;  // must outlive it
  SearchBudget budget;
  // Skip matches of multi-pattern rules whose result would make an e-class
  // depend on itself (TENSAT's cycle filtering).
  bool filter_cycles = true;
  // Matches searched per rule and state, at most; 0: four times the node
  // budget, at least 20,000. A multi-pattern merge over a class read by k
  // nodes has on the order of k^3 matches, which the e-graph's own growth
  // makes unbounded (a ResNeXt-50 search at 10,000 e-nodes grew to 24 GB
  // without this cap); the budget stops their application long before the last one.
  std::size_t match_limit = 0;
  EGraphCostOptions cost_options;
  // Price the state after every step, for StepResult::reward and the
  // progress reports. A search that values only some states (MCTS prices
  // the last state of a simulation, not the eight before it) turns it off:
  // steps then report a reward of 0, progress reports the latest cost known,
  // and a state is priced when cost() is first asked for.
  bool price_steps = true;
  std::function<void(const SearchProgress&)> on_progress;  // optional; must be thread-safe
};

// What an agent sees of a state.
struct Observation {
  std::vector<int> op_counts;  // of the current best graph, indexed by tensor::Op
  std::size_t nodes = 0;       // e-nodes
  std::size_t classes = 0;
  std::size_t bytes = 0;    // EGraph::memory_bytes()
  double cost = 0;          // DAG cost of the current best graph
  double initial_cost = 0;  // of the input graph
  std::size_t steps = 0;    // actions taken since reset
  double seconds = 0;       // since reset
};

struct StepResult {
  double reward = 0;         // (cost before - cost after) / initial cost; 0 without price_steps
  bool done = false;         // stop chosen, or the budget (nodes, bytes, time) is spent
  std::size_t applied = 0;   // matches that changed the e-graph
  std::size_t filtered = 0;  // matches skipped by cycle filtering
  // Matches refused because their result's type differed from the matched
  // class's: the rule is unsound there (see EGraph::merge).
  std::size_t conflicts = 0;
  // Some rule had more matches than the match limit: the ones beyond it
  // were not tried, so a step that applied nothing is no fixpoint.
  bool truncated = false;
};

class Environment {
 public:
  // Puts the config's graph into a fresh e-graph. Fails if the graph does not
  // type-check or does not fit in the budget.
  static absl::StatusOr<std::unique_ptr<Environment>> create(const EnvironmentConfig& config);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  // Back to the input graph; restarts the clock.
  void reset();

  std::size_t num_rules() const { return config_.rules->size(); }
  const RuleSet& rules() const { return *config_.rules; }
  const Rule& rule(std::size_t action) const { return (*config_.rules)[action]; }
  std::size_t stop_action() const { return num_rules(); }
  // Rules with at least one match in the current state, then stop_action().
  std::vector<std::size_t> legal_actions();
  // Whether rule `action` has a match in the current state.
  bool has_match(std::size_t action);
  // The current matches of rule `action`, at most match_limit() (cached
  // until the e-graph changes).
  const RuleMatches& matches(std::size_t action);
  std::size_t match_limit() const;

  // Applies rule `action` to all its matches, or to those listed in `subset`
  // (indices into matches(action)), as far as the budget allows.
  StepResult step(std::size_t action, std::span<const std::size_t> subset = {});
  // One saturation iteration: searches all of `rules` first, then applies
  // every match (TENSAT / egg semantics); `reward` and `done` as for step.
  StepResult step_all(std::span<const std::size_t> rules);

  // The DAG cost of the current best graph (cached per state), with the
  // charge for weights it holds beyond the cache and the input's (see
  // weight_spill).
  double cost();
  double initial_cost() const { return initial_cost_; }
  // `graph`, when given, receives the graph the observation describes (from
  // the same extraction).
  Observation observe(absl::StatusOr<tensor::Graph>* graph = nullptr);
  // Whether another action can still change anything: false once a step hit
  // the node or byte budget, or the time limit passed.
  bool has_budget() const;
  bool budget_hit() const { return budget_hit_; }
  // Which budget a step hit (budget_hit()): the byte budget where one is set
  // and the e-nodes are below theirs, else the node budget.
  StopReason budget_stop() const;
  bool out_of_time() const;
  double seconds() const;

  // Checkpoints nest; restore() returns to the latest one and forgets it.
  void checkpoint();
  void restore();

  // Matches applied per rule since reset (rolled back with restore()).
  const std::vector<std::size_t>& rule_applications() const { return applications_; }
  // Refusals per rule for a type conflict (StepResult::conflicts), over
  // every step since creation, rolled back or not: a match refused in
  // several states (simulations) counts each time.
  const std::vector<std::size_t>& rule_conflicts() const { return conflicts_; }
  std::size_t steps() const { return history_.size(); }
  std::size_t peak_nodes() const { return peak_nodes_; }
  std::size_t peak_bytes() const { return peak_bytes_; }
  std::size_t extractions() const { return extractions_; }

  const EGraph& egraph() const { return *egraph_; }
  const tensor::TensorAnalysis& analysis() const { return *analysis_; }
  const tensor::Graph& input_graph() const { return *config_.graph; }
  const EnvironmentConfig& config() const { return config_; }
  // The e-classes of the graph outputs, canonical.
  std::vector<tensor::ClassOutput> outputs() const;
  std::vector<Id> output_classes() const;

  // The extraction problem of the current state under the cost model (with
  // the configured cost options, or `costs`).
  ExtractionProblem problem() const;
  ExtractionProblem problem(const EGraphCostOptions& costs) const;
  // Extracts the current state with `extractor` and rebuilds a graph.
  absl::StatusOr<tensor::Graph> extract_graph(const Extractor& extractor,
                                              ExtractionResult* result = nullptr) const;
  // The graph that `selection` (of problem() or any problem(costs)) picks.
  absl::StatusOr<tensor::Graph> graph_of(const ExtractionProblem& p,
                                         const ExtractionResult& extraction) const;

 private:
  explicit Environment(const EnvironmentConfig& config);
  // Places the input graph in a fresh e-graph.
  absl::Status load();
  struct StepRecord {
    std::size_t action;
    std::size_t applied;
    double cost;                                                // NaN until computed
    std::vector<std::pair<std::size_t, std::size_t>> per_rule;  // (rule, applied)
  };
  struct Mark {
    std::size_t history_size;
    bool budget_hit;
  };

  // Applies matches `which` (all if empty) of `rule`, cycle-filtered.
  void apply(std::size_t rule, const RuleMatches& matches, std::span<const std::size_t> which,
             StepRecord& record, StepResult& result);
  // Runs `apply_matches` (calls of apply) and rebuilds, within the byte budget.
  void apply_capped(const std::function<void()>& apply_matches, StepRecord& record,
                    StepResult& result);
  StepResult finish_step(StepRecord record, StepResult result);
  bool would_cycle(const Rule& rule, const RuleMatches& matches, std::size_t i);
  double evaluate_cost() const;
  // The current state's cost, NaN while it is not priced.
  double current_cost_if_known() const;
  // The cost of the latest state priced so far (the input's if none was).
  double latest_known_cost() const;
  // The cost of `extraction` (of problem()): its DAG cost and weight spill.
  double price(const ExtractionProblem& p, const ExtractionResult& extraction) const;

  EnvironmentConfig config_;
  tensor::TensorLanguage language_;  // symbols agree with every TensorLanguage
  std::unique_ptr<tensor::TensorAnalysis> analysis_;
  std::unique_ptr<EGraph> egraph_;
  std::vector<Id> graph_ids_;  // the e-class of each input graph node
  static const DagGreedyExtractor& reward_extractor();
  double initial_cost_ = 0;
  double input_weight_bytes_ = 0;  // held by the input graph's extraction
  bool budget_hit_ = false;
  std::vector<StepRecord> history_;
  std::vector<Mark> marks_;
  std::vector<std::size_t> applications_;
  std::vector<std::size_t> conflicts_;
  Stopwatch clock_;  // since reset
  std::size_t peak_nodes_ = 0, peak_bytes_ = 0;
  mutable std::size_t extractions_ = 0;

  // Matches per rule (computed lazily) for the e-graph states seen last: a
  // search returns to the states along its tree over and over, and a
  // rollback restores a state's version.
  struct StateMatches {
    std::uint64_t version = ~std::uint64_t{0};
    std::uint64_t last_use = 0;
    std::vector<RuleMatches> matches;
    std::vector<bool> ready;
  };
  // The current state's entry, if it has one.
  StateMatches* current_matches();
  static constexpr std::size_t kMatchStates = 8;
  std::vector<StateMatches> match_states_;
  std::uint64_t match_uses_ = 0;
  ClassReach reach_;  // for cycle filtering, ranked before a step applies a multi-pattern rule
};

}  // namespace saturn

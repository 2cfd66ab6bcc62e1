// Construction search: the strategies that decide which rewrites grow the
// e-graph under the budget.
//
//   mcts     UCT tree search over rule applications (Hartmann, He and Yoneki,
//            PACT 2024; MCTS-GEB): simulations explore from checkpoints and
//            roll back, rewards come from the sharing-aware greedy extractor;
//            besides one rule or stop, an action may be a sweep (one
//            saturation iteration of every single-pattern rule); greedy
//            saturation's state is extracted beside the search's and the
//            cheaper taken
//   greedy   TENSAT-style saturation: every rule on every match, iteration
//            after iteration, until the budget is full
//   default  a fixed pass order: the rule groups in one canonical sequence,
//            each to a fixpoint (like a compiler's default pipeline)
//   taso     TASO-style backtracking over whole rewritten graphs: a queue by
//            cost, candidates up to alpha times the best kept, a budget of
//            popped graphs
//
//   SearchOptions options{.strategy = Strategy::kMcts, .seed = 7, .threads = 2};
//   absl::StatusOr<SearchOutcome> out = run_search(config, options);
//   out->env->extract_graph(IlpExtractor());
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/search/environment.h"

namespace saturn {

enum class Strategy : std::uint8_t { kMcts, kGreedy, kDefault, kTaso };
std::string_view to_string(Strategy strategy);
std::optional<Strategy> parse_strategy(std::string_view name);
inline constexpr Strategy kAllStrategies[] = {Strategy::kMcts, Strategy::kGreedy,
                                              Strategy::kDefault, Strategy::kTaso};

struct MctsOptions {
  std::size_t simulations = 160;  // per real step, over all threads; default 160
  std::size_t rollout_depth = 8;  // epsilon-greedy actions after the tree; default 8
  double exploration = 1.0;       // UCT constant, scaled by the best reward seen; default 1.0
  double epsilon = 0.5;        // rollouts: chance of a random rule, else the best rule so far; 0.5
  std::size_t max_steps = 30;  // real steps (actions taken); default 30
};

struct GreedyOptions {
  std::size_t iteration_limit = 15;  // default 15
  std::size_t multi_iterations = 1;  // iterations that apply multi-pattern rules; default 1
};

struct DefaultOrderOptions {
  // Rule groups in pipeline order; rules of other groups run last, in one
  // group of their own. The transformer fusions come first, as a compiler
  // fuses patterns on the graph as exported, before algebra rewrites
  // them and fills the budget.
  std::vector<std::string> groups = {"transformer", "elementwise", "layout", "matmul",
                                     "conv",        "pooling",     "merge"};
  std::size_t iterations_per_group = 8;  // default 8
};

struct TasoOptions {
  double alpha = 1.05;                // keep candidates costing up to alpha x best; default 1.05
  std::size_t max_popped = 100;       // graphs expanded; default 100
  std::size_t matches_per_rule = 16;  // candidates per rule and graph; default 16
};

// The most search threads (MCTS trees) a search takes: each tree holds its
// own e-graph, and the thread pool does not grow without bound.
inline constexpr int kMaxThreads = 256;

// The processes a search is spread over (the ranks of an MPI launch;
// saturn's command line adapts base/ranks.h). In saturn::optimize
// (SearchOptions::processes), each process takes region structures to
// search as they come, or, for a graph searched whole by MCTS, a share of
// its trees, whose root statistics all processes combine at each real step.
// The root (rank 0) returns the result, and every other process a result
// with `worker` set and nothing else. A structure's search depends only on
// its seed and the fixed tree count, and an MCTS tree only on its seed and
// its index among all the trees, so the result is the one process's with
// the same trees, unless the time limit stops a search.
class Processes {
 public:
  virtual ~Processes() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The next of `count` tasks for this process; `count` or more once none is left.
  virtual std::size_t next_task(std::size_t count) = 0;
  // Every process's text, at the root in rank order; empty elsewhere.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
  // Every process's text, on every process in rank order.
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
};

struct SearchOptions {
  Strategy strategy = Strategy::kMcts;
  std::uint64_t seed = 1;
  // Threads the search may use (at most kMaxThreads).
  int threads = 1;
  // MCTS: independent trees whose root statistics are summed, spread over
  // the threads (and processes); 0 means one tree per thread of each
  // process. A fixed tree count makes the result independent of the thread
  // and process counts.
  int trees = 0;
  // Spread the search over these processes (see Processes): in
  // saturn::optimize, a graph cut into regions its region structures, a
  // graph searched whole by MCTS its trees. Null: this process alone.
  Processes* processes = nullptr;
  MctsOptions mcts;
  GreedyOptions greedy;
  DefaultOrderOptions default_order;
  TasoOptions taso;
};

struct SearchStats {
  std::string strategy;
  StopReason stop_reason = StopReason::kSaturated;  // why the search ended
  // MCTS: the final graph is greedy saturation's (extracted cheaper than the
  // search's state, or as cheap), not the search's.
  bool saturation_taken = false;
  std::size_t steps = 0;            // actions applied to the final state
  std::size_t simulations = 0;      // MCTS simulations over all threads
  std::size_t graphs_explored = 0;  // TASO: graphs popped
  std::size_t extractions = 0;      // greedy extractions (reward evaluations)
  std::size_t peak_nodes = 0;       // largest e-graph of any thread or candidate
  std::size_t peak_bytes = 0;
  std::vector<std::size_t> rule_applications;  // per rule, on the way to the final state
  // Per rule: matches refused anywhere in the search because the result's
  // type differed from the matched class's (an unsound rule).
  std::vector<std::size_t> rule_conflicts;
  double seconds = 0;
};

struct SearchOutcome {
  // The final state; extract from it. For TASO, an environment holding the
  // best graph found (`graph` owns it).
  std::unique_ptr<Environment> env;
  std::shared_ptr<const tensor::Graph> graph;
  // MCTS: the state greedy saturation reaches from the input. The final
  // extraction compares it with env's: the reward's greedy extraction can
  // rank it below a state that an exact extraction prices higher.
  std::unique_ptr<Environment> saturated;
  double input_cost = 0;  // the DAG cost of the config's graph
  SearchStats stats;
};

// Runs `options.strategy` from the config's graph.
absl::StatusOr<SearchOutcome> run_search(const EnvironmentConfig& config,
                                         const SearchOptions& options);

// The strategies: run_mcts in mcts.cc, run_taso in taso.cc, and the two
// saturating ones, run_greedy and run_default_order, in saturate.cc.
absl::StatusOr<SearchOutcome> run_mcts(const EnvironmentConfig& config,
                                       const SearchOptions& options);
absl::StatusOr<SearchOutcome> run_greedy(const EnvironmentConfig& config,
                                         const SearchOptions& options);
absl::StatusOr<SearchOutcome> run_default_order(const EnvironmentConfig& config,
                                                const SearchOptions& options);
absl::StatusOr<SearchOutcome> run_taso(const EnvironmentConfig& config,
                                       const SearchOptions& options);

// Steps `rules` together (Environment::step_all) until nothing changes, the
// budget is spent or `iterations` have run; `multi_iterations` limits the
// iterations that include multi-pattern rules. The loop is the Runner's
// (rules/runner.h: Runner::drive). Greedy saturation is this over every
// rule; MCTS runs it too, for the final extraction to compare.
struct SaturationResult {
  StopReason stop = StopReason::kSaturated;
  std::size_t iterations = 0;
  std::size_t applied = 0, conflicts = 0;  // over every iteration
  bool truncated = false;  // the last iteration left matches untried (the match limit)
};
SaturationResult saturate(Environment& env, std::span<const std::size_t> rules,
                          std::size_t iterations, std::size_t multi_iterations);

// Greedy saturation over every rule, and whether it reached a fixpoint
// inside the budget: every rule, multi-pattern ones included, tried on the
// final state and none changed it (matches skipped by cycle filtering
// aside; a rule with more matches than the match limit is no fixpoint).
// The e-graph then holds every graph the rules reach from the input, and
// its exact extraction is the best of any order of rewrites.
bool saturate_to_fixpoint(Environment& env, const GreedyOptions& options);

// Adds an environment's extractions and peak sizes to `stats`.
void count_usage(const Environment& env, SearchStats& stats);
// Takes the steps and rule applications of the final state.
void record_final_state(const Environment& env, SearchStats& stats);

}  // namespace saturn

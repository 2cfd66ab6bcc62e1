// Monte Carlo tree search over rule applications.
//
// A state is the e-graph after a sequence of actions (apply rule r to all its
// matches; sweep: one saturation iteration of every single-pattern rule, the
// step greedy saturation repeats; or stop); its value is the cost reduction of the greedy DAG
// extraction, normalized by the input graph's cost; only a simulation's last
// state is priced. Each real step simulates from the current state
// (selection by UCT, one expansion, a short epsilon-greedy rollout,
// backpropagation) a fixed number of times, then takes the action whose
// simulations reached the best value. Simulations never copy the e-graph:
// each one starts from a checkpoint and rolls back. The subtree below the
// chosen action is kept for the next real step.
//
// Threads run independent trees (root parallelism), each on its own
// environment with its own seed; the root statistics are summed to choose the
// action. A fixed number of simulations per tree makes the result depend only
// on the seed and the number of trees (one per thread unless set). Spread
// over processes (SearchOptions::processes), each holds every N-th tree and
// the processes exchange their root statistics at each real step, so that
// all take the same action.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <limits>
#include <optional>
#include <random>

#include "saturn/search/search.h"
#include "tbb/parallel_for.h"
#include "tbb/task_arena.h"

namespace saturn {

namespace {

struct TreeNode {
  std::size_t action = 0;  // the action that led here
  std::uint32_t visits = 0;
  double value_sum = 0;
  double best_value = -1;            // the best value of a simulation through this node
  bool terminal = false;             // stop, or the budget is spent
  bool expanded = false;             // `untried` has been filled
  std::vector<std::size_t> untried;  // actions not yet tried, next at the back
  std::vector<std::unique_ptr<TreeNode>> children;

  double mean() const { return visits == 0 ? 0.0 : value_sum / visits; }
};

// One thread's tree and environment.
class Tree {
 public:
  Tree(std::unique_ptr<Environment> env, std::uint64_t seed, const MctsOptions& options)
      : env_(std::move(env)),
        rng_(seed),
        options_(options),
        root_(std::make_unique<TreeNode>()),
        rule_value_(num_actions(*env_), 0.0),
        rule_tries_(num_actions(*env_), 0) {
    for (std::size_t r = 0; r < env_->num_rules(); ++r)
      if (!env_->rule(r).is_multi()) single_rules_.push_back(r);
  }

  // Rules, stop, and the sweep.
  static std::size_t num_actions(const Environment& env) { return env.num_rules() + 2; }
  static std::size_t sweep_action(const Environment& env) { return env.num_rules() + 1; }

  Environment& env() { return *env_; }
  std::unique_ptr<Environment> release_env() { return std::move(env_); }
  const TreeNode& root() const { return *root_; }
  std::size_t simulations() const { return simulations_; }

  void simulate(std::size_t count) {
    for (std::size_t i = 0; i < count && !env_->out_of_time(); ++i) simulate_once();
  }

  // Takes `action` for real and keeps its subtree. Returns the step.
  StepResult advance(std::size_t action) {
    std::unique_ptr<TreeNode> next;
    for (std::unique_ptr<TreeNode>& child : root_->children)
      if (child->action == action) next = std::move(child);
    root_ = next ? std::move(next) : std::make_unique<TreeNode>();
    return act(action);
  }

 private:
  double state_value() {
    const double initial = env_->initial_cost();
    return initial > 0 ? (initial - env_->cost()) / initial : 0.0;
  }

  void expand(TreeNode& node) {
    node.expanded = true;
    if (node.terminal || !env_->has_budget()) {
      node.terminal = true;
      return;
    }
    node.untried = env_->legal_actions();
    const bool any_single = std::any_of(
        node.untried.begin(), node.untried.end(),
        [&](std::size_t a) { return a < env_->num_rules() && !env_->rule(a).is_multi(); });
    if (any_single) node.untried.push_back(sweep_action(*env_));
    std::shuffle(node.untried.begin(), node.untried.end(), rng_);
  }

  TreeNode* select_child(TreeNode& node) {
    const double log_n = std::log(static_cast<double>(std::max<std::uint32_t>(node.visits, 1)));
    const double scale = options_.exploration * std::max(best_value_, 1e-3);
    TreeNode* best = nullptr;
    double best_score = -std::numeric_limits<double>::infinity();
    for (const std::unique_ptr<TreeNode>& child : node.children) {
      double score =
          child->mean() + scale * std::sqrt(log_n / std::max<std::uint32_t>(child->visits, 1));
      if (score > best_score) {
        best_score = score;
        best = child.get();
      }
    }
    return best;
  }

  // Applies `action` from `node`'s state; returns the child, or null when
  // the action changed nothing (it is then dropped from the tree).
  TreeNode* try_action(TreeNode& node, std::size_t action) {
    StepResult r = act(action);
    if (action != env_->stop_action() && r.applied == 0) return nullptr;
    auto child = std::make_unique<TreeNode>();
    child->action = action;
    child->terminal = r.done;
    node.children.push_back(std::move(child));
    return node.children.back().get();
  }

  // The rollout's next action: a random legal rule, or with probability
  // 1 - epsilon the rule with the best mean value seen in this tree.
  std::size_t rollout_action(const std::vector<std::size_t>& candidates) {
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    if (coin(rng_) >= options_.epsilon) {
      std::size_t best = candidates.front();
      double best_value = -1;
      for (std::size_t a : candidates) {
        double v = rule_tries_[a] == 0 ? 0.0 : rule_value_[a] / rule_tries_[a];
        if (v > best_value) {
          best_value = v;
          best = a;
        }
      }
      return best;
    }
    std::uniform_int_distribution<std::size_t> pick(0, candidates.size() - 1);
    return candidates[pick(rng_)];
  }

  void simulate_once() {
    ++simulations_;
    env_->checkpoint();
    std::vector<TreeNode*> path{root_.get()};
    TreeNode* node = root_.get();
    std::vector<std::size_t> rollout_candidates;
    while (!node->terminal) {
      if (!node->expanded) expand(*node);
      if (node->terminal) break;
      if (!node->untried.empty()) {
        // Expansion: try the next untried action (no-ops are discarded).
        rollout_candidates = node->untried;
        TreeNode* child = nullptr;
        while (child == nullptr && !node->untried.empty()) {
          std::size_t action = node->untried.back();
          node->untried.pop_back();
          child = try_action(*node, action);
        }
        if (child != nullptr) path.push_back(child);
        break;
      }
      if (node->children.empty()) {
        node->terminal = true;
        break;
      }
      node = select_child(*node);
      act(node->action);
      path.push_back(node);
    }
    // Rollout: a few cheap actions past the tree.
    rollout_candidates.erase(
        std::remove(rollout_candidates.begin(), rollout_candidates.end(), env_->stop_action()),
        rollout_candidates.end());
    std::vector<std::size_t> rolled;
    if (!path.back()->terminal && !rollout_candidates.empty()) {
      for (std::size_t d = 0; d < options_.rollout_depth && env_->has_budget(); ++d) {
        std::size_t a = rollout_action(rollout_candidates);
        act(a);
        rolled.push_back(a);
      }
    }
    const double value = state_value();
    best_value_ = std::max(best_value_, value);
    for (TreeNode* n : path) {
      ++n->visits;
      n->value_sum += value;
      n->best_value = std::max(n->best_value, value);
    }
    for (std::size_t i = 1; i < path.size(); ++i) credit(path[i]->action, value);
    for (std::size_t a : rolled) credit(a, value);
    env_->restore();
  }

  StepResult act(std::size_t action) {
    return action == sweep_action(*env_) ? env_->step_all(single_rules_) : env_->step(action);
  }

  void credit(std::size_t action, double value) {
    rule_value_[action] += value;
    ++rule_tries_[action];
  }

  std::unique_ptr<Environment> env_;
  std::mt19937_64 rng_;
  MctsOptions options_;
  std::unique_ptr<TreeNode> root_;
  std::vector<double> rule_value_;  // summed values of simulations using each rule
  std::vector<std::uint32_t> rule_tries_;
  double best_value_ = 0;
  std::size_t simulations_ = 0;
  std::vector<std::size_t> single_rules_;  // what a sweep applies
};

// The trees' root statistics per action: visits summed, and the best value
// a simulation through the action reached.
struct RootStats {
  std::vector<std::uint64_t> visits;
  std::vector<double> values;

  explicit RootStats(std::size_t num_actions) : visits(num_actions, 0), values(num_actions, -1) {}
  void add(std::size_t action, std::uint64_t n, double best) {
    visits[action] += n;
    values[action] = std::max(values[action], best);
  }
  void add(const RootStats& other) {
    for (std::size_t a = 0; a < visits.size(); ++a) add(a, other.visits[a], other.values[a]);
  }
};

RootStats root_stats(const std::vector<std::unique_ptr<Tree>>& trees, std::size_t num_actions) {
  RootStats stats(num_actions);
  for (const std::unique_ptr<Tree>& tree : trees) {
    for (const std::unique_ptr<TreeNode>& child : tree->root().children)
      stats.add(child->action, child->visits, child->best_value);
  }
  return stats;
}

// The action whose simulations reached the best value over all trees' roots
// (a single-player search: the best line found is what counts; ties: more
// visits, then the lower action index); none if no tree has children.
std::optional<std::size_t> choose_action(const RootStats& stats) {
  std::optional<std::size_t> best;
  for (std::size_t a = 0; a < stats.visits.size(); ++a) {
    if (stats.visits[a] == 0) continue;
    if (!best || stats.values[a] > stats.values[*best] ||
        (stats.values[a] == stats.values[*best] && stats.visits[a] > stats.visits[*best]))
      best = a;
  }
  return best;
}

// Numbers sent between processes as their bytes (every process runs the
// same build on the same kind of machine).
template <typename T>
void put(std::string& out, const std::vector<T>& values) {
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}
template <typename T>
std::vector<T> take(std::string_view& in, std::size_t count) {
  std::vector<T> values(std::min(count, in.size() / sizeof(T)));
  std::memcpy(values.data(), in.data(), values.size() * sizeof(T));
  in.remove_prefix(values.size() * sizeof(T));
  return values;
}

// Whether every process still has budget, and all their trees' root
// statistics (combined in rank order, so that every process sees the same).
bool exchange(Processes& processes, bool budget, RootStats& stats) {
  std::string mine(1, budget ? '\1' : '\0');
  put(mine, stats.visits);
  put(mine, stats.values);
  const std::size_t n = stats.visits.size();
  RootStats all(n);
  bool all_budget = true;
  for (const std::string& text : processes.all_gather(mine)) {
    std::string_view in(text);
    all_budget = all_budget && !in.empty() && in.front() == '\1';
    in.remove_prefix(std::min<std::size_t>(1, in.size()));
    RootStats theirs(n);
    theirs.visits = take<std::uint64_t>(in, n);
    theirs.values = take<double>(in, n);
    theirs.visits.resize(n, 0);
    theirs.values.resize(n, -1);
    all.add(theirs);
  }
  stats = std::move(all);
  return all_budget;
}

// The search statistics of every process's trees, on every process.
void combine_stats(Processes& processes, SearchStats& stats) {
  std::string mine;
  put(mine, std::vector<std::size_t>{stats.simulations, stats.extractions, stats.peak_nodes,
                                     stats.peak_bytes, stats.rule_conflicts.size()});
  put(mine, stats.rule_conflicts);
  stats.simulations = stats.extractions = stats.peak_nodes = stats.peak_bytes = 0;
  std::vector<std::size_t> conflicts;
  for (const std::string& text : processes.all_gather(mine)) {
    std::string_view in(text);
    const std::vector<std::size_t> head = take<std::size_t>(in, 5);
    if (head.size() < 5) continue;
    stats.simulations += head[0];
    stats.extractions += head[1];
    stats.peak_nodes = std::max(stats.peak_nodes, head[2]);
    stats.peak_bytes = std::max(stats.peak_bytes, head[3]);
    const std::vector<std::size_t> theirs = take<std::size_t>(in, head[4]);
    conflicts.resize(std::max(conflicts.size(), theirs.size()), 0);
    for (std::size_t r = 0; r < theirs.size(); ++r) conflicts[r] += theirs[r];
  }
  stats.rule_conflicts = std::move(conflicts);
}

}  // namespace

absl::StatusOr<SearchOutcome> run_mcts(const EnvironmentConfig& config,
                                       const SearchOptions& options) {
  Processes* processes =
      options.processes != nullptr && options.processes->size() > 1 ? options.processes : nullptr;
  const std::size_t ranks = processes ? static_cast<std::size_t>(processes->size()) : 1;
  const std::size_t rank = processes ? static_cast<std::size_t>(processes->rank()) : 0;
  // Every process holds at least one tree.
  const std::size_t num_trees = std::max(
      ranks, static_cast<std::size_t>(options.trees > 0 ? options.trees : options.threads) *
                 (options.trees > 0 ? 1 : ranks));
  // Greedy saturation first (every process alike, so that all agree): where
  // it reaches a fixpoint inside the budget, its e-graph holds every graph
  // any order of rewrites reaches, and there is nothing left to search.
  // Otherwise the final extraction weighs its state beside the search's:
  // the search's reward (a greedy extraction) can tie the two, or rank
  // saturation's lower, where an exact extraction finds it cheaper.
  absl::StatusOr<std::unique_ptr<Environment>> saturated = Environment::create(config);
  if (!saturated.ok()) return saturated.status();
  if (saturate_to_fixpoint(**saturated, options.greedy)) {
    SearchOutcome out;
    out.stats.strategy = "mcts";
    out.stats.stop_reason = StopReason::kSaturated;
    out.stats.saturation_taken = true;
    out.stats.seconds = (*saturated)->seconds();
    count_usage(**saturated, out.stats);
    record_final_state(**saturated, out.stats);
    out.input_cost = (*saturated)->initial_cost();
    out.env = *std::move(saturated);
    return out;
  }
  // A simulation values its last state only.
  EnvironmentConfig unpriced = config;
  unpriced.price_steps = false;
  std::vector<std::unique_ptr<Tree>> trees;  // this process's: every ranks-th from its rank
  for (std::size_t t = rank; t < num_trees; t += ranks) {
    absl::StatusOr<std::unique_ptr<Environment>> env = Environment::create(unpriced);
    if (!env.ok()) return env.status();
    // Seeds far apart per tree (splitmix-style constant).
    trees.push_back(std::make_unique<Tree>(
        std::move(*env), options.seed + 0x9e3779b97f4a7c15ULL * (t + 1), options.mcts));
  }
  Environment& lead = trees.front()->env();
  const std::size_t per_tree =
      std::max<std::size_t>(1, (options.mcts.simulations + num_trees - 1) / num_trees);

  // Inside an arena of the same width (a region search), the trees share it
  // with the other regions' searches; otherwise they get their own.
  std::optional<tbb::task_arena> own_arena;
  if (tbb::this_task_arena::max_concurrency() != options.threads) own_arena.emplace(options.threads);
  // Isolated: a thread waiting for the other trees must not start another
  // region's whole search meanwhile.
  auto simulate_all = [&] {
    tbb::this_task_arena::isolate([&] {
      tbb::parallel_for(std::size_t{0}, trees.size(),
                        [&](std::size_t t) { trees[t]->simulate(per_tree); });
    });
  };
  SearchStats stats;
  stats.strategy = "mcts";
  stats.stop_reason = StopReason::kStepLimit;
  for (std::size_t step = 0; step < options.mcts.max_steps; ++step) {
    bool budget = lead.has_budget();
    if (budget) {
      if (own_arena)
        own_arena->execute(simulate_all);
      else
        simulate_all();
    }
    RootStats root = root_stats(trees, Tree::num_actions(lead));
    if (processes != nullptr) budget = exchange(*processes, budget, root);
    if (!budget) {
      stats.stop_reason = lead.out_of_time() ? StopReason::kTimeLimit : lead.budget_stop();
      break;
    }
    std::optional<std::size_t> action = choose_action(root);
    if (!action) {
      stats.stop_reason =
          lead.out_of_time() ? StopReason::kTimeLimit : StopReason::kNoApplicableRule;
      break;
    }
    if (*action == lead.stop_action()) {
      stats.stop_reason = StopReason::kStopChosen;
      break;
    }
    for (std::unique_ptr<Tree>& tree : trees) tree->advance(*action);
  }
  SearchOutcome out;
  for (const std::unique_ptr<Tree>& tree : trees) {
    stats.simulations += tree->simulations();
    count_usage(tree->env(), stats);
  }
  if (processes != nullptr) combine_stats(*processes, stats);
  // The root's saturated state, which goes on to be extracted.
  if (rank == 0) {
    count_usage(**saturated, stats);
    out.saturated = *std::move(saturated);
  }
  stats.seconds = lead.seconds();
  record_final_state(lead, stats);
  out.stats = std::move(stats);
  out.input_cost = lead.initial_cost();
  out.env = trees.front()->release_env();
  return out;
}

}  // namespace saturn

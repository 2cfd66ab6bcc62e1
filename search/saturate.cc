// The saturation baselines: greedy (TENSAT) and the fixed pass order.
#include <algorithm>
#include <numeric>

#include "saturn/search/search.h"
#include "saturn/rules/runner.h"

#include "fmt/format.h"

namespace saturn {

std::string_view to_string(Strategy strategy) {
  switch (strategy) {
    case Strategy::kMcts:
      return "mcts";
    case Strategy::kGreedy:
      return "greedy";
    case Strategy::kDefault:
      return "default";
    case Strategy::kTaso:
      return "taso";
  }
  return "unknown";
}

std::optional<Strategy> parse_strategy(std::string_view name) {
  for (Strategy s : kAllStrategies)
    if (to_string(s) == name) return s;
  return std::nullopt;
}

void count_usage(const Environment& env, SearchStats& stats) {
  stats.extractions += env.extractions();
  stats.peak_nodes = std::max(stats.peak_nodes, env.peak_nodes());
  stats.peak_bytes = std::max(stats.peak_bytes, env.peak_bytes());
  const std::vector<std::size_t>& conflicts = env.rule_conflicts();
  stats.rule_conflicts.resize(std::max(stats.rule_conflicts.size(), conflicts.size()), 0);
  for (std::size_t r = 0; r < conflicts.size(); ++r) stats.rule_conflicts[r] += conflicts[r];
}

void record_final_state(const Environment& env, SearchStats& stats) {
  stats.steps = env.steps();
  stats.rule_applications = env.rule_applications();
}

namespace {

// The outcome of a strategy that drove one environment to its final state.
SearchOutcome single_environment_outcome(std::unique_ptr<Environment> env, std::string strategy,
                                         StopReason stop) {
  SearchOutcome out;
  out.stats.strategy = std::move(strategy);
  out.stats.stop_reason = stop;
  out.stats.seconds = env->seconds();
  count_usage(*env, out.stats);
  record_final_state(*env, out.stats);
  out.input_cost = env->initial_cost();
  out.env = std::move(env);
  return out;
}

}  // namespace

absl::StatusOr<SearchOutcome> run_search(const EnvironmentConfig& config,
                                         const SearchOptions& options) {
  if (options.threads < 1 || options.threads > kMaxThreads)
    return absl::InvalidArgumentError(fmt::format(
        "search: threads must be between 1 and {}, got {}", kMaxThreads, options.threads));
  if (options.trees < 0 || options.trees > kMaxThreads)
    return absl::InvalidArgumentError(fmt::format(
        "search: trees must be between 0 (one per thread) and {}, got {}", kMaxThreads,
        options.trees));
  switch (options.strategy) {
    case Strategy::kMcts:
      return run_mcts(config, options);
    case Strategy::kGreedy:
      return run_greedy(config, options);
    case Strategy::kDefault:
      return run_default_order(config, options);
    case Strategy::kTaso:
      return run_taso(config, options);
  }
  return absl::InvalidArgumentError("search: unknown strategy");
}

namespace {

// Why an environment can take no further step: its node or byte budget, or
// its time limit.
StopReason spent(const Environment& env) {
  return env.out_of_time() && !env.budget_hit() &&
                 env.egraph().num_nodes() < env.config().budget.max_nodes
             ? StopReason::kTimeLimit
             : env.budget_stop();
}

// A saturation iteration of an environment: one step_all over the rules,
// with the multi-pattern ones only in the first `multi_iterations`.
class EnvironmentSaturation final : public Saturation {
 public:
  EnvironmentSaturation(Environment& env, std::span<const std::size_t> rules,
                        std::size_t multi_iterations, SaturationResult& result)
      : env_(env), rules_(rules), multi_iterations_(multi_iterations), result_(result) {
    for (std::size_t r : rules)
      if (!env.rule(r).is_multi()) single_.push_back(r);
  }

  IterationStep iterate(std::size_t iteration) override {
    if (!env_.has_budget()) return {.stop = spent(env_)};
    const StepResult step =
        env_.step_all(iteration < multi_iterations_ ? rules_ : std::span(single_));
    result_.applied += step.applied;
    result_.conflicts += step.conflicts;
    result_.truncated = step.truncated;
    if (!env_.has_budget()) return {.changed = step.applied > 0, .stop = spent(env_)};
    return {.changed = step.applied > 0};
  }

 private:
  Environment& env_;
  std::span<const std::size_t> rules_;
  std::vector<std::size_t> single_;
  std::size_t multi_iterations_;
  SaturationResult& result_;
};

}  // namespace

SaturationResult saturate(Environment& env, std::span<const std::size_t> rules,
                          std::size_t iterations, std::size_t multi_iterations) {
  SaturationResult result;
  EnvironmentSaturation saturation(env, rules, multi_iterations, result);
  // The environment keeps its own budget and clock.
  result.stop = Runner()
                    .with_iteration_limit(iterations)
                    .with_time_limit(std::chrono::duration<double>::max())
                    .drive(saturation, &result.iterations);
  return result;
}

bool saturate_to_fixpoint(Environment& env, const GreedyOptions& options) {
  std::vector<std::size_t> all(env.num_rules());
  std::iota(all.begin(), all.end(), std::size_t{0});
  const SaturationResult r = saturate(env, all, options.iteration_limit, options.multi_iterations);
  if (r.stop != StopReason::kSaturated || r.truncated) return false;
  // The loop's last step may have left the multi-pattern rules out; the
  // matches of this state are cached, so trying every rule once more is cheap.
  const StepResult last = env.step_all(all);
  return last.applied == 0 && !last.truncated && env.has_budget();
}

absl::StatusOr<SearchOutcome> run_greedy(const EnvironmentConfig& config,
                                         const SearchOptions& options) {
  absl::StatusOr<std::unique_ptr<Environment>> env = Environment::create(config);
  if (!env.ok()) return env.status();
  std::vector<std::size_t> all((*env)->num_rules());
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = r;
  const SaturationResult r =
      saturate(**env, all, options.greedy.iteration_limit, options.greedy.multi_iterations);
  return single_environment_outcome(std::move(*env), "greedy", r.stop);
}

absl::StatusOr<SearchOutcome> run_default_order(const EnvironmentConfig& config,
                                                const SearchOptions& options) {
  absl::StatusOr<std::unique_ptr<Environment>> env = Environment::create(config);
  if (!env.ok()) return env.status();
  const RuleSet& rules = (*env)->rules();
  const std::vector<std::string>& order = options.default_order.groups;
  // One pass per listed group, then one for the rules of unlisted groups.
  std::vector<std::vector<std::size_t>> passes(order.size() + 1);
  for (std::size_t r = 0; r < rules.size(); ++r) {
    auto it = std::find(order.begin(), order.end(), rules[r].group);
    passes[static_cast<std::size_t>(it - order.begin())].push_back(r);
  }
  StopReason stop = StopReason::kPassesDone;
  for (const std::vector<std::size_t>& pass : passes) {
    if (pass.empty()) continue;
    if (!(*env)->has_budget()) {
      stop = spent(**env);
      break;
    }
    saturate(**env, pass, options.default_order.iterations_per_group,
             options.default_order.iterations_per_group);
  }
  if (!(*env)->has_budget()) stop = spent(**env);
  return single_environment_outcome(std::move(*env), "default", stop);
}

}  // namespace saturn

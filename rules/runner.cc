#include "saturn/rules/runner.h"
#include "saturn/base/stopwatch.h"

#include <algorithm>

#include "saturn/rules/rewrite.h"

namespace saturn {

void BackoffScheduler::reset(std::size_t num_rules) { state_.assign(num_rules, State{}); }

bool BackoffScheduler::should_search(std::size_t rule, std::size_t iteration) {
  return iteration >= state_[rule].banned_until;
}

std::size_t BackoffScheduler::threshold(std::size_t rule) const {
  return match_limit_ << std::min<std::size_t>(state_[rule].times_banned, 20);
}

std::size_t BackoffScheduler::search_limit(std::size_t rule) const { return threshold(rule) + 1; }

bool BackoffScheduler::accept(std::size_t rule, std::size_t iteration, std::size_t num_matches) {
  State& s = state_[rule];
  if (num_matches <= threshold(rule)) return true;
  s.banned_until = iteration + (ban_length_ << std::min<std::size_t>(s.times_banned, 20));
  ++s.times_banned;
  return false;
}

bool BackoffScheduler::can_stop(std::size_t iteration) {
  bool banned = false;
  for (State& s : state_) {
    if (s.banned_until > iteration) {
      banned = true;
      s.banned_until = iteration;
    }
  }
  return !banned;
}

Runner::Runner() : scheduler_(std::make_unique<BackoffScheduler>()) {}

Runner& Runner::with_iteration_limit(std::size_t n) {
  iteration_limit_ = n;
  return *this;
}
Runner& Runner::with_node_limit(std::size_t n) {
  node_limit_ = n;
  return *this;
}
Runner& Runner::with_byte_limit(std::size_t n) {
  byte_limit_ = n;
  return *this;
}
Runner& Runner::with_time_limit(std::chrono::duration<double> t) {
  time_limit_ = t;
  return *this;
}
Runner& Runner::with_goal(std::function<bool(const EGraph&)> goal) {
  goal_ = std::move(goal);
  return *this;
}
Runner& Runner::with_scheduler(std::unique_ptr<Scheduler> s) {
  scheduler_ = std::move(s);
  return *this;
}

bool Runner::out_of_time(const Stopwatch& run_clock) const {
  return run_clock.seconds() >= time_limit_.count();
}

std::optional<StopReason> Runner::search_rules(const EGraph& egraph, const RuleSet& rules,
                                               std::size_t iter, const Stopwatch& run_clock,
                                               std::vector<RuleMatches>& found, RunReport& report,
                                               IterationReport& it) {
  for (std::size_t r = 0; r < rules.size(); ++r) {
    RuleMatches& m = found[r];
    m.clear();
    if (!scheduler_->should_search(r, iter)) continue;
    ++it.rules_searched;
    search_rule(egraph, rules[r], scheduler_->search_limit(r), m);
    report.rules[r].matches += m.size();
    it.matches += m.size();
    if (!scheduler_->accept(r, iter, m.size())) m.clear();
    if (out_of_time(run_clock)) return StopReason::kTimeLimit;
  }
  return std::nullopt;
}

std::optional<StopReason> Runner::apply_matches(EGraph& egraph, const RuleSet& rules,
                                                const std::vector<RuleMatches>& found,
                                                const Stopwatch& run_clock, RunReport& report,
                                                IterationReport& it) const {
  for (std::size_t r = 0; r < rules.size(); ++r) {
    if (found[r].size() == 0) continue;
    ApplyResult a = apply_rule(egraph, rules[r], found[r]);
    report.rules[r].applied += a.applied;
    report.rules[r].conflicts += a.conflicts;
    it.applied += a.applied;
    if (a.stopped)
      return *a.stopped == AddStatus::kByteLimit ? StopReason::kByteLimit : StopReason::kNodeLimit;
    if (out_of_time(run_clock)) return StopReason::kTimeLimit;
  }
  return std::nullopt;
}

RunReport Runner::run(EGraph& egraph, const RuleSet& rules) {
  const Stopwatch run_clock;
  const Budget saved_budget = egraph.budget();
  egraph.set_budget(Budget{std::min(node_limit_, saved_budget.max_nodes),
                           std::min(byte_limit_, saved_budget.max_bytes)});
  egraph.rebuild();
  scheduler_->reset(rules.size());

  RunReport report;
  report.rules.resize(rules.size());
  report.initial_nodes = egraph.num_nodes();
  report.initial_visible_nodes = egraph.num_visible_nodes();
  std::vector<RuleMatches> found(rules.size());

  for (std::size_t iter = 0;; ++iter) {
    if (iter >= iteration_limit_) {
      report.stop_reason = StopReason::kIterationLimit;
      break;
    }
    IterationReport it;

    Stopwatch phase;
    std::optional<StopReason> stop =
        search_rules(egraph, rules, iter, run_clock, found, report, it);
    it.search_seconds = phase.seconds();

    phase.restart();
    const std::size_t nodes_before = egraph.num_nodes();
    // About one new e-node per match: grown once instead of doubling by steps.
    egraph.reserve(std::min(nodes_before + it.matches, node_limit_));
    const std::size_t classes_before = egraph.num_classes();
    if (!stop) stop = apply_matches(egraph, rules, found, run_clock, report, it);
    it.apply_seconds = phase.seconds();

    phase.restart();
    egraph.rebuild();
    it.rebuild_seconds = phase.seconds();

    it.nodes = egraph.num_nodes();
    it.visible_nodes = egraph.num_visible_nodes();
    it.classes = egraph.num_classes();
    it.bytes = egraph.memory_bytes();
    report.search_seconds += it.search_seconds;
    report.apply_seconds += it.apply_seconds;
    report.rebuild_seconds += it.rebuild_seconds;
    const bool changed = it.applied > 0 || it.nodes != nodes_before || it.classes != classes_before;
    report.iterations.push_back(it);
    if (!stop && goal_ && goal_(egraph)) stop = StopReason::kGoal;
    if (stop) {
      report.stop_reason = *stop;
      break;
    }
    if (!changed && scheduler_->can_stop(iter)) {
      report.stop_reason = StopReason::kSaturated;
      break;
    }
    if (out_of_time(run_clock)) {
      report.stop_reason = StopReason::kTimeLimit;
      break;
    }
  }
  egraph.set_budget(saved_budget);
  return report;
}

}  // namespace saturn

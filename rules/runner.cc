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

// An iteration over a RuleSet: search every rule the scheduler lets search,
// apply every accepted match, rebuild; the counts go to the run's report.
class Runner::RuleSetSaturation final : public Saturation {
 public:
  RuleSetSaturation(const Runner& runner, EGraph& egraph, const RuleSet& rules, RunReport& report)
      : runner_(runner), egraph_(egraph), rules_(rules), report_(report), found_(rules.size()) {}

  IterationStep iterate(std::size_t iter) override {
    IterationReport it;
    Stopwatch phase;
    std::optional<StopReason> stop = search(iter, it);
    it.search_seconds = phase.seconds();

    phase.restart();
    const std::size_t nodes_before = egraph_.num_nodes();
    // About one new e-node per match: grown once instead of doubling by steps.
    egraph_.reserve(std::min(nodes_before + it.matches, runner_.node_limit_));
    const std::size_t classes_before = egraph_.num_classes();
    if (!stop) stop = apply(it);
    it.apply_seconds = phase.seconds();

    phase.restart();
    egraph_.rebuild();
    it.rebuild_seconds = phase.seconds();

    it.nodes = egraph_.num_nodes();
    it.visible_nodes = egraph_.num_visible_nodes();
    it.classes = egraph_.num_classes();
    it.bytes = egraph_.memory_bytes();
    report_.search_seconds += it.search_seconds;
    report_.apply_seconds += it.apply_seconds;
    report_.rebuild_seconds += it.rebuild_seconds;
    report_.iterations.push_back(it);
    if (!stop && runner_.goal_ && runner_.goal_(egraph_)) stop = StopReason::kGoal;
    return {.changed = it.applied > 0 || it.nodes != nodes_before || it.classes != classes_before,
            .stop = stop};
  }

  bool can_stop(std::size_t iter) override { return runner_.scheduler_->can_stop(iter); }

 private:
  bool out_of_time() const { return clock_.seconds() >= runner_.time_limit_.count(); }

  // Each rule's matches in found_[rule] (cleared when the scheduler refuses
  // them). Stops at the time limit, with the rules after it not searched.
  std::optional<StopReason> search(std::size_t iter, IterationReport& it) {
    Scheduler& scheduler = *runner_.scheduler_;
    for (std::size_t r = 0; r < rules_.size(); ++r) {
      RuleMatches& m = found_[r];
      m.clear();
      if (!scheduler.should_search(r, iter)) continue;
      ++it.rules_searched;
      search_rule(egraph_, rules_[r], scheduler.search_limit(r), m);
      report_.rules[r].matches += m.size();
      it.matches += m.size();
      if (!scheduler.accept(r, iter, m.size())) m.clear();
      if (out_of_time()) return StopReason::kTimeLimit;
    }
    return std::nullopt;
  }

  // Every rule's matches from found_. Stops at a full budget or the time limit.
  std::optional<StopReason> apply(IterationReport& it) {
    for (std::size_t r = 0; r < rules_.size(); ++r) {
      if (found_[r].size() == 0) continue;
      ApplyResult a = apply_rule(egraph_, rules_[r], found_[r]);
      report_.rules[r].applied += a.applied;
      report_.rules[r].conflicts += a.conflicts;
      it.applied += a.applied;
      if (a.stopped)
        return *a.stopped == AddStatus::kByteLimit ? StopReason::kByteLimit
                                                   : StopReason::kNodeLimit;
      if (out_of_time()) return StopReason::kTimeLimit;
    }
    return std::nullopt;
  }

  const Runner& runner_;
  EGraph& egraph_;
  const RuleSet& rules_;
  RunReport& report_;
  std::vector<RuleMatches> found_;
  const Stopwatch clock_;
};

StopReason Runner::drive(Saturation& saturation, std::size_t* iterations) const {
  const Stopwatch clock;
  std::size_t iter = 0;
  StopReason stop = StopReason::kIterationLimit;
  for (; iter < iteration_limit_; ++iter) {
    const IterationStep step = saturation.iterate(iter);
    if (step.stop) {
      stop = *step.stop;
      ++iter;
      break;
    }
    if (!step.changed && saturation.can_stop(iter)) {
      stop = StopReason::kSaturated;
      ++iter;
      break;
    }
    if (clock.seconds() >= time_limit_.count()) {
      stop = StopReason::kTimeLimit;
      ++iter;
      break;
    }
  }
  if (iterations) *iterations = iter;
  return stop;
}

RunReport Runner::run(EGraph& egraph, const RuleSet& rules) {
  const Budget saved_budget = egraph.budget();
  egraph.set_budget(Budget{std::min(node_limit_, saved_budget.max_nodes),
                           std::min(byte_limit_, saved_budget.max_bytes)});
  egraph.rebuild();
  scheduler_->reset(rules.size());

  RunReport report;
  report.rules.resize(rules.size());
  report.initial_nodes = egraph.num_nodes();
  report.initial_visible_nodes = egraph.num_visible_nodes();
  RuleSetSaturation saturation(*this, egraph, rules, report);
  report.stop_reason = drive(saturation);
  egraph.set_budget(saved_budget);
  return report;
}

}  // namespace saturn

// The Runner: equality saturation in iterations (search every rule, apply
// the matches, rebuild) under iteration, e-node, byte and time limits.
//
//   RunReport report = Runner()
//       .with_iteration_limit(7)   // default 30
//       .with_node_limit(50'000)   // default 10,000
//       .run(egraph, rules);
//   fmt::print("{}\n", to_string(report.stop_reason));
//
// Schedulers decide which rules run each iteration: `SimpleScheduler`
// applies every rule every time; `BackoffScheduler` (the default, as in egg)
// bans a rule that matches too much for a growing number of iterations.
//
// The loop itself (iteration and time limits, the fixpoint test, the stop
// reason) is Runner::drive, and what one iteration does is a Saturation:
// run() drives one that searches and applies a RuleSet; a search
// environment drives its own (search/search.h: saturate()), which keeps its
// match cache and cycle filter. Every saturation in saturn is this loop.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "saturn/egraph/egraph.h"
#include "saturn/rules/rule.h"
#include "saturn/rules/stop_reason.h"

namespace saturn {

struct IterationReport {
  std::size_t matches = 0;  // matches found
  std::size_t applied = 0;  // matches that changed the e-graph
  std::size_t nodes = 0;    // e-nodes after the iteration
  std::size_t visible_nodes = 0;  // of those, the ones classes show (EGraph::keep_leaves)
  std::size_t classes = 0;
  std::size_t bytes = 0;
  std::size_t rules_searched = 0;
  double search_seconds = 0;
  double apply_seconds = 0;
  double rebuild_seconds = 0;
};

struct RuleStats {
  std::size_t matches = 0;
  std::size_t applied = 0;
  // Matches refused because the result's analysis data conflicted with the
  // matched class's (a tensor of another type): the rule is unsound there.
  std::size_t conflicts = 0;
};

struct RunReport {
  std::vector<IterationReport> iterations;
  StopReason stop_reason = StopReason::kSaturated;
  std::vector<RuleStats> rules;  // per rule of the rule set
  std::size_t initial_nodes = 0, initial_visible_nodes = 0;
  double search_seconds = 0, apply_seconds = 0, rebuild_seconds = 0;

  double total_seconds() const { return search_seconds + apply_seconds + rebuild_seconds; }
  std::size_t final_nodes() const {
    return iterations.empty() ? initial_nodes : iterations.back().nodes;
  }
};

// Decides which rules are searched and whether their matches are used.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual void reset(std::size_t num_rules) = 0;
  virtual bool should_search(std::size_t rule, std::size_t iteration) = 0;
  // Whether `num_matches` matches of `rule` may be applied this iteration.
  virtual bool accept(std::size_t rule, std::size_t iteration, std::size_t num_matches) = 0;
  // How many matches of `rule` are worth finding: a search may stop there
  // (accept() sees at most this many).
  virtual std::size_t search_limit(std::size_t /*rule*/) const { return SIZE_MAX; }
  // Called when an iteration changed nothing: may the run stop? (A scheduler
  // with banned rules lifts the bans and says no.)
  virtual bool can_stop(std::size_t iteration) = 0;
};

class SimpleScheduler final : public Scheduler {
 public:
  void reset(std::size_t) override {}
  bool should_search(std::size_t, std::size_t) override { return true; }
  bool accept(std::size_t, std::size_t, std::size_t) override { return true; }
  bool can_stop(std::size_t) override { return true; }
};

class BackoffScheduler final : public Scheduler {
 public:
  // A rule with more than match_limit << times_banned matches is banned for
  // ban_length << times_banned iterations.
  BackoffScheduler(std::size_t match_limit = 1000, std::size_t ban_length = 5)
      : match_limit_(match_limit), ban_length_(ban_length) {}
  void reset(std::size_t num_rules) override;
  bool should_search(std::size_t rule, std::size_t iteration) override;
  bool accept(std::size_t rule, std::size_t iteration, std::size_t num_matches) override;
  // One past the ban threshold, like egg: more matches would not be applied.
  std::size_t search_limit(std::size_t rule) const override;
  bool can_stop(std::size_t iteration) override;

 private:
  struct State {
    std::size_t times_banned = 0;
    std::size_t banned_until = 0;
  };
  std::size_t match_limit_, ban_length_;
  std::size_t threshold(std::size_t rule) const;
  std::vector<State> state_;
};

// What one iteration of a saturation loop did.
struct IterationStep {
  bool changed = false;            // the e-graph changed
  std::optional<StopReason> stop;  // a limit reached inside the iteration
};

// One iteration of a saturation loop, as Runner::drive runs it.
class Saturation {
 public:
  virtual ~Saturation() = default;
  virtual IterationStep iterate(std::size_t iteration) = 0;
  // After an iteration that changed nothing: may the loop end here? (One
  // that left rules out, a ban or a subset, may say no and widen the next.)
  virtual bool can_stop(std::size_t /*iteration*/) { return true; }
};

class Runner {
 public:
  Runner();

  Runner& with_iteration_limit(std::size_t n);               // default 30
  Runner& with_node_limit(std::size_t n);                    // default 10,000
  Runner& with_byte_limit(std::size_t n);                    // default unlimited
  Runner& with_time_limit(std::chrono::duration<double> t);  // default 5 s
  Runner& with_scheduler(std::unique_ptr<Scheduler> s);      // default BackoffScheduler
  // Stops (reason kGoal) once `goal` holds after an iteration. Default: none.
  Runner& with_goal(std::function<bool(const EGraph&)> goal);

  // Runs on `egraph` (rebuilt first). The node and byte limits become the
  // e-graph's budget for the run, so they are never exceeded.
  RunReport run(EGraph& egraph, const RuleSet& rules);

  // The loop alone: iterates `saturation` until an iteration stops it, one
  // changes nothing and may end the loop (kSaturated), or the iteration or
  // time limit is reached. The node and byte limits and the goal are run()'s;
  // a Saturation keeps its own. `iterations`, when given, receives the count.
  StopReason drive(Saturation& saturation, std::size_t* iterations = nullptr) const;

 private:
  class RuleSetSaturation;
  std::size_t iteration_limit_ = 30;
  std::size_t node_limit_ = 10'000;
  std::size_t byte_limit_ = Budget::kUnlimited;
  std::chrono::duration<double> time_limit_{5.0};
  std::unique_ptr<Scheduler> scheduler_;
  std::function<bool(const EGraph&)> goal_;
};

}  // namespace saturn

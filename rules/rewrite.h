// Searching and applying rules.
//
//   RuleMatches m = search_rule(egraph, rule);
//   ApplyResult r = apply_rule(egraph, rule, m);  // then egraph.rebuild()
//
// A multi-pattern rule's matches are the joins of its patterns' matches on
// their shared variables; of the matches that differ only by swapping
// interchangeable patterns (Rule::interchangeable), one is found. Applying adds each right-hand
// result and merges it with the class its pattern matched; a match whose results do not fit in the
// budget is not applied, and applying stops there.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "saturn/egraph/egraph.h"
#include "saturn/rules/rule.h"

namespace saturn {

struct RuleMatches {
  std::size_t num_patterns = 1;
  std::size_t num_vars = 0;
  std::vector<Id> roots;   // num_patterns per match: the class each pattern matched
  std::vector<Id> substs;  // num_vars per match

  std::size_t size() const { return num_patterns == 0 ? 0 : roots.size() / num_patterns; }
  std::span<const Id> roots_of(std::size_t i) const {
    return {roots.data() + i * num_patterns, num_patterns};
  }
  std::span<const Id> subst(std::size_t i) const {
    return {substs.data() + i * num_vars, num_vars};
  }
  // Empties the buffers, keeping their memory.
  void clear() {
    roots.clear();
    substs.clear();
  }
};

// Finds the rule's matches in the rebuilt e-graph, at most `limit`.
RuleMatches search_rule(const EGraph& egraph, const Rule& rule,
                        std::size_t limit = std::numeric_limits<std::size_t>::max());
// The same into `out`, whose buffers are reused (a runner searches each rule
// every iteration).
void search_rule(const EGraph& egraph, const Rule& rule, std::size_t limit, RuleMatches& out);

struct ApplyResult {
  std::size_t applied = 0;           // matches whose results changed the e-graph
  std::size_t skipped = 0;           // matches whose conditions failed or did not type-check
  // Matches whose result's type differs from the matched class's: the rule
  // is unsound there, and nothing of the match was merged.
  std::size_t conflicts = 0;
  std::optional<AddStatus> stopped;  // set when the budget stopped the application
};

// Applies the matches (those listed in `which`, or all) of `rule`.
ApplyResult apply_rule(EGraph& egraph, const Rule& rule, const RuleMatches& matches,
                       std::span<const std::size_t> which = {});

// Adds `pattern` instantiated with `subst`. Nothing is added unless all its
// missing nodes fit in the node budget; `status` tells why it failed.
std::optional<Id> instantiate(EGraph& egraph, const Pattern& pattern, std::span<const Id> subst,
                              AddStatus* status = nullptr);

}  // namespace saturn

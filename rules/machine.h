// E-matching: finding every place a pattern occurs in an e-graph.
//
// A pattern compiles to a short program (egg's abstract machine): `bind`
// walks the nodes of a class that have the wanted operator and puts their
// children in registers; `compare` checks that a repeated variable matched
// the same class. Candidate roots come from the e-graph's by-operator index.
//
//   PatternMatches m;
//   search_pattern(egraph, pattern, rule.num_vars(), m);
//   for (std::size_t i = 0; i < m.size(); ++i) use(m.roots[i], m.subst(i));
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "saturn/egraph/egraph.h"
#include "saturn/rules/pattern.h"

namespace saturn {

struct PatternMatches {
  std::size_t num_vars = 0;
  std::vector<Id> roots;   // the class each match is rooted at
  std::vector<Id> substs;  // num_vars values per match; invalid = not bound

  std::size_t size() const { return roots.size(); }
  std::span<const Id> subst(std::size_t i) const {
    return {substs.data() + i * num_vars, num_vars};
  }
  void clear() {
    roots.clear();
    substs.clear();
  }
};

// Appends the matches of `pattern` in the rebuilt `egraph`, stopping after
// `limit` matches. `num_vars` is the rule's variable count.
void search_pattern(const EGraph& egraph, const Pattern& pattern, std::size_t num_vars,
                    PatternMatches& out,
                    std::size_t limit = std::numeric_limits<std::size_t>::max());

}  // namespace saturn

// Lower bounds (and optima) by derivation search: extraction seen as the
// cheapest set of nodes from which the roots can be derived bottom up.
//
// A selection is acyclic exactly when its classes can be derived one by one,
// each from children derived before it. So the cheapest selection is the
// cheapest set of nodes whose bottom-up derivation reaches the roots, and a
// uniform-cost search over the sets of derived classes finds it: a state is
// a set of derived classes, a step pays for one node whose children are all
// derived, and zero-cost nodes join a state for free. The LP relaxation of
// the integer program cannot see this on e-graphs whose zero-cost
// Split/Concat round trips derive a class from itself; on TENSAT's cyclic
// VGG it bounds those parts near zero.
//
// The search is exponential in general, so it first splits the problem at
// separator classes: a class that dominates (from the roots) every class it
// reaches is entered only through itself, so its cheapest derivation does
// not depend on the rest. Each part is searched with the separators below it
// as leaves that cost their own part's optimum.
//
//   DerivationSearchOptions options{.ignore_below = 1e-4, .seconds = 5};
//   std::optional<DerivationBound> b = derivation_search(problem, free, usable, options);
//   if (b) use(b->lower_bound, b->selection);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "saturn/extract/problem.h"

namespace saturn {

struct DerivationSearchOptions {
  // Node costs below this count as zero in the search, which keeps the
  // number of states small (a handful of tiny costs would otherwise be
  // tried in every combination). The bound stays valid: it drops by at most
  // the ignored costs of the optimum. Default 0.
  double ignore_below = 0;
  double seconds = 1;                  // default 1 s for all parts together
  std::size_t max_states = 2'000'000;  // default 2 million over all parts (memory)
};

struct DerivationBound {
  double lower_bound = 0;  // no selection of the problem costs less
  // A selection that costs lower_bound when ignored costs count as zero.
  Selection selection;
  std::size_t states = 0;  // states reached in all parts
  int parts = 0;           // parts the problem split into
};

// Searches the selections of `problem` made of usable nodes (usable[n]),
// where class c with free[c] >= 0 is decided up front at no cost (its node is
// free[c], and its children are free too). Returns nothing when the search
// runs out of time or states.
std::optional<DerivationBound> derivation_search(const ExtractionProblem& problem,
                                                 std::span<const std::int32_t> free,
                                                 const std::vector<bool>& usable,
                                                 const DerivationSearchOptions& options);

}  // namespace saturn

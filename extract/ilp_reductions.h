// The reductions behind IlpExtractor's program (see the overview in ilp.cc):
// the nodes worth a column, the classes every solution needs or that another
// class needs, and the problem without the nodes reduced-cost fixing drops.
// Internal to extract/ (namespace saturn::ilp_detail).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "saturn/extract/problem.h"

namespace saturn::ilp_detail {

// The nodes left for the program once the problem shrinks: classes the
// roots cannot reach go; "free" classes (a zero-cost node whose children
// are free) are decided up front; a node goes when it is its own child,
// when a child class cannot be derived at all, or when another node of its
// class costs no more and needs a subset of its children.
struct ReducedNodes {
  std::vector<std::int32_t> free;   // per class: its node if decided up front, else -1
  std::vector<bool> never_needed;   // per node: dominated, its own child, or underivable
  std::vector<std::uint32_t> kept;  // the nodes left, class by class
  std::vector<std::vector<std::uint32_t>> kids;  // per node kept: needed child classes
};
ReducedNodes reduce_nodes(const ExtractionProblem& p);

// The program's columns seen from the classes, built once.
struct ColumnIndex {
  std::vector<int> per_class;             // how many columns each class has
  std::vector<std::vector<int>> readers;  // per class: the columns with it as a child
  std::vector<std::uint32_t> class_of;    // per column: its node's class

  ColumnIndex(const ExtractionProblem& p, const std::vector<std::uint32_t>& node_of,
              const std::vector<std::vector<std::uint32_t>>& kids_of)
      : per_class(p.num_classes(), 0), readers(p.num_classes()), class_of(node_of.size()) {
    for (std::size_t col = 0; col < node_of.size(); ++col) {
      class_of[col] = p.node_class[node_of[col]];
      ++per_class[class_of[col]];
      for (std::uint32_t k : kids_of[col]) readers[k].push_back(static_cast<int>(col));
    }
  }
};

// The classes without which the roots cannot be derived, other than the
// roots: every solution needs them. The plain rows let the LP pay half of a
// class needed by both of two half-chosen alternatives (say a(bc) and (ab)c
// both need a); a row X(k) >= 1 stops that for the classes all
// alternatives need. Only classes of `known`, a valid selection, can be
// needed by every solution; each is tested by deriving the roots without it.
std::vector<std::uint32_t> mandatory_classes(const ExtractionProblem& p,
                                             const std::vector<std::vector<std::uint32_t>>& kids_of,
                                             const ColumnIndex& columns, const Selection& known);

// Which classes each class needs: d is needed by c when no acyclic selection
// derives c without d (c is then underivable with d banned). Any selection
// that chooses c chooses d, so X(d) >= X(c). These rows stop the LP from
// paying a fraction of a class that every alternative of a reader needs:
// with Relu(Conv(x)) and a fused ConvRelu(x) half-chosen each, the plain
// child rows ask for half of x, and down a chain of layers the halves
// compound (on VGG's acyclic file an LP of only the root and child rows
// bounds the cost at 1.82 against the optimum 4.87; these rows close it).
// Returns (d, c) pairs, transitively reduced: c needs e and e needs d
// imply the row for (d, c). Empty when one derivation per class would
// cost more than `work_limit` steps in all.
std::vector<std::pair<std::uint32_t, std::uint32_t>> needed_classes(
    const ExtractionProblem& p, const std::vector<std::vector<std::uint32_t>>& kids_of,
    const ColumnIndex& columns, double work_limit);

// The problem without the nodes `drop` marks; its classes and roots are
// p's. `kept` receives, per remaining node, its index in p.
ExtractionProblem without_nodes(const ExtractionProblem& p, const std::vector<bool>& drop,
                                std::vector<std::uint32_t>& kept);

}  // namespace saturn::ilp_detail

// Which e-classes reach which through their nodes' children, in one state of
// an e-graph: TENSAT-style cycle filtering asks it for every match of a
// multi-pattern rule.
//
//   ClassReach reach(egraph);         // after a rebuild; invalid once it changes
//   if (reach.reaches(var, root)) ... // root is var, or below it
//
// The classes are ranked by their strongly connected components in reverse
// topological order (graph::strong_components): a class reaches only classes
// of lower or equal rank. What a component reaches is a bitset over the
// components, built when first asked for from its successors' bitsets, so a
// state answers many questions for about the price of one pass over it.
// Bitsets for every component would take components^2 / 8 bytes: beyond
// kMaxBitsetBytes (a saturated e-graph of 100,000 classes, say) each
// question is a search instead, over components ranked between the two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "saturn/base/graph.h"
#include "saturn/egraph/egraph.h"

namespace saturn {

class ClassReach {
 public:
  // Bitsets up to `max_bitset_bytes` (the tests force searches with 0).
  explicit ClassReach(std::size_t max_bitset_bytes = kMaxBitsetBytes)
      : max_bitset_bytes_(max_bitset_bytes) {}
  // Ranks the classes of `egraph`'s current state (buffers are kept from the
  // previous state).
  void rank(const EGraph& egraph);

  // The class's rank; classes made after rank() rank above all others.
  std::uint32_t rank_of(Id canonical) const {
    return canonical.index() < rank_.size() ? rank_[canonical.index()] : kUnranked;
  }
  // Whether `to` is `from` or reached from it through children (both
  // canonical and ranked).
  bool reaches(Id from, Id to);

  static constexpr std::uint32_t kUnranked = ~std::uint32_t{0};
  static constexpr std::size_t kMaxBitsetBytes = std::size_t{64} << 20;

 private:
  const std::vector<std::uint64_t>& reach_of(std::uint32_t component);
  bool search(std::uint32_t from, std::uint32_t to);

  std::vector<std::uint32_t> rank_;  // per class id: its component
  graph::Successors class_succ_;     // per class (in class_ids() order)
  graph::Successors component_succ_;
  std::vector<std::vector<std::uint64_t>> reach_;  // per component, empty until asked for
  std::vector<std::pair<std::uint32_t, std::size_t>> stack_;  // reach_of's
  std::size_t max_bitset_bytes_;
  bool bitsets_ = true;              // false: search() answers, see above
  std::vector<std::uint32_t> seen_;  // search()'s marks: the epoch of the search that saw it
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> todo_;
};

}  // namespace saturn

// An e-node: an operator symbol, an interned attribute set and child e-classes.
//
//   ENode plus(lang.find("+").value(), kNoAttributes, {a, b});
//   Id sum = egraph.add(plus).id;
#pragma once

#include <algorithm>
#include <initializer_list>
#include <span>

#include "absl/container/inlined_vector.h"
#include "egraph/id.h"

namespace saturn {

struct ENode {
  using Children = absl::InlinedVector<Id, 3>;

  Symbol op;
  AttrId attrs = kNoAttributes;
  Children children;

  ENode() = default;
  ENode(Symbol op_, AttrId attrs_, std::initializer_list<Id> kids = {})
      : op(op_), attrs(attrs_), children(kids) {}
  ENode(Symbol op_, AttrId attrs_, std::span<const Id> kids)
      : op(op_), attrs(attrs_), children(kids.begin(), kids.end()) {}

  bool is_leaf() const { return children.empty(); }
  std::size_t arity() const { return children.size(); }

  // Bytes this node occupies when stored (inline part plus any heap part).
  std::size_t stored_bytes() const {
    return sizeof(ENode) + (children.size() > 3 ? children.size() * sizeof(Id) : 0);
  }

  friend bool operator==(const ENode& a, const ENode& b) {
    return a.op == b.op && a.attrs == b.attrs && a.children == b.children;
  }
  // Orders by operator first, so that a class's nodes with one operator are
  // contiguous once sorted.
  friend bool operator<(const ENode& a, const ENode& b) {
    if (a.op != b.op) return a.op < b.op;
    if (a.attrs != b.attrs) return a.attrs < b.attrs;
    return std::lexicographical_compare(a.children.begin(), a.children.end(), b.children.begin(),
                                        b.children.end());
  }
  template <typename H>
  friend H AbslHashValue(H h, const ENode& n) {
    return H::combine(H::combine_contiguous(std::move(h), n.children.data(), n.children.size()),
                      n.op, n.attrs, n.children.size());
  }
};

}  // namespace saturn

// An e-node: an operator symbol, an interned attribute set and child e-classes.
//
//   ENode plus(lang.find("+").value(), kNoAttributes, {a, b});
//   Id sum = egraph.add(plus).id;
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "absl/container/inlined_vector.h"
#include "saturn/egraph/id.h"

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
    if (a.head() != b.head()) return a.head() < b.head();
    const Id* x = a.children.data();
    const Id* y = b.children.data();
    return std::lexicographical_compare(x, x + a.children.size(), y, y + b.children.size());
  }
  // Operator and attributes in one word: compared and hashed together.
  std::uint64_t head() const { return (std::uint64_t{op.value} << 32) | attrs.value; }
  // The hash-cons hashes every node it meets: one multiply per child here,
  // and absl mixes the result once.
  template <typename H>
  friend H AbslHashValue(H h, const ENode& n) {
    constexpr std::uint64_t kOdd = 0x9e3779b97f4a7c15ull;
    std::uint64_t x = n.head() * kOdd;
    for (Id c : n.children) x = (x ^ c.value) * kOdd + 1;
    return H::combine(std::move(h), x);
  }
};

}  // namespace saturn

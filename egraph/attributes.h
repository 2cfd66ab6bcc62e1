// Operator attributes (a conv's strides, a transpose's permutation, a number's
// value) and their interning table.
//
// E-nodes hold an `AttrId`, so two nodes with the same operator but different
// attributes are different nodes, and comparing attributes is comparing ids:
//
//   AttrTable table;
//   AttrId a = table.intern(Attributes{{"strides", std::vector<int64_t>{2, 2}}});
//   table.get(a).get_ints("strides");  // {2, 2}
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "saturn/egraph/id.h"

namespace saturn {

using AttrValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;

// Formats a value as the rule language writes it: 2, 0.5, relu, "a b", [1,0].
std::string format_attr_value(const AttrValue& value);

struct Attribute {
  std::string key;
  AttrValue value;
  // Values compare as the interning table needs: a NaN equals a NaN (a
  // model may give one as a scale), so that equal sets hash alike and
  // intern once.
  friend bool operator==(const Attribute& a, const Attribute& b) {
    if (a.key != b.key || a.value.index() != b.value.index()) return false;
    if (const double* x = std::get_if<double>(&a.value)) {
      const double y = std::get<double>(b.value);
      return *x == y || (std::isnan(*x) && std::isnan(y));
    }
    return a.value == b.value;
  }
  friend auto operator<=>(const Attribute&, const Attribute&) = default;
};

// A set of key/value attributes, kept sorted by key.
class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<Attribute> entries);

  // Sets `key` to `value`, replacing an earlier value.
  void set(std::string_view key, AttrValue value);
  // The value of `key`, or null when absent.
  const AttrValue* find(std::string_view key) const;
  std::optional<std::int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  const std::string* get_string(std::string_view key) const;
  const std::vector<std::int64_t>* get_ints(std::string_view key) const;

  const std::vector<Attribute>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  // `{key=value, ...}`, or "" when empty.
  std::string to_string() const;
  // Bytes of heap memory held, for budget accounting.
  std::size_t heap_bytes() const;

  friend bool operator==(const Attributes&, const Attributes&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const Attributes& a) {
    for (const Attribute& e : a.entries_) {
      h = H::combine(std::move(h), e.key, e.value.index());
      const double* number = std::get_if<double>(&e.value);
      if (number != nullptr && std::isnan(*number)) {
        h = H::combine(std::move(h), std::string_view("nan"));
      } else {
        h = std::visit([&h](const auto& v) { return H::combine(std::move(h), v); }, e.value);
      }
    }
    return H::combine(std::move(h), a.entries_.size());
  }

 private:
  std::vector<Attribute> entries_;
};

// Interns attribute sets. Append-only, except `truncate` (used by rollback).
class AttrTable {
 public:
  AttrTable();

  AttrId intern(const Attributes& attributes);
  std::optional<AttrId> find(const Attributes& attributes) const;
  const Attributes& get(AttrId id) const { return sets_[id.index()]; }
  std::size_t size() const { return sets_.size(); }
  // Bytes held by the interned sets (counted in an e-graph's byte budget).
  std::size_t bytes() const { return bytes_; }
  // Forgets every set interned after the first `n`.
  void truncate(std::size_t n);

 private:
  // A deque, so references from get() stay valid while new sets are interned
  // (e-matching interns attribute values while it reads node attributes).
  std::deque<Attributes> sets_;
  absl::flat_hash_map<Attributes, AttrId> index_;
  std::size_t bytes_ = 0;
};

}  // namespace saturn

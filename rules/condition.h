// Named rule conditions: predicates over the classes a match binds, written
// in rule files as `if (is-nonzero ?a)`. A language registers its own.
//
//   ConditionRegistry conditions;
//   conditions.add("is-nonzero", 1, [&](const EGraph& g, std::span<const Id> a) {
//     return folding.constant(g.find(a[0])) != 0.0;
//   }, "the class is a known non-zero constant");
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "saturn/egraph/egraph.h"

namespace saturn {

using ConditionFn = std::function<bool(const EGraph&, std::span<const Id>)>;
// An attribute function computes an attribute value for a rule's right side
// from the classes (and attribute values) a match binds, written
// `Split{split=(last-dims ?b ?c)}`; nullopt means the rule does not apply.
using AttrFunctionFn = std::function<std::optional<AttrValue>(const EGraph&, std::span<const Id>)>;

class ConditionRegistry {
 public:
  struct Entry {
    std::string name;
    int arity;
    ConditionFn fn;
    std::string doc;
    bool symmetric = false;  // holds for any order of its arguments, like `distinct`
  };

  // Starts with the built-in `(distinct ?a ?b)`: the two are different classes.
  ConditionRegistry();

  struct Function {
    std::string name;
    int arity;  // -1: any number of arguments
    AttrFunctionFn fn;
    std::string doc;
  };

  // Registers (or replaces) a condition; returns its entry (to mark it symmetric).
  Entry& add(std::string_view name, int arity, ConditionFn fn, std::string doc = "");
  const Entry* find(std::string_view name) const;
  const std::vector<Entry>& entries() const { return entries_; }

  // Registers (or replaces) an attribute function.
  void add_function(std::string_view name, int arity, AttrFunctionFn fn, std::string doc = "");
  const Function* find_function(std::string_view name) const;
  const std::deque<Function>& functions() const { return functions_; }

 private:
  std::vector<Entry> entries_;
  std::deque<Function> functions_;  // stable addresses: patterns point at them
};

}  // namespace saturn

#include "saturn/rules/condition.h"

namespace saturn {

ConditionRegistry::ConditionRegistry() {
  add(
      "distinct", 2,
      [](const EGraph& g, std::span<const Id> args) { return g.find(args[0]) != g.find(args[1]); },
      "the two arguments are different e-classes")
      .symmetric = true;
}

ConditionRegistry::Entry& ConditionRegistry::add(std::string_view name, int arity, ConditionFn fn,
                                                 std::string doc) {
  Entry entry{std::string(name), arity, std::move(fn), std::move(doc)};
  for (Entry& e : entries_) {
    if (e.name == name) return e = std::move(entry);
  }
  return entries_.emplace_back(std::move(entry));
}

const ConditionRegistry::Entry* ConditionRegistry::find(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

void ConditionRegistry::add_function(std::string_view name, int arity, AttrFunctionFn fn,
                                     std::string doc) {
  for (Function& f : functions_) {
    if (f.name == name) {
      f = Function{std::string(name), arity, std::move(fn), std::move(doc)};
      return;
    }
  }
  functions_.push_back(Function{std::string(name), arity, std::move(fn), std::move(doc)});
}

const ConditionRegistry::Function* ConditionRegistry::find_function(std::string_view name) const {
  for (const Function& f : functions_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace saturn

// Rewrite rules and rule sets.
//
// A rule has one or more left-hand patterns and as many right-hand results;
// each result joins the class its pattern matched. With several patterns
// (a multi-pattern rule) the patterns must match together, agreeing on the
// variables they share. Conditions must hold for a match to be applied.
//
//   absl::StatusOr<RuleSet> rules = load_rules("rules/math/math.rules", lang, conditions);
//   for (const Rule& r : rules->rules()) fmt::print("{} {}\n", r.name, r.group);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "saturn/egraph/sexpr.h"
#include "saturn/rules/condition.h"
#include "saturn/rules/pattern.h"

namespace saturn {

struct RuleCondition {
  const ConditionRegistry::Entry* predicate;
  std::vector<int> args;  // variable indices
};

struct Rule {
  std::string name;
  std::string group;  // the `group` the rule was declared under ("" if none)
  std::vector<Pattern> lhs;
  std::vector<Pattern> rhs;  // rhs[i] joins the class lhs[i] matched
  std::vector<RuleCondition> conditions;
  // Must hold of every class a left-hand pattern matched, beside the
  // conditions (null: nothing): the element types the language's rules
  // hold for unless they say (rules/tensor/tensor_rules.h).
  const ConditionRegistry::Entry* root_condition = nullptr;
  std::vector<std::string> var_names;  // "?a" for variable 0, ...
  std::vector<bool> attr_vars;         // whether variable i is an attribute value
  std::string file;
  SourceLoc loc;
  // Pairs (i, j), i < j, of interchangeable left-hand patterns: renaming
  // variables swaps the two and leaves the other patterns and the conditions
  // as they are. Matches that differ only by such a swap make the same
  // rewrite with the parts in another order, so search keeps only the match
  // whose pattern i matched a lower class than pattern j (see
  // find_interchangeable_patterns).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> interchangeable;

  bool is_multi() const { return lhs.size() > 1; }
  std::size_t num_vars() const { return var_names.size(); }
  // "single" or "multi".
  const char* kind() const { return is_multi() ? "multi" : "single"; }
  // The rule written back in the rule language.
  std::string to_string(const Language& language) const;
};

// Fills `rule.interchangeable`: with k interchangeable patterns, one of
// the k! orderings of a match remains instead of all of them.
void find_interchangeable_patterns(Rule& rule);

class RuleSet {
 public:
  const std::vector<Rule>& rules() const { return rules_; }
  std::size_t size() const { return rules_.size(); }
  const Rule& operator[](std::size_t i) const { return rules_[i]; }
  const Rule* find(std::string_view name) const;
  void add(Rule rule) { rules_.push_back(std::move(rule)); }
  // Appends another set's rules.
  void append(const RuleSet& other);

 private:
  std::vector<Rule> rules_;
};

}  // namespace saturn

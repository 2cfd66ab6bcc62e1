#include "rules/rule.h"

namespace saturn {

std::string Rule::to_string(const Language& language) const {
  auto side = [&](const std::vector<Pattern>& patterns) {
    std::string out;
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      if (i > 0) out += ", ";
      out += patterns[i].to_string(language, var_names);
    }
    return out;
  };
  std::string out = "rule " + name + ": " + side(lhs) + " => " + side(rhs);
  for (std::size_t i = 0; i < conditions.size(); ++i) {
    out += i == 0 ? " if (" : " (";
    out += conditions[i].predicate->name;
    for (int v : conditions[i].args) out += " " + var_names[v];
    out += ")";
  }
  return out;
}

const Rule* RuleSet::find(std::string_view name) const {
  for (const Rule& r : rules_) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

void RuleSet::append(const RuleSet& other) {
  rules_.insert(rules_.end(), other.rules_.begin(), other.rules_.end());
}

}  // namespace saturn

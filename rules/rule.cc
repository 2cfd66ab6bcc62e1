#include "saturn/rules/rule.h"

#include <algorithm>
#include <optional>

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

namespace {

// A variable renaming: sigma[v] is what variable v becomes.
using Renaming = std::vector<int>;

// Whether renaming `from` by `sigma` gives `to`, node for node.
bool renames_to(const Pattern& from, const Pattern& to, const Renaming& sigma) {
  if (from.nodes.size() != to.nodes.size()) return false;
  for (std::size_t i = 0; i < from.nodes.size(); ++i) {
    const PatternNode& a = from.nodes[i];
    const PatternNode& b = to.nodes[i];
    if (a.is_var() != b.is_var()) return false;
    if (a.is_var()) {
      if (sigma[a.var] != b.var) return false;
      continue;
    }
    if (a.op != b.op || !(a.attributes == b.attributes) || a.children != b.children ||
        a.attr_vars.size() != b.attr_vars.size() || !a.attr_calls.empty() || !b.attr_calls.empty())
      return false;
    for (std::size_t k = 0; k < a.attr_vars.size(); ++k) {
      if (a.attr_vars[k].key != b.attr_vars[k].key ||
          sigma[a.attr_vars[k].var] != b.attr_vars[k].var)
        return false;
    }
  }
  return true;
}

// The renaming that maps pattern `a` onto `b` and `b` onto `a` (an
// involution fixing every other variable), if there is one.
std::optional<Renaming> swap_renaming(const Pattern& a, const Pattern& b, std::size_t num_vars) {
  if (a.nodes.size() != b.nodes.size()) return std::nullopt;
  Renaming sigma(num_vars, -1);
  auto bind = [&](int from, int to) {
    if (sigma[from] != -1 && sigma[from] != to) return false;
    if (sigma[to] != -1 && sigma[to] != from) return false;
    sigma[from] = to;
    sigma[to] = from;
    return true;
  };
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const PatternNode& x = a.nodes[i];
    const PatternNode& y = b.nodes[i];
    if (x.is_var() != y.is_var()) return std::nullopt;
    if (x.is_var() && !bind(x.var, y.var)) return std::nullopt;
    if (!x.is_var() && x.attr_vars.size() == y.attr_vars.size()) {
      for (std::size_t k = 0; k < x.attr_vars.size(); ++k) {
        if (!bind(x.attr_vars[k].var, y.attr_vars[k].var)) return std::nullopt;
      }
    }
  }
  for (std::size_t v = 0; v < num_vars; ++v) {
    if (sigma[v] == -1) sigma[v] = static_cast<int>(v);
  }
  if (!renames_to(a, b, sigma) || !renames_to(b, a, sigma)) return std::nullopt;
  return sigma;
}

// Whether the conditions, renamed, are the same set of conditions.
bool conditions_invariant(const std::vector<RuleCondition>& conditions, const Renaming& sigma) {
  using Key = std::pair<const ConditionRegistry::Entry*, std::vector<int>>;
  auto key = [](const RuleCondition& c, const Renaming* rename) {
    Key k{c.predicate, c.args};
    if (rename)
      for (int& v : k.second) v = (*rename)[v];
    if (c.predicate->symmetric) std::sort(k.second.begin(), k.second.end());
    return k;
  };
  std::vector<Key> present;
  for (const RuleCondition& c : conditions) present.push_back(key(c, nullptr));
  return std::all_of(conditions.begin(), conditions.end(), [&](const RuleCondition& c) {
    return std::find(present.begin(), present.end(), key(c, &sigma)) != present.end();
  });
}

}  // namespace

void find_interchangeable_patterns(Rule& rule) {
  rule.interchangeable.clear();
  for (std::uint32_t i = 0; i < rule.lhs.size(); ++i) {
    for (std::uint32_t j = i + 1; j < rule.lhs.size(); ++j) {
      std::optional<Renaming> sigma = swap_renaming(rule.lhs[i], rule.lhs[j], rule.num_vars());
      if (!sigma || !conditions_invariant(rule.conditions, *sigma)) continue;
      bool others_fixed = true;
      for (std::uint32_t k = 0; k < rule.lhs.size() && others_fixed; ++k) {
        if (k != i && k != j) others_fixed = renames_to(rule.lhs[k], rule.lhs[k], *sigma);
      }
      if (others_fixed) rule.interchangeable.emplace_back(i, j);
    }
  }
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

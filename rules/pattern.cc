#include "saturn/rules/pattern.h"

#include <algorithm>

namespace saturn {

std::vector<int> Pattern::variables() const {
  std::vector<int> vars;
  for (const PatternNode& n : nodes) {
    if (n.is_var() && std::find(vars.begin(), vars.end(), n.var) == vars.end()) {
      vars.push_back(n.var);
    }
    for (const AttrVar& a : n.attr_vars) {
      if (std::find(vars.begin(), vars.end(), a.var) == vars.end()) vars.push_back(a.var);
    }
    for (const AttrCall& c : n.attr_calls) {
      for (int v : c.args) {
        if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
      }
    }
  }
  return vars;
}

namespace {

// The operator with its literal and variable attributes, sorted by key.
std::string label(const Language& language, const PatternNode& n,
                  const std::vector<std::string>& var_names) {
  if (n.attr_vars.empty() && n.attr_calls.empty()) return language.node_label(n.op, n.attributes);
  std::vector<std::pair<std::string, std::string>> entries;
  for (const Attribute& a : n.attributes.entries())
    entries.emplace_back(a.key, format_attr_value(a.value));
  for (const AttrVar& a : n.attr_vars) entries.emplace_back(a.key, var_names[a.var]);
  for (const AttrCall& c : n.attr_calls) {
    std::string call = "(" + c.function->name;
    for (int v : c.args) {
      call.push_back(' ');
      call.append(var_names[v]);
    }
    call.push_back(')');
    entries.emplace_back(c.key, std::move(call));
  }
  std::sort(entries.begin(), entries.end());
  std::string out(language.op_name(n.op));
  out.push_back('{');
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out.append(", ");
    out.append(entries[i].first);
    out.push_back('=');
    out.append(entries[i].second);
  }
  out.push_back('}');
  return out;
}

}  // namespace

std::string Pattern::to_string(const Language& language,
                               const std::vector<std::string>& var_names) const {
  std::vector<std::string> text(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const PatternNode& n = nodes[i];
    if (n.is_var()) {
      text[i] = var_names[n.var];
    } else if (n.children.empty()) {
      text[i] = label(language, n, var_names);
    } else {
      std::string& out = text[i];
      out.push_back('(');
      out.append(label(language, n, var_names));
      for (std::uint32_t c : n.children) {
        out.push_back(' ');
        out.append(text[c]);
      }
      out.push_back(')');
    }
  }
  return text.back();
}

}  // namespace saturn

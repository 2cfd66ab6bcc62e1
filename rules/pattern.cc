#include "rules/pattern.h"

#include <algorithm>

namespace saturn {

std::vector<int> Pattern::variables() const {
  std::vector<int> vars;
  for (const PatternNode& n : nodes) {
    if (n.is_var() && std::find(vars.begin(), vars.end(), n.var) == vars.end()) {
      vars.push_back(n.var);
    }
  }
  return vars;
}

std::string Pattern::to_string(const Language& language,
                               const std::vector<std::string>& var_names) const {
  std::vector<std::string> text(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const PatternNode& n = nodes[i];
    if (n.is_var()) {
      text[i] = var_names[n.var];
    } else if (n.children.empty()) {
      text[i] = language.node_label(n.op, n.attributes);
    } else {
      std::string& out = text[i];
      out.push_back('(');
      out.append(language.node_label(n.op, n.attributes));
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

// Patterns: terms with `?variables`, read from the rule language.
//
//   (+ ?a (* ?b 2))
//
// A pattern is a flat list of nodes in post-order (children first, root
// last). Variables are numbered per rule, so the patterns of one rule share
// them. A variable stands for an e-class, or, written as an attribute value
// (`(Transpose{perm=?p} ?x)`), for an attribute value; a substitution holds
// the latter as EGraph::intern_value handles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "saturn/egraph/attributes.h"
#include "saturn/egraph/id.h"
#include "saturn/egraph/language.h"
#include "saturn/rules/condition.h"

namespace saturn {

// An attribute whose value is a variable: `Conv{strides=?s}`.
struct AttrVar {
  std::string key;
  int var;
};

// An attribute computed on the right side: `Split{split=(last-dims ?b ?c)}`.
struct AttrCall {
  std::string key;
  const ConditionRegistry::Function* function;
  std::vector<int> args;  // variables
};

struct PatternNode {
  int var = -1;                         // >= 0: a variable
  Symbol op;                            // otherwise: an operator
  Attributes attributes;                // with literal attributes (normalized)
  std::vector<std::uint32_t> children;  // indices of earlier nodes
  std::vector<AttrVar> attr_vars;       // attributes bound to variables
  std::vector<AttrCall> attr_calls;     // attributes computed by functions (right side)

  bool is_var() const { return var >= 0; }
};

struct Pattern {
  std::vector<PatternNode> nodes;  // post-order; root last

  const PatternNode& root() const { return nodes.back(); }
  // Variables used, in order of first use.
  std::vector<int> variables() const;
  // The pattern written back as text (`var_names` names the variables).
  std::string to_string(const Language& language, const std::vector<std::string>& var_names) const;
};

}  // namespace saturn

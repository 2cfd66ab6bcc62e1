// Reading terms into an e-graph:
//
//   absl::StatusOr<Id> id = add_term(egraph, "(+ x (* 2 y))");
//
// A bare token is a leaf of the language (`x`, `2`) or a nullary operator;
// a list is an operator applied to children, checked against its arity.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "saturn/egraph/egraph.h"
#include "saturn/egraph/sexpr.h"

namespace saturn {

// The operator and attributes an atom or list head names, for a node with
// `arity` children; the attributes are normalized by the language.
// Attribute values must be literals, unless `variables` is given: then
// `key=?v` and `key=(fn ...)` entries are collected there (and left out of
// `attributes`).
struct ResolvedOp {
  Symbol op;
  Attributes attributes;
};
struct AttrVariable {
  std::string key;
  const SExpr* variable;  // a `?v` atom, or a `(fn ?a ...)` list
};
absl::StatusOr<ResolvedOp> resolve_operator(const Language& language, const SExpr& head,
                                            std::size_t arity, bool is_list,
                                            const SExprReader& reader,
                                            std::vector<AttrVariable>* variables = nullptr);

// Adds the term `expr` (read by `reader`) and returns its class.
absl::StatusOr<Id> add_sexpr(EGraph& egraph, const SExpr& expr, const SExprReader& reader);
// Parses and adds one term.
absl::StatusOr<Id> add_term(EGraph& egraph, std::string_view text,
                            std::string_view source_name = "<term>");

}  // namespace saturn

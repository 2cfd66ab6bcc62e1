#include "saturn/egraph/term.h"

#include "saturn/base/status.h"
#include "fmt/format.h"

namespace saturn {

absl::StatusOr<ResolvedOp> resolve_operator(const Language& language, const SExpr& head,
                                            std::size_t arity, bool is_list,
                                            const SExprReader& reader,
                                            std::vector<AttrVariable>* variables) {
  if (head.kind != SExpr::Kind::kAtom) {
    return reader.error(head.loc, "expected an operator name");
  }
  ResolvedOp out;
  std::vector<std::string> open_keys;
  for (const auto& [key, value] : head.attrs) {
    if ((value.is_variable() || value.is_list()) && variables != nullptr) {
      variables->push_back(AttrVariable{key, &value});
      open_keys.push_back(key);
      continue;
    }
    if (value.is_variable() || value.is_list()) {
      return reader.error(value.loc, fmt::format("attribute '{}' must be a literal here", key));
    }
    absl::StatusOr<AttrValue> v = to_attr_value(value, reader);
    if (!v.ok()) return v.status();
    out.attributes.set(key, *std::move(v));
  }
  if (!is_list && !head.has_attrs) {
    if (auto leaf = language.parse_leaf(head.text)) {
      out.op = leaf->op;
      out.attributes = std::move(leaf->attributes);
      return out;
    }
  }
  std::optional<Symbol> op = language.find(head.text);
  if (!op) {
    return reader.error(head.loc, fmt::format("unknown operator '{}' in language '{}'", head.text,
                                              language.name()));
  }
  if (!language.accepts_arity(*op, arity)) {
    return reader.error(head.loc, fmt::format("operator '{}' takes {} arguments but is given {}",
                                              head.text, language.info(*op).arity, arity));
  }
  out.op = *op;
  absl::StatusOr<Attributes> normalized =
      language.normalize(*op, std::move(out.attributes), open_keys);
  if (!normalized.ok()) return reader.error(head.loc, std::string(message(normalized.status())));
  out.attributes = *std::move(normalized);
  return out;
}

absl::StatusOr<Id> add_sexpr(EGraph& egraph, const SExpr& expr, const SExprReader& reader) {
  if (expr.kind == SExpr::Kind::kString || expr.kind == SExpr::Kind::kVector) {
    return reader.error(expr.loc, "expected a term");
  }
  if (expr.is_variable()) {
    return reader.error(expr.loc, fmt::format("a term cannot hold the variable '{}'", expr.text));
  }
  const bool is_list = expr.is_list();
  const std::size_t arity = is_list ? expr.items.size() - 1 : 0;
  absl::StatusOr<ResolvedOp> head =
      resolve_operator(egraph.language(), expr.head(), arity, is_list, reader);
  if (!head.ok()) return head.status();
  ENode node(head->op, egraph.attrs().intern(head->attributes));
  for (std::size_t i = 1; is_list && i < expr.items.size(); ++i) {
    absl::StatusOr<Id> child = add_sexpr(egraph, expr.items[i], reader);
    if (!child.ok()) return child.status();
    node.children.push_back(*child);
  }
  AddResult r = egraph.add(std::move(node));
  if (!r.ok()) {
    return reader.error(expr.loc, r.status == AddStatus::kRejected
                                      ? "the term does not fit its operator"
                                      : "the e-graph budget is full");
  }
  return r.id;
}

absl::StatusOr<Id> add_term(EGraph& egraph, std::string_view text, std::string_view source_name) {
  SExprReader reader(text, std::string(source_name));
  absl::StatusOr<SExpr> expr = reader.read();
  if (!expr.ok()) return expr.status();
  if (!reader.at_end()) {
    return reader.error(reader.location(), "expected the end of the term");
  }
  return add_sexpr(egraph, *expr, reader);
}

}  // namespace saturn

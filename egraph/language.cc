#include "saturn/egraph/language.h"

namespace saturn {

Symbol Language::add_operator(std::string_view name, int arity) {
  auto [it, inserted] = by_name_.try_emplace(std::string(name), Symbol(operators_.size()));
  if (inserted) operators_.push_back(OperatorInfo{std::string(name), arity});
  return it->second;
}

std::optional<Symbol> Language::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

bool Language::accepts_arity(Symbol op, std::size_t arity) const {
  int expected = info(op).arity;
  return expected == kVariadic || static_cast<std::size_t>(expected) == arity;
}

std::optional<Language::Leaf> Language::parse_leaf(std::string_view) const { return std::nullopt; }

std::string Language::node_label(Symbol op, const Attributes& attributes) const {
  return std::string(op_name(op)) + attributes.to_string();
}

absl::StatusOr<Attributes> Language::normalize(Symbol op, Attributes attributes,
                                               std::span<const std::string> open_keys) const {
  (void)op;
  (void)open_keys;
  return attributes;
}

}  // namespace saturn

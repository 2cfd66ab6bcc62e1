// A language: the operators an e-graph may hold, with their arities, and how
// bare tokens (numbers, variable names) become leaf e-nodes.
//
//   Language lang("math");
//   Symbol plus = lang.add_operator("+", 2);
//   lang.find("+");  // plus
//
// Languages with literal leaves (numbers, symbols) override `parse_leaf` and
// `node_label`; see rules/math/math_language.h.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "saturn/egraph/id.h"

namespace saturn {

struct OperatorInfo {
  std::string name;
  int arity;  // number of children, or Language::kVariadic
};

class Language {
 public:
  static constexpr int kVariadic = -1;

  explicit Language(std::string name) : name_(std::move(name)) {}
  virtual ~Language() = default;
  Language(const Language&) = delete;
  Language& operator=(const Language&) = delete;

  const std::string& name() const { return name_; }

  // Declares an operator; declaring a name twice returns the first symbol.
  Symbol add_operator(std::string_view name, int arity);
  std::optional<Symbol> find(std::string_view name) const;
  const OperatorInfo& info(Symbol op) const { return operators_[op.index()]; }
  std::string_view op_name(Symbol op) const { return operators_[op.index()].name; }
  std::size_t num_operators() const { return operators_.size(); }
  bool accepts_arity(Symbol op, std::size_t arity) const;

  // A bare token read as a leaf node, such as `2.5` or `x`.
  struct Leaf {
    Symbol op;
    Attributes attributes;
  };
  // The leaf a token stands for, or nullopt when the token is not a leaf of
  // this language. The default language has no literal leaves.
  virtual std::optional<Leaf> parse_leaf(std::string_view token) const;
  // How a node is written: the operator name followed by its attributes;
  // languages print literal leaves as their token.
  virtual std::string node_label(Symbol op, const Attributes& attributes) const;
  // The canonical form of `op`'s attributes (defaults filled in, kinds
  // checked), or an error saying what is wrong. Keys in `open_keys` are
  // bound later (pattern variables): they are neither required nor
  // defaulted. Two spellings of one node must normalize to the same set, as
  // nodes are compared by their interned attributes. The default keeps the
  // attributes as written.
  virtual absl::StatusOr<Attributes> normalize(Symbol op, Attributes attributes,
                                               std::span<const std::string> open_keys) const;

 private:
  std::string name_;
  std::vector<OperatorInfo> operators_;
  absl::flat_hash_map<std::string, Symbol> by_name_;
};

}  // namespace saturn

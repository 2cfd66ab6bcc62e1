// Internal to the rule verifier (verifier.cc, verifier_draws.cc): what a
// rule's variables get in one draw, and where draws come from.
//
//   verifier_draws.cc  random draws related as rules relate their operands,
//                      variations of draws that passed, every small shape,
//                      and the attributes fitted to a rule's conditions
//   verifier.cc        each draw's two sides built, evaluated and compared
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "saturn/egraph/attributes.h"
#include "saturn/rules/rule.h"
#include "saturn/tensor/types.h"

namespace saturn::verifier {

using Rng = std::mt19937_64;

// What the verifier gives a rule's variables in one draw: an attribute value
// for each attribute variable, a shape for each tensor variable.
struct Assignment {
  enum class Source : std::uint8_t { kRandom, kVaried, kEnumerated };
  std::vector<AttrValue> attrs;    // per variable; used for attribute variables
  std::vector<tensor::Dims> dims;  // per variable; used for tensor variables
  Source source = Source::kRandom;
};

// The rank hint of a variable a `scalar` condition names.
inline constexpr int kScalar = -1;

// The rule's variables as the samplers see them.
struct RuleVars {
  explicit RuleVars(const Rule& rule);
  const Rule& rule;
  std::vector<std::string> keys;        // per attribute variable: the key it binds
  std::vector<int> ranks;               // per tensor variable: the rank its use expects, 0 for
                                        // any, kScalar for none
  std::vector<tensor::DType> dtypes;    // per tensor variable: a dtype-* condition's, or float32
  std::vector<std::size_t> quantized;   // the variables of a dtype-quantized condition
  // `dtypes` with the quantized variables at one quantized type, drawn.
  std::vector<tensor::DType> draw_dtypes(Rng& rng) const;
  std::vector<std::size_t> same_shape;  // per variable: an earlier one a same-shape condition ties it to
  std::vector<std::size_t> attr, tensor;
};

// Shapes related as rules usually relate their operands: a small alphabet of
// dimensions per draw, and shapes reused from earlier variables. False (and
// the key in `missing`) when an attribute variable's key has no sampler.
bool random_assignment(const RuleVars& vars, Rng& rng, Assignment& a, std::string& missing);

// Neighbours of an assignment that passed (see verifier_draws.cc).
std::vector<Assignment> variations(const RuleVars& vars, const Assignment& a, Rng& rng);

// Every combination of small shapes for a rule with at most two tensor
// variables; empty for larger rules.
std::vector<Assignment> enumerated(const RuleVars& vars, Rng& rng);

}  // namespace saturn::verifier

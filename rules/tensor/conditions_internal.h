// Internal to the tensor rule set's conditions: what conditions.cc (shapes,
// layouts, attention) and conditions_quantization.cc (quantized values and
// integer convolutions) share.
#pragma once

#include <optional>
#include <span>

#include "saturn/egraph/egraph.h"
#include "saturn/rules/condition.h"
#include "saturn/tensor/analysis.h"

namespace saturn::rule_conditions {

inline const tensor::TensorAnalysis& shapes_of(const EGraph& egraph) {
  return static_cast<const tensor::TensorAnalysis&>(*egraph.analysis());
}
inline const tensor::ValueType& type_of(const EGraph& egraph, Id id) {
  return shapes_of(egraph).info(egraph.find(id)).type;
}

// The values of a Constant node in class `id` (a float scalar the model
// gives: the importer makes one of each), or nullopt.
std::optional<tensor::Tensor> constant_values(const EGraph& g, Id id);

// A condition on the values of a weight or constant the model file gives
// (its first argument): false for any other class.
template <bool (*holds)(const tensor::Tensor&)>
bool of_weight_values(const EGraph& g, std::span<const Id> a) {
  if (const tensor::Tensor* values = shapes_of(g).weight_values(g, a[0])) return holds(*values);
  const std::optional<tensor::Tensor> constant = constant_values(g, a[0]);
  return constant && holds(*constant);
}

// The value conditions of conditions_quantization.cc: how the verifier makes
// a drawn zero point all its type's lowest values, a drawn scale positive.
bool make_all_lowest(tensor::Tensor& t);
bool make_all_positive(tensor::Tensor& t);

// Registers dtype-quantized, lowest-values, positive-values and the
// (digit-)sums-exact-in-float32 conditions of integer convolutions.
void add_quantization_conditions(ConditionRegistry& r);

}  // namespace saturn::rule_conditions

// Internal to ort/ (calibrate.cc and signatures.cc): the distinct operator
// signatures calibrate() times, collected from the models and from the
// e-graphs the rules grow from them.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/costmodel/cost_model.h"
#include "saturn/egraph/attributes.h"
#include "saturn/rules/rule.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/types.h"

namespace saturn::ort {

// Each distinct operator signature of the models, in the order first met.
class SignatureCollector {
 public:
  // A signature's operator as first met; `after_conv`: some occurrence
  // reads a convolution's output; `mixed`: some occurrence's inputs may mix
  // convolution outputs with other values.
  struct Occurrence {
    tensor::Op op;
    Attributes attributes;
    std::vector<tensor::ValueType> in;
    std::vector<bool> in_weight;
    tensor::ValueType out;
    bool after_conv = false;
    const tensor::Opsets* opsets = nullptr;  // of the model it comes from
    bool mixed = false;
    bool masked = false;  // some occurrence is a Softmax over masked scores
  };

  // The operators of `graph` (those that cost something).
  absl::Status add_model(const tensor::Graph& graph);
  // The operators the rules can rewrite `graph` into: its e-graph grown
  // under the budget (`explore_nodes`) and every e-node's signature.
  absl::Status add_rewrites(const tensor::Graph& graph, const tensor::TensorLanguage& language,
                            const RuleSet& rules, std::size_t explore_nodes);
  // Each activation fused into a convolution somewhere, after each distinct
  // convolution.
  void add_fused_after_convolutions();

  // The signatures, in the order first met.
  const std::vector<std::string>& order() const { return order_; }
  const Occurrence& at(const std::string& signature) const { return occurrences_.at(signature); }

 private:
  // One occurrence of an operator, in `model`: its signature, or those of
  // its parts when it is priced as them (see priced_as_parts).
  void consider(tensor::Op op, const Attributes& attributes, std::span<const tensor::ValueType> in,
                const std::vector<bool>& in_weight, const tensor::ValueType& out, OpContext context,
                const tensor::Graph& model);
  // One occurrence of a signature.
  void add(tensor::Op op, const Attributes& attributes, std::span<const tensor::ValueType> in,
           const std::vector<bool>& in_weight, const tensor::ValueType& out, OpContext context,
           const tensor::Opsets& opsets);

  std::vector<std::string> order_;
  std::map<std::string, Occurrence> occurrences_;
  // The activations fused into a convolution somewhere: the rules can fuse
  // them into every convolution (fuse-conv-relu), so each is timed after
  // every convolution too.
  std::set<tensor::Op> fused_kinds_;
};

// The signatures of `graphs`' operators and, with `explore_nodes` (see
// CalibrationOptions), of the operators the shipped rules can rewrite them
// into; then each fused activation after each convolution.
absl::StatusOr<SignatureCollector> collect_signatures(
    const std::vector<const tensor::Graph*>& graphs, std::size_t explore_nodes);

}  // namespace saturn::ort

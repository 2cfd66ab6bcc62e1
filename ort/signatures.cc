// The operator signatures calibrate() times. See signatures.h.
#include <array>
#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "saturn/base/status.h"
#include "saturn/costmodel/cost_model.h"
#include "saturn/egraph/egraph.h"
#include "saturn/ort/signatures.h"
#include "saturn/rules/condition.h"
#include "saturn/rules/runner.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/analysis.h"

namespace saturn::ort {

using tensor::Graph;
using tensor::Node;
using tensor::Op;

namespace {

constexpr OpContext kAfterConv{.input = FromConvolution::kYes};

}  // namespace

absl::Status SignatureCollector::add_model(const Graph& graph) {
  absl::StatusOr<std::vector<tensor::ValueType>> types = tensor::infer_types(graph);
  if (!types.ok()) return with_context(types.status(), graph.name);
  const std::vector<bool> weight_only = tensor::weight_only_nodes(graph);
  const std::vector<ValueKinds> kinds = value_kinds(graph, weight_only);
  std::vector<tensor::ValueType> in;
  std::vector<bool> in_weight;
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (is_free_operator(n.op) || weight_only[i]) continue;
    in.clear();
    in_weight.clear();
    for (int x : n.inputs) {
      in.push_back((*types)[x]);
      in_weight.push_back(weight_only[x]);
    }
    consider(n.op, n.attributes, in, in_weight, (*types)[i],
             node_context(graph, weight_only, kinds, i), graph);
  }
  return absl::OkStatus();
}

absl::Status SignatureCollector::add_rewrites(const Graph& graph,
                                              const tensor::TensorLanguage& language,
                                              const RuleSet& rules, std::size_t explore_nodes) {
  tensor::TensorAnalysis shapes;
  EGraph egraph(language, &shapes);
  if (absl::Status s = tensor::add_graph(egraph, graph).status(); !s.ok())
    return with_context(s, graph.name);
  Runner()
      .with_node_limit(explore_nodes)
      .with_iteration_limit(30)
      .with_time_limit(std::chrono::seconds(30))
      .run(egraph, rules);
  const ConvolutionOutputs egraph_conv_outputs(egraph, shapes);
  std::vector<tensor::ValueType> in;
  std::vector<bool> in_weight;
  for (Id id : egraph.class_ids()) {
    const tensor::TensorInfo& info = shapes.info(id);
    if (info.weight_only) continue;
    for (const ENode& e : egraph.nodes(id)) {
      const Op op = tensor::TensorLanguage::op(e.op);
      if (is_free_operator(op)) continue;
      in.clear();
      in_weight.clear();
      for (Id c : e.children) {
        const tensor::TensorInfo& child = shapes.info(egraph.find(c));
        in.push_back(child.type);
        in_weight.push_back(child.weight_only);
      }
      consider(op, egraph.attrs().get(e.attrs), in, in_weight, info.type,
               node_context(egraph, shapes, egraph_conv_outputs, id, e), graph);
    }
  }
  return absl::OkStatus();
}

void SignatureCollector::add_fused_after_convolutions() {
  // Each distinct convolution once (add() only appends to `order_`; map
  // entries stay where they are).
  for (std::size_t i = 0, n = order_.size(); i < n; ++i) {
    const Occurrence& conv = occurrences_.at(order_[i]);
    if (conv.op != Op::kConv) continue;
    const std::array<tensor::ValueType, 1> conv_output{conv.out};
    for (Op kind : fused_kinds_)
      add(kind, {}, conv_output, {false}, conv.out, kAfterConv, *conv.opsets);
  }
}

void SignatureCollector::consider(Op op, const Attributes& attributes,
                                  std::span<const tensor::ValueType> in,
                                  const std::vector<bool>& in_weight, const tensor::ValueType& out,
                                  OpContext context, const Graph& model) {
  if (fuses_into_convolution(op) && context.input != FromConvolution::kNo) fused_kinds_.insert(op);
  std::vector<OpPart> parts = priced_as_parts(op, attributes, in.size());
  if (parts.empty()) return add(op, attributes, in, in_weight, out, context, model.opsets);
  // Priced as its parts (see priced_as_parts).
  std::vector<bool> part_weight;
  for (const OpPart& part : parts) {
    part_weight.clear();
    for (int i : part.inputs) part_weight.push_back(i != kPreviousPart && in_weight[i]);
    if (part.reads_convolution) fused_kinds_.insert(part.op);
    add(part.op, part.attributes, part_input_types(part, in, out), part_weight, out,
        part.reads_convolution ? kAfterConv : context, model.opsets);
  }
}

void SignatureCollector::add(Op op, const Attributes& attributes,
                             std::span<const tensor::ValueType> in,
                             const std::vector<bool>& in_weight, const tensor::ValueType& out,
                             OpContext context, const tensor::Opsets& opsets) {
  std::string signature = op_signature(op, attributes, in);
  auto [it, fresh] = occurrences_.try_emplace(signature);
  if (fresh) {
    it->second = Occurrence{op, attributes, {in.begin(), in.end()}, in_weight, out, false, &opsets};
    order_.push_back(std::move(signature));
  }
  it->second.after_conv |= context.input != FromConvolution::kNo;
  it->second.mixed |= context.mixed != FromConvolution::kNo;
  it->second.masked |= context.masked;
}

absl::StatusOr<SignatureCollector> collect_signatures(const std::vector<const Graph*>& graphs,
                                                      std::size_t explore_nodes) {
  // The rules that explore each model's rewrites, loaded once.
  tensor::TensorLanguage language;
  const ConditionRegistry conditions = tensor_conditions();
  RuleSet rules;
  if (explore_nodes > 0) {
    absl::StatusOr<RuleSet> loaded = load_tensor_rules(language, conditions);
    if (!loaded.ok()) return loaded.status();
    rules = *std::move(loaded);
  }
  SignatureCollector signatures;
  for (const Graph* graph : graphs) {
    if (absl::Status s = signatures.add_model(*graph); !s.ok()) return s;
    if (explore_nodes == 0) continue;
    if (absl::Status s = signatures.add_rewrites(*graph, language, rules, explore_nodes); !s.ok())
      return s;
  }
  signatures.add_fused_after_convolutions();
  return signatures;
}

}  // namespace saturn::ort

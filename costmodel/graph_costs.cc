// What whole graphs and e-graphs cost: held weights beyond the cache, the
// reorders a choice causes in an e-graph, the e-graph cost function for
// extraction, and the costs of graphs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "saturn/costmodel/cost_model.h"

namespace saturn {

using tensor::Op;
using tensor::ValueType;

double weight_us_per_byte(const CostModel& model) {
  const DeviceProfile* device = model.device();
  return device == nullptr ? 0.0 : 1.0 / (device->bandwidth_gbs * 1e3);
}

// The share of the last-level cache that weights can count on: the rest
// holds activations, and the other cores' data (the cache is shared). An
// assumption, not a measurement; what prompted it: NasRNN's weights grown
// by merges from 16.8 MB to 23.1 MB, well inside a 32 MiB L3, already ran
// 2-8% slower in onnxruntime (bench/real_latency on an AMD EPYC).
constexpr double kWeightCacheShare = 0.5;

bool charges_held_weights(const CostModel& model) {
  const DeviceProfile* device = model.device();
  return device != nullptr && device->cache_mb > 0;
}

double weight_spill(const CostModel& model, double resident_bytes, double baseline_bytes) {
  if (!charges_held_weights(model)) return 0;
  const double kept = std::max(baseline_bytes, kWeightCacheShare * model.device()->cache_mb * 1e6);
  return std::max(0.0, resident_bytes - kept) * weight_us_per_byte(model);
}

absl::StatusOr<HeldWeights> held_weights(const CostModel& model, const tensor::Graph& graph,
                                         double baseline_bytes) {
  absl::StatusOr<std::vector<tensor::ValueType>> types = tensor::infer_types(graph);
  if (!types.ok()) return types.status();
  HeldWeights held;
  held.bytes = tensor::resident_weight_bytes(graph, *types);
  held.spill = weight_spill(model, static_cast<double>(held.bytes), baseline_bytes);
  return held;
}

namespace {

// The surcharges of `value`'s readers whose other inputs are convolution
// outputs, were `value` plain: the largest among a reader class's nodes,
// summed over the reader classes. An activation that reads `value` passes
// it on (were `value` a convolution's output, it would be fused into it):
// its readers count too.
double readers_surcharge(const CostModel& model, const EGraph& egraph,
                         const tensor::TensorAnalysis& analysis,
                         const ConvolutionOutputs& conv_outputs, Id value, bool through) {
  absl::flat_hash_set<Id> readers;
  for (Id p : egraph.eclass(value).parents) readers.insert(egraph.find(p));
  double total = 0;
  std::vector<ValueType> inputs;
  for (Id reader : readers) {
    if (analysis.info(reader).weight_only) continue;
    double largest = 0;
    for (const ENode& r : egraph.nodes(reader)) {
      const Op op = tensor::TensorLanguage::op(r.op);
      if (through && fuses_into_convolution(op) && !r.children.empty() &&
          egraph.find(r.children[0]) == value) {
        largest = std::max(largest,
                           readers_surcharge(model, egraph, analysis, conv_outputs, reader, false));
        continue;
      }
      bool reads_value = false, other_conv = false;
      inputs.clear();
      for (Id child : r.children) {
        const Id c = egraph.find(child);
        inputs.push_back(analysis.info(c).type);
        if (c == value) {
          reads_value = true;
        } else if (!analysis.info(c).weight_only &&
                   convolution_output(conv_outputs.of_class(c)) == FromConvolution::kYes) {
          other_conv = true;
        }
      }
      if (reads_value && other_conv)
        largest = std::max(largest, model.mixed_surcharge(op, egraph.attrs().get(r.attrs), inputs));
    }
    total += largest;
  }
  return total;
}

}  // namespace

double reorder_penalty(const CostModel& model, const EGraph& egraph,
                       const tensor::TensorAnalysis& analysis,
                       const ConvolutionOutputs& conv_outputs, Id eclass, const ENode& node) {
  const Id self = egraph.find(eclass);
  if (convolution_output(conv_outputs.of_node(node)) != FromConvolution::kNo ||
      convolution_output(conv_outputs.of_class(self)) == FromConvolution::kNo)
    return 0;
  return readers_surcharge(model, egraph, analysis, conv_outputs, self, true);
}

std::function<double(Id, const ENode&)> egraph_cost_function(const CostModel& model,
                                                             const EGraph& egraph,
                                                             const tensor::TensorAnalysis& analysis,
                                                             EGraphCostOptions options) {
  std::shared_ptr<const ConvolutionOutputs> conv_outputs;
  if (model.uses_context()) conv_outputs = std::make_shared<ConvolutionOutputs>(egraph, analysis);
  return [&model, &egraph, &analysis, options, conv_outputs](Id eclass, const ENode& node) {
    const Id self = egraph.find(eclass);
    const tensor::TensorInfo& info = analysis.info(self);
    if (options.weight_only_free && info.weight_only) {
      if (options.weight_us_per_byte <= 0) return 0.0;
      // Held at run time when a computed node reads it; a class is computed
      // (not weight-only) only when all its nodes are.
      for (Id p : egraph.eclass(self).parents) {
        if (!analysis.info(egraph.find(p)).weight_only)
          return static_cast<double>(info.type.num_bytes()) * options.weight_us_per_byte;
      }
      return 0.0;
    }
    // Reused: assigning a type keeps the storage of the one it replaces, and
    // a search prices every node of every state it values.
    thread_local std::vector<ValueType> types;
    if (types.size() < node.children.size()) types.resize(node.children.size());
    for (std::size_t i = 0; i < node.children.size(); ++i)
      types[i] = analysis.info(egraph.find(node.children[i])).type;
    const std::span<const ValueType> inputs(types.data(), node.children.size());
    const Op op = tensor::TensorLanguage::op(node.op);
    const Attributes& attributes = egraph.attrs().get(node.attrs);
    if (conv_outputs == nullptr) return model.node_cost(op, attributes, inputs, info.type, {});
    return model.node_cost(op, attributes, inputs, info.type,
                           node_context(egraph, analysis, *conv_outputs, eclass, node)) +
           reorder_penalty(model, egraph, analysis, *conv_outputs, eclass, node) +
           dequantized_weight_surcharge(model, egraph, analysis, node);
  };
}

absl::StatusOr<std::vector<double>> graph_node_costs(const CostModel& model,
                                                     const tensor::Graph& graph,
                                                     EGraphCostOptions options) {
  absl::StatusOr<std::vector<tensor::ValueType>> types = tensor::infer_types(graph);
  if (!types.ok()) return types.status();
  const std::vector<bool> weight_only = tensor::weight_only_nodes(graph);
  const std::vector<ValueKinds> kinds =
      model.uses_context() ? value_kinds(graph, weight_only) : std::vector<ValueKinds>();
  std::vector<double> costs(graph.size(), 0.0);
  std::vector<tensor::ValueType> inputs;
  for (int i = 0; i < graph.size(); ++i) {
    const tensor::Node& n = graph.nodes[i];
    if (options.weight_only_free && weight_only[i]) continue;
    inputs.clear();
    for (int in : n.inputs) inputs.push_back((*types)[in]);
    const OpContext context =
        model.uses_context() ? node_context(graph, weight_only, kinds, i, *types) : OpContext{};
    costs[i] = model.node_cost(n.op, n.attributes, inputs, (*types)[i], context);
    if (model.uses_context()) costs[i] += dequantized_weight_surcharge(model, graph, weight_only, i, *types);
  }
  return costs;
}

double folded_work_cost(const CostModel& model, const tensor::Graph& graph) {
  double total = 0;
  for (const tensor::FoldedWork& w : graph.folded_at_import)
    total += model.node_cost(w.op, w.attributes, w.inputs, w.output, OpContext{.on_its_own = true});
  return total;
}

std::pair<double, double> comparable_costs(double before, double after) {
  constexpr double kPrice = MeasuredCostModel::kUnmeasuredRuntimeOperator;
  const double shared = std::floor(std::min(before, after) / kPrice) * kPrice;
  return {before - shared, after - shared};
}

absl::StatusOr<double> graph_cost(const CostModel& model, const tensor::Graph& graph,
                                  EGraphCostOptions options) {
  absl::StatusOr<std::vector<double>> costs = graph_node_costs(model, graph, options);
  if (!costs.ok()) return costs.status();
  return std::accumulate(costs->begin(), costs->end(), 0.0);
}

}  // namespace saturn

#include "saturn/tensor/analysis.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "saturn/base/graph.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/probe.h"

namespace saturn::tensor {

std::optional<TensorInfo> TensorAnalysis::make_data(const EGraph& egraph, const ENode& node) {
  Op op = TensorLanguage::op(node.op);
  std::vector<ValueType> inputs;
  inputs.reserve(node.children.size());
  bool weight_only = op == Op::kWeight || op == Op::kConstant;
  if (computed_ahead(op) && !node.children.empty()) weight_only = true;
  for (Id child : node.children) {
    const TensorInfo& c = data(egraph.find(child));
    inputs.push_back(c.type);
    weight_only = weight_only && c.weight_only;
  }
  const Attributes& attributes = egraph.attrs().get(node.attrs);
  absl::StatusOr<ValueType> type = infer_type(op, attributes, inputs);
  if (!type.ok()) {
    ++refused_;
    return std::nullopt;
  }
  TensorInfo info{std::move(*type), weight_only, std::nullopt};
  if (!probe_sizes_.empty()) {
    bool refuse = false;
    info.probe = probe_type(egraph, node, op, attributes, inputs, info.type, refuse);
    if (refuse) {
      ++refused_at_probe_;
      return std::nullopt;
    }
  }
  return info;
}

void TensorAnalysis::set_symbols(const Symbols& symbols, std::int64_t opset) {
  symbols_ = symbols;
  opset_ = opset;
  probe_sizes_ = tensor::probe_sizes(symbols);
  symbol_sizes_ = ordered_symbol_sizes(symbols, probe_sizes_);
}

std::optional<ValueType> TensorAnalysis::probe_type(const EGraph& egraph, const ENode& node,
                                                    Op op, const Attributes& attributes,
                                                    std::span<const ValueType> inputs,
                                                    const ValueType& base, bool& refuse) const {
  if (op == Op::kInput)
    return probe_input_type(symbols_, probe_sizes_, *attributes.get_string("name"), base);
  if (op == Op::kWeight || op == Op::kConstant) return base;
  if (op == Op::kOpaque) return opaque_probe_type(attributes, base);
  std::vector<ValueType> probe_inputs;
  for (Id child : node.children) {
    const std::optional<ValueType>& p = data(egraph.find(child)).probe;
    if (!p) return std::nullopt;
    probe_inputs.push_back(*p);
  }
  absl::StatusOr<ProbedNode> probed =
      probe_node_type(op, attributes, inputs, probe_inputs, base, opset_, symbol_sizes_);
  if (probed.ok()) return std::move(probed->type);
  refuse = !lenient_;
  return std::nullopt;
}

JoinResult TensorAnalysis::join(TensorInfo& into, const TensorInfo& from) {
  JoinResult r;
  r.into_changed = from.weight_only && !into.weight_only;
  r.from_changed = into.weight_only && !from.weight_only;
  into.weight_only = into.weight_only || from.weight_only;
  if (into.probe != from.probe) {
    // Members that disagree at the probe sizes: unknown there.
    r.into_changed = r.into_changed || into.probe.has_value();
    r.from_changed = r.from_changed || from.probe.has_value();
    into.probe.reset();
  }
  return r;
}

std::size_t TensorAnalysis::data_bytes(const TensorInfo& info) const {
  auto bytes_of = [](const ValueType& type) {
    std::size_t bytes = type.parts.size() * sizeof(TensorType);
    for (const TensorType& t : type.parts) bytes += t.dims.size() * sizeof(std::int64_t);
    return bytes;
  };
  return sizeof(TensorInfo) + bytes_of(info.type) + (info.probe ? bytes_of(*info.probe) : 0);
}

bool TensorAnalysis::is_quantized_weight(const EGraph& egraph, const ENode& node) const {
  return TensorLanguage::op(node.op) == Op::kDequantizeLinear &&
         std::ranges::all_of(node.children,
                             [&](Id k) { return info(egraph.find(k)).weight_only; });
}

const Tensor* TensorAnalysis::weight_values(const EGraph& egraph, Id id) const {
  if (weights_ == nullptr) return nullptr;
  for (const ENode& n : egraph.nodes(egraph.find(id))) {
    if (TensorLanguage::op(n.op) != Op::kWeight) continue;
    const std::string* name = egraph.attrs().get(n.attrs).get_string("name");
    if (name == nullptr) continue;
    if (auto w = weights_->find(*name); w != weights_->end() && w->second.data) return w->second.data.get();
  }
  return nullptr;
}

absl::StatusOr<std::vector<Id>> add_graph(EGraph& egraph, const Graph& graph) {
  auto* shapes = dynamic_cast<TensorAnalysis*>(egraph.analysis());
  if (shapes != nullptr) {
    shapes->set_weights(&graph.weights);
    shapes->set_symbols(graph.symbols, default_domain_opset(graph.opsets));
    shapes->set_lenient(true);  // the graph's own nodes hold at any size
  }
  std::vector<Id> ids;
  ids.reserve(graph.nodes.size());
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    ENode e(TensorLanguage::symbol(n.op), egraph.attrs().intern(n.attributes));
    for (int in : n.inputs) e.children.push_back(ids[in]);
    AddResult r = egraph.add(std::move(e));
    if (r.status == AddStatus::kNodeLimit || r.status == AddStatus::kByteLimit) {
      return absl::ResourceExhaustedError(
          fmt::format("graph '{}' does not fit the e-graph budget (at node {})", graph.name,
                      node_label(graph, i)));
    }
    if (r.status == AddStatus::kRejected) {
      return absl::InvalidArgumentError(
          fmt::format("node {} ({}) does not type-check", node_label(graph, i), op_name(n.op)));
    }
    ids.push_back(r.id);
  }
  egraph.rebuild();
  if (shapes != nullptr) shapes->set_lenient(false);
  for (Id& id : ids) id = egraph.find(id);
  return ids;
}

namespace {

// The source's graph inputs, all of them and in their order, come first
// (they are the model's interface, used or not); the source's opsets,
// IR version, input defaults and symbolic dimensions carry over.
void keep_interface(const Graph& source, Graph& out) {
  out.opsets = source.opsets;
  out.ir_version = source.ir_version;
  out.skip_normalizations_at_load = source.skip_normalizations_at_load;
  out.symbols = source.symbols;
  out.input_defaults = source.input_defaults;
  std::vector<Node> nodes;
  std::vector<int> remap(out.nodes.size(), -1);
  absl::flat_hash_map<std::string, int> inputs;  // name -> index in out
  for (int i = 0; i < out.size(); ++i) {
    if (out.nodes[i].op == Op::kInput) inputs[*out.nodes[i].attributes.get_string("name")] = i;
  }
  for (const Node& n : source.nodes) {
    if (n.op != Op::kInput) continue;
    auto it = inputs.find(*n.attributes.get_string("name"));
    if (it != inputs.end()) remap[it->second] = static_cast<int>(nodes.size());
    nodes.push_back(Node{Op::kInput, n.attributes, {}, n.name});
  }
  for (int i = 0; i < out.size(); ++i) {
    if (remap[i] >= 0) continue;
    Node n = std::move(out.nodes[i]);
    for (int& in : n.inputs) in = remap[in];
    remap[i] = static_cast<int>(nodes.size());
    nodes.push_back(std::move(n));
  }
  out.nodes = std::move(nodes);
  for (GraphOutput& o : out.outputs) o.node = remap[o.node];
}

}  // namespace

absl::StatusOr<Graph> graph_from_egraph(const EGraph& egraph, const Graph& source,
                                        std::span<const ClassOutput> outputs,
                                        const std::function<const ENode*(Id)>& chosen) {
  Graph out;
  out.name = source.name;
  out.weights = source.weights;
  // The chosen graph of the classes the outputs reach, numbered as found:
  // each class points to its chosen node's children. A class without a
  // choice points to itself instead, so that the search below stops there.
  absl::flat_hash_map<Id, std::uint32_t> vertex;  // class -> vertex
  std::vector<Id> classes;                        // vertex -> class
  std::vector<const ENode*> nodes;                // vertex -> chosen node
  graph::Successors succ;
  auto vertex_of = [&](Id id) {
    auto [it, added] = vertex.try_emplace(id, static_cast<std::uint32_t>(classes.size()));
    if (added) classes.push_back(id);
    return it->second;
  };
  std::vector<std::uint32_t> roots;
  for (const ClassOutput& o : outputs) roots.push_back(vertex_of(egraph.find(o.eclass)));
  for (std::uint32_t v = 0; v < classes.size(); ++v) {  // grows while it runs
    nodes.push_back(chosen(classes[v]));
    succ.emplace_back();
    if (nodes[v] == nullptr) {
      succ[v].push_back(v);
      continue;
    }
    for (Id child : nodes[v]->children) succ[v].push_back(vertex_of(egraph.find(child)));
  }
  // Depth-first, children before parents; it stops at a cycle.
  const graph::DepthFirst walk = graph::depth_first(succ, roots);
  if (!walk.cycle.empty()) {
    const std::uint32_t v = walk.cycle.front();
    if (nodes[v] == nullptr)
      return absl::InvalidArgumentError(
          fmt::format("class {} has no chosen node", classes[v].value));
    return absl::InvalidArgumentError(
        fmt::format("the choice has a cycle through class {}", classes[v].value));
  }
  std::vector<int> index(classes.size());  // vertex -> node in `out`
  for (std::uint32_t v : walk.postorder) {
    const ENode* node = nodes[v];
    Node n{TensorLanguage::op(node->op), egraph.attrs().get(node->attrs), {}, {}};
    if (n.op == Op::kInput || n.op == Op::kWeight) n.name = *n.attributes.get_string("name");
    for (std::uint32_t k : succ[v]) n.inputs.push_back(index[k]);
    index[v] = out.size();
    out.nodes.push_back(std::move(n));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i)
    out.outputs.push_back(GraphOutput{index[roots[i]], outputs[i].name});
  keep_interface(source, out);
  return out;
}

}  // namespace saturn::tensor

#include "tensor/analysis.h"

#include "fmt/format.h"
#include "tensor/infer.h"
#include "tensor/ops.h"

namespace saturn::tensor {

std::optional<TensorInfo> TensorAnalysis::make_data(const EGraph& egraph, const ENode& node) {
  Op op = TensorLanguage::op(node.op);
  std::vector<ValueType> inputs;
  inputs.reserve(node.children.size());
  bool weight_only = op == Op::kWeight || op == Op::kConstant;
  if (op != Op::kInput && op != Op::kOpaque && !node.children.empty()) weight_only = true;
  for (Id child : node.children) {
    const TensorInfo& c = data(egraph.find(child));
    inputs.push_back(c.type);
    weight_only = weight_only && c.weight_only;
  }
  absl::StatusOr<ValueType> type = infer_type(op, egraph.attrs().get(node.attrs), inputs);
  if (!type.ok()) {
    ++refused_;
    return std::nullopt;
  }
  return TensorInfo{std::move(*type), weight_only};
}

JoinResult TensorAnalysis::join(TensorInfo& into, const TensorInfo& from) {
  if (!(into.type == from.type)) ++type_conflicts_;
  JoinResult r;
  r.into_changed = from.weight_only && !into.weight_only;
  r.from_changed = into.weight_only && !from.weight_only;
  into.weight_only = into.weight_only || from.weight_only;
  return r;
}

std::size_t TensorAnalysis::data_bytes(const TensorInfo& info) const {
  std::size_t bytes = sizeof(TensorInfo) + info.type.parts.size() * sizeof(TensorType);
  for (const TensorType& t : info.type.parts) bytes += t.dims.size() * sizeof(std::int64_t);
  return bytes;
}

absl::StatusOr<std::vector<Id>> add_graph(EGraph& egraph, const Graph& graph) {
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
  for (Id& id : ids) id = egraph.find(id);
  return ids;
}

}  // namespace saturn::tensor

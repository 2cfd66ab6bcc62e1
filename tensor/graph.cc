#include "saturn/tensor/graph.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "saturn/base/status.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"

namespace saturn::tensor {

std::string folded_work_summary(const Graph& graph) {
  std::vector<std::pair<std::string_view, int>> counts;
  for (const FoldedWork& w : graph.folded_at_import) {
    const std::string_view op = op_name(w.op);
    auto it = std::ranges::find(counts, op, &std::pair<std::string_view, int>::first);
    if (it == counts.end())
      counts.emplace_back(op, 1);
    else
      ++it->second;
  }
  std::string out;
  for (const auto& [op, n] : counts) out += fmt::format("{}{} x{}", out.empty() ? "" : ", ", op, n);
  return out;
}

std::string node_label(const Graph& graph, int index) {
  const Node& n = graph.nodes[index];
  return n.name.empty() ? fmt::format("%{}", index) : n.name;
}

absl::StatusOr<std::vector<ValueType>> infer_types(const Graph& graph) {
  std::vector<ValueType> types;
  types.reserve(graph.nodes.size());
  std::vector<ValueType> inputs;
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    inputs.clear();
    for (int in : n.inputs) {
      if (in < 0 || in >= i) {
        return absl::InvalidArgumentError(
            fmt::format("node {} ({}): input {} is not an earlier node", node_label(graph, i),
                        op_name(n.op), in));
      }
      inputs.push_back(types[in]);
    }
    absl::StatusOr<ValueType> t = infer_type(n.op, n.attributes, inputs);
    if (!t.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("node {}: {}", node_label(graph, i), message(t.status())));
    }
    types.push_back(std::move(*t));
  }
  for (const GraphOutput& o : graph.outputs) {
    if (o.node < 0 || o.node >= graph.size()) {
      return absl::InvalidArgumentError(fmt::format("output '{}' refers to no node", o.name));
    }
  }
  return types;
}

std::vector<bool> weight_only_nodes(const Graph& graph) {
  std::vector<bool> w(graph.nodes.size(), false);
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (n.op == Op::kWeight || n.op == Op::kConstant) {
      w[i] = true;
    } else if (computed_ahead(n.op)) {
      bool all = true;
      for (int in : n.inputs) all = all && w[in];
      w[i] = all;
    }
  }
  return w;
}

bool is_quantized_weight(const Graph& graph, const std::vector<bool>& weight_only, int x) {
  const Node& n = graph.nodes[x];
  return n.op == Op::kDequantizeLinear &&
         std::ranges::all_of(n.inputs, [&](int in) { return weight_only[in]; });
}

std::optional<MatrixProduct> matrix_product(Op op, const Attributes& attributes,
                                            const ValueType& weight, const ValueType& output) {
  if (weight.is_tuple || output.is_tuple) return std::nullopt;
  const Dims& out = output.tensor().dims;
  const bool conv = op == Op::kConv && attributes.get_int("group").value_or(1) == 1;
  const bool matmul = (op == Op::kMatMul || op == Op::kGemm) && weight.tensor().dims.size() == 2;
  if ((!conv && !matmul) || out.size() < 2) return std::nullopt;
  const std::int64_t columns = conv ? out[1] : out.back();
  if (columns <= 0) return std::nullopt;
  const std::int64_t depth = weight.tensor().num_elements() / columns;
  const std::int64_t rows = output.tensor().num_elements() / columns;
  if (depth <= 0 || rows <= 0) return std::nullopt;
  return MatrixProduct{rows, depth, columns};
}

bool widens_integer_weight(Op op, const TensorType& in, const TensorType& out) {
  return op == Op::kCast && (in.dtype == DType::kInt8 || in.dtype == DType::kUInt8) &&
         is_float(out.dtype) && in.num_elements() >= kWidenedWeightElements;
}

std::vector<bool> live_nodes(const Graph& graph) {
  std::vector<bool> live(graph.nodes.size(), false);
  for (const GraphOutput& o : graph.outputs) live[o.node] = true;
  for (int i = graph.size() - 1; i >= 0; --i) {
    if (graph.nodes[i].op == Op::kInput) live[i] = true;
    if (!live[i]) continue;
    for (int in : graph.nodes[i].inputs) live[in] = true;
  }
  return live;
}

std::int64_t resident_weight_bytes(const Graph& graph, std::span<const ValueType> types) {
  const std::vector<bool> live = live_nodes(graph);
  const std::vector<bool> weight_only = weight_only_nodes(graph);
  std::vector<bool> held(graph.nodes.size(), false);
  for (int i = 0; i < graph.size(); ++i) {
    if (!live[i] || weight_only[i]) continue;
    for (int in : graph.nodes[i].inputs) held[in] = held[in] || weight_only[in];
  }
  for (const GraphOutput& o : graph.outputs) held[o.node] = held[o.node] || weight_only[o.node];
  std::int64_t bytes = 0;
  for (int i = 0; i < graph.size(); ++i) {
    if (held[i]) bytes += types[i].num_bytes();
  }
  return bytes;
}

Attributes leaf_attributes(std::string name, Dims dims, DType dtype) {
  return Attributes{{"name", std::move(name)},
                    {"shape", std::move(dims)},
                    {"dtype", std::string(dtype_name(dtype))}};
}

absl::StatusOr<Tensor> materialize_weight(const Graph& graph, const Node& weight) {
  const std::string& name = *weight.attributes.get_string("name");
  TensorType type{parse_dtype(*weight.attributes.get_string("dtype")).value_or(DType::kFloat32),
                  *weight.attributes.get_ints("shape")};
  auto it = graph.weights.find(name);
  if (it == graph.weights.end()) {
    return random_tensor(type, stable_hash(name), -0.1f, 0.1f);
  }
  const WeightInit& init = it->second;
  if (init.data) {
    if (init.data->type() != type) {
      return absl::InvalidArgumentError(fmt::format("weight '{}' is declared {} but its data is {}",
                                                    name, to_string(type),
                                                    to_string(init.data->type())));
    }
    return *init.data;
  }
  return random_tensor(type, init.seed, init.low, init.high);
}

std::map<Op, int> op_counts(const Graph& graph) {
  std::map<Op, int> counts;
  for (const Node& n : graph.nodes) {
    switch (n.op) {
      case Op::kInput:
      case Op::kWeight:
      case Op::kConstant:
      case Op::kTuple:
      case Op::kTupleGet:
      case Op::kIdentity:
      case Op::kDropout:
        break;
      default:
        ++counts[n.op];
    }
  }
  return counts;
}

int total_ops(const Graph& graph) {
  int total = 0;
  for (const auto& [op, count] : op_counts(graph)) total += count;
  return total;
}

std::string to_dot(const Graph& graph) {
  absl::StatusOr<std::vector<ValueType>> types = infer_types(graph);
  auto quote = [](std::string_view text) {
    std::string out;
    for (char c : text) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out;
  };
  std::string out =
      fmt::format("digraph \"{}\" {{\n  rankdir=TB;\n  node [fontsize=10];\n", quote(graph.name));
  auto hidden = [&](int i) {
    Op op = graph.nodes[i].op;
    return op == Op::kWeight || op == Op::kConstant;
  };
  for (int i = 0; i < graph.size(); ++i) {
    if (hidden(i)) continue;
    const Node& n = graph.nodes[i];
    std::string label =
        n.op == Op::kOpaque ? *n.attributes.get_string("op_type") : std::string(op_name(n.op));
    if (n.op == Op::kInput) label = *n.attributes.get_string("name");
    std::string shape = types.ok() ? to_string((*types)[i]) : "";
    out += fmt::format("  n{} [label=\"{}\\n{}\", shape={}];\n", i, quote(label), quote(shape),
                       n.op == Op::kInput ? "ellipse" : "box");
    for (int in : n.inputs) {
      if (!hidden(in)) out += fmt::format("  n{} -> n{};\n", in, i);
    }
  }
  for (std::size_t k = 0; k < graph.outputs.size(); ++k) {
    out += fmt::format("  out{} [label=\"{}\", shape=ellipse];\n  n{} -> out{};\n", k,
                       quote(graph.outputs[k].name), graph.outputs[k].node, k);
  }
  out += "}\n";
  return out;
}

namespace {

// "domain::Type", or "Type" in the default domain.
std::string opaque_type_name(const Node& n) {
  const std::string* type = n.attributes.get_string("op_type");
  const std::string* domain = n.attributes.get_string("domain");
  std::string name = type ? *type : "?";
  if (domain && !domain->empty() && *domain != "ai.onnx") name = *domain + "::" + name;
  return name;
}

}  // namespace

std::map<std::string, int> opaque_op_types(const Graph& graph) {
  std::map<std::string, int> counts;
  for (const Node& n : graph.nodes)
    if (n.op == Op::kOpaque) ++counts[opaque_type_name(n)];
  return counts;
}

std::map<std::string, std::map<std::string, int>> opaque_op_reasons(const Graph& graph) {
  std::map<std::string, std::map<std::string, int>> reasons;
  for (const Node& n : graph.nodes) {
    if (n.op != Op::kOpaque) continue;
    auto it = graph.opaque_reasons.find(n.name);
    ++reasons[opaque_type_name(n)][it == graph.opaque_reasons.end() ? "not recorded" : it->second];
  }
  return reasons;
}

}  // namespace saturn::tensor

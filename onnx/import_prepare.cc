// ONNX -> IR, before the graph walk: the model's opset and external data
// read, its symbolic input dimensions sized, the ONNX checker and shape
// inference run, and the values computable before any input is known
// folded to constants; and, during the walk, the IR operators that read
// weights only folded into weights.
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "onnx/checker.h"
#include "saturn/tensor/interpreter/kernels.h"
#include "saturn/onnx/importer.h"
#include "saturn/onnx/operator_schemas.h"
#include "saturn/onnx/proto.h"
#include "saturn/onnx/shape_values.h"

namespace saturn::tensor::onnx_io {

absl::StatusOr<Symbols> resolve_input_dims(onnx::ModelProto& model,
                                           const OnnxImportOptions& options) {
  Symbols symbols;
  // Each axis's symbol; an unnamed dynamic axis is named as onnxruntime names
  // it. paddle2onnx writes a dynamic axis as the size -1 or the name "?"
  // (several axes of one input alike): each is an unnamed axis of its own.
  auto axes_of = [&](const onnx::ValueInfoProto& v) {
    std::vector<std::string> axes;
    int axis = 0;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      const bool unnamed = d.has_dim_value() ? d.dim_value() < 0
                                             : d.dim_param().empty() || d.dim_param() == "?";
      if (d.has_dim_value() && !unnamed)
        axes.emplace_back();
      else
        axes.push_back(unnamed ? fmt::format("unk__{}_{}", v.name(), axis) : d.dim_param());
      ++axis;
    }
    return axes;
  };
  for (const onnx::ValueInfoProto& v : model.graph().output()) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
    std::vector<std::string> axes = axes_of(v);
    if (std::ranges::any_of(axes, [](const std::string& a) { return !a.empty(); }))
      symbols.axes[v.name()] = std::move(axes);
  }
  for (onnx::ValueInfoProto& v : *model.mutable_graph()->mutable_input()) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
    std::vector<std::string> axes = axes_of(v);
    auto& dims = *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
    for (int axis = 0; axis < dims.size(); ++axis) {
      if (axes[axis].empty()) continue;
      auto it = options.dims.find(axes[axis]);
      const std::int64_t size = it == options.dims.end() ? kDefaultSymbolSize : it->second;
      symbols.sizes.emplace(axes[axis], size);
      dims[axis].set_dim_value(size);
    }
    if (std::ranges::any_of(axes, [](const std::string& a) { return !a.empty(); }))
      symbols.axes[v.name()] = std::move(axes);
  }
  // Elsewhere a size of -1 is an unknown size, for ONNX's inference to find.
  auto unsize_negative = [](onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    for (auto& d : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
      if (d.has_dim_value() && d.dim_value() < 0) d.clear_dim_value();
  };
  std::ranges::for_each(*model.mutable_graph()->mutable_value_info(), unsize_negative);
  std::ranges::for_each(*model.mutable_graph()->mutable_output(), unsize_negative);
  return symbols;
}

namespace {

// Adds every value the nodes of `g` (and of its subgraphs) read, and its
// outputs, to `reads`.
void collect_reads(const onnx::GraphProto& g, std::set<std::string>& reads) {
  for (const onnx::NodeProto& n : g.node()) {
    reads.insert(n.input().begin(), n.input().end());
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) collect_reads(a.g(), reads);
      for (const onnx::GraphProto& sub : a.graphs()) collect_reads(sub, reads);
    }
  }
  for (const onnx::ValueInfoProto& o : g.output()) reads.insert(o.name());
}

// Calls `check` on each node of `graph` and of its subgraphs; its first
// error.
absl::Status check_each_node(const onnx::GraphProto& graph,
                             const std::function<absl::Status(const onnx::NodeProto&)>& check) {
  for (const onnx::NodeProto& n : graph.node()) {
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) {
        if (absl::Status s = check_each_node(a.g(), check); !s.ok()) return s;
      }
      for (const onnx::GraphProto& g : a.graphs()) {
        if (absl::Status s = check_each_node(g, check); !s.ok()) return s;
      }
    }
    if (absl::Status s = check(n); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The window attributes of a convolution or pool, checked before ONNX's own
// shape inference runs: it divides by strides and groups without checking
// them (a stride of 0 stops the process with SIGFPE).
absl::Status check_window_attributes(const onnx::NodeProto& n) {
  static const absl::flat_hash_set<std::string_view> kWindowed = {
      "Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool",
      "LpPool", "MaxUnpool", "MaxRoiPool", "DeformConv"};
  if (!is_default_domain(n.domain()) || !kWindowed.contains(n.op_type())) return absl::OkStatus();
  for (const onnx::AttributeProto& a : n.attribute()) {
    const bool positive = a.name() == "strides" || a.name() == "dilations" ||
                          a.name() == "kernel_shape" || a.name() == "group";
    const bool non_negative = a.name() == "pads" || a.name() == "output_padding";
    if (!positive && !non_negative) continue;
    std::vector<std::int64_t> values(a.ints().begin(), a.ints().end());
    if (a.has_i()) values.push_back(a.i());
    for (std::int64_t v : values) {
      if (v < 0 || (positive && v == 0)) {
        return absl::InvalidArgumentError(fmt::format(
            "node '{}' ({}): attribute {} must be {}, got {}", n.name(), n.op_type(), a.name(),
            positive ? "positive" : "non-negative", v));
      }
    }
  }
  return absl::OkStatus();
}

// A node of onnxruntime's own domains (com.microsoft and the like), checked
// against its operator's schema as onnxruntime does at load: libonnx's
// checker passes the domains it does not know. `versions` are the model's
// opset imports.
absl::Status check_runtime_operator(const onnx::NodeProto& n,
                                    const std::map<std::string, std::int64_t>& versions) {
  if (is_default_domain(n.domain())) return absl::OkStatus();
  auto version = versions.find(n.domain());
  if (version == versions.end()) return absl::OkStatus();  // the checker's to refuse
  absl::Status s = check_operator_schema(n, n.domain(), version->second);
  if (s.ok()) return s;
  return absl::InvalidArgumentError(
      fmt::format("node '{}' ({} {}): {}", n.name(), n.domain(), n.op_type(), message(s)));
}

// A copy of `model` whose external data locations are absolute paths: the
// checker looks for the files relative to the working folder otherwise.
onnx::ModelProto with_absolute_locations(const onnx::ModelProto& model,
                                         const std::filesystem::path& dir) {
  onnx::ModelProto copy = model;
  for (onnx::TensorProto& t : *copy.mutable_graph()->mutable_initializer()) {
    for (auto& e : *t.mutable_external_data())
      if (e.key() == "location") e.set_value(std::filesystem::absolute(dir / e.value()).string());
  }
  return copy;
}

// The graph attributes of the graph's nodes (If's branches, Loop's and
// Scan's bodies) as they are, by node and attribute position.
std::vector<std::pair<std::pair<int, int>, onnx::AttributeProto>> graph_attributes(
    const onnx::GraphProto& graph) {
  std::vector<std::pair<std::pair<int, int>, onnx::AttributeProto>> out;
  for (int k = 0; k < graph.node_size(); ++k) {
    for (int j = 0; j < graph.node(k).attribute_size(); ++j) {
      const onnx::AttributeProto& a = graph.node(k).attribute(j);
      if (a.has_g() || a.graphs_size() > 0) out.push_back({{k, j}, a});
    }
  }
  return out;
}

}  // namespace

absl::Status Importer::prepare(onnx::ModelProto& model) {
  if (!model.has_graph() || model.ir_version() <= 0 || model.opset_import_size() == 0)
    return error("not an ONNX model (no graph, IR version or opset)");
  for (const auto& op : model.opset_import()) {
    if (!is_default_domain(op.domain())) continue;
    opset_ = op.version();
    if (opset_ < 1 || opset_ > kNewestReadOpset) {
      return error("ONNX opset {} is not supported (this build reads opsets 1 to {})", opset_,
                   kNewestReadOpset);
    }
  }
  source_ir_version_ = model.ir_version();
  if (model.ir_version() > kCheckedIrVersion) model.set_ir_version(kCheckedIrVersion);
  // A newer opset than libonnx knows: read through the newest it knows
  // (its checker and shape inference run on that spelling).
  source_opset_ = opset_;
  if (opset_ > max_onnx_opset()) {
    if (absl::Status s = lower_to_opset(model, opset_, max_onnx_opset(), &expanded_, &kept_); !s.ok())
      return error("{}", message(s));
    opset_ = max_onnx_opset();
  }
  if (model.functions_size() > 0)
    return error("model-local functions are not supported (function '{}')",
                 model.functions(0).name());
  const std::filesystem::path dir = std::filesystem::path(file_).parent_path();
  absl::StatusOr<std::map<std::string, Tensor>> mapped =
      map_external_data(model, dir, kMaxShapeValueElements);
  if (!mapped.ok()) return error("{}", message(mapped.status()));
  external_ = std::move(*mapped);
  absl::StatusOr<FourBitValues> four_bit = disguise_4bit(model, external_);
  if (!four_bit.ok()) return error("{}", message(four_bit.status()));
  four_bit_types_ = std::move(four_bit->types);
  for (auto& [name, value] : four_bit->initializers) external_.insert_or_assign(name, value);
  absl::StatusOr<SeededWeights> seeded = seeded_weights(model);
  if (!seeded.ok()) return error("{}", message(seeded.status()));
  seeded_ = std::move(*seeded);
  absl::StatusOr<Symbols> symbols = resolve_input_dims(model, options_);
  if (!symbols.ok()) return error("{}", message(symbols.status()));
  graph_.symbols = std::move(*symbols);
  graph_.skip_normalizations_at_load =
      graph_.symbols.empty() || model.graph().value_info_size() > 0;
  try {
    if (external_.empty())
      onnx::checker::check_model(model);
    else
      onnx::checker::check_model(with_absolute_locations(model, dir));
  } catch (const std::exception& e) {
    return error("the ONNX checker rejects the model: {}", e.what());
  }
  // After the checker: its walk reads each node's inputs and outputs as the
  // operator's schema counts them.
  dequantized_at_load_ = dequantized_at_load(model.graph(), four_bit_types_);
  std::map<std::string, std::int64_t> versions;
  for (const onnx::OperatorSetIdProto& op : model.opset_import()) versions[op.domain()] = op.version();
  if (absl::Status st = check_each_node(model.graph(),
                                        [&](const onnx::NodeProto& n) {
                                          absl::Status s = check_window_attributes(n);
                                          return s.ok() ? check_runtime_operator(n, versions) : s;
                                        });
      !st.ok())
    return error("{}", message(st));
  collect_reads(model.graph(), read_names_);
  // ONNX's shape inference, helped by the values of the shape arithmetic.
  // It types a subgraph's values in place, at the given sizes; a model with
  // symbolic sizes keeps its subgraphs as the file declares them (by its
  // symbols), so that they are written back to run at every size.
  const auto declared = graph_attributes(model.graph());
  ShapeValues values;
  if (absl::Status st = infer_with_shape_values(model, &values); !st.ok())
    return error("ONNX shape inference fails: {}", message(st));
  if (!graph_.symbols.empty()) {
    for (const auto& [at, attribute] : declared)
      *model.mutable_graph()->mutable_node(at.first)->mutable_attribute(at.second) = attribute;
  }
  if (!graph_.symbols.empty()) {
    ShapeValues at_probe;
    probe_dims_ = probe_dims(model, graph_.symbols, &at_probe);
    // A value that changes with the sizes stays computed; its value at the
    // given sizes is what the self-check feeds a region that reads it.
    std::erase_if(values, [&](const auto& kv) {
      auto it = at_probe.find(kv.first);
      const bool varies = it == at_probe.end() || !same_values(kv.second, it->second);
      if (varies) graph_.size_values[kv.first] = std::make_shared<const Tensor>(kv.second);
      if (varies && it != at_probe.end()) probe_values_.insert(*it);
      return varies;
    });
  }
  for (const onnx::ValueInfoProto& v : model.graph().output()) {
    values.erase(v.name());
    output_names_.insert(v.name());
  }
  folded_ = std::move(values);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Tensor>> Importer::fold_weights_only(
    Op op, const Attributes& attributes, const std::vector<int>& inputs, const ValueType& type,
    const std::string& output) const {
  if (!computed_ahead(op) || type.is_tuple || output_names_.contains(output) ||
      !is_plain_number(type.tensor().dtype))
    return std::nullopt;
  if (inputs.size() == 1 && !types_[inputs[0]].is_tuple &&
      widens_integer_weight(op, types_[inputs[0]].tensor(), type.tensor()))
    return std::nullopt;  // kept integer, as the file has it
  std::vector<Tensor> values;
  std::int64_t input_bytes = 0;
  for (int i : inputs) {
    const Node& n = graph_.nodes[i];
    auto it = constants_.find(n.name);
    if ((n.op != Op::kWeight && n.op != Op::kConstant) || it == constants_.end()) return std::nullopt;
    values.push_back(it->second);
    input_bytes += it->second.type().num_bytes();
  }
  // A computation that grows its weights by more than a MiB (the broadcast
  // of a mask, say) is left to the runtime rather than stored in the model;
  // a gather of a position-bias table by its index is folded.
  constexpr std::int64_t kMaxGrowth = std::int64_t{1} << 20;
  if (type.tensor().num_bytes() > input_bytes + kMaxGrowth) return std::nullopt;
  absl::StatusOr<std::vector<Tensor>> out = evaluate_op(op, attributes, values);
  if (!out.ok() && (out.status().code() == absl::StatusCode::kOutOfRange ||
                    out.status().code() == absl::StatusCode::kInvalidArgument))
    return out.status();
  if (!out.ok() || out->size() != 1 || (*out)[0].type() != type.tensor()) return std::nullopt;
  return std::optional<Tensor>(std::move((*out)[0]));
}

}  // namespace saturn::tensor::onnx_io

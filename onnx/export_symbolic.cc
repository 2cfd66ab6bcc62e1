// Symbolic dimensions in the exported model (Graph::symbols).
//
// The IR's shapes are concrete: each symbol stands at the size it was given
// (its base). To write a model that holds at any size, the exporter types
// every value a second time with each symbol at another size (its probe: the
// base plus a prime of its own, so that no two symbols nor their products
// are mistaken for each other), node by node as it writes them:
//   - an axis whose size differs between base and probe follows the
//     symbols: value_info names it by its symbol when it is exactly one
//     symbol, and leaves it unnamed otherwise (a product of symbols, say);
//   - a Reshape's shape is rewritten with 0 (copy the input's axis) and -1
//     (the axis that takes the rest), as onnxruntime reads them, so that it
//     gives the base shape at the base and a consistent shape at the probe;
//   - a Slice that runs to the end of a following axis gets an open end;
//   - every other operator must type-check at the probe with its attributes
//     as they are (a Split of a following axis does not, for example).
//     Where one does not, the graph holds for the base size only and the
//     export fails, naming the node and the symbols.
// Opaque nodes, and nodes sized by values whose size at the probe the
// importer did not find, are typed at the probe by ONNX's shape inference.
//
// Typing at a second size is necessary, not sufficient: a reshape can be
// consistent at both sizes and still mean another layout. Callers that
// changed the graph check it at other sizes numerically (tools/optimize).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "saturn/base/status.h"
#include "saturn/onnx/runtime_types.h"
#include "saturn/tensor/infer.h"
#include "saturn/onnx/exporter.h"
#include "saturn/onnx/proto.h"
#include "saturn/onnx/shape_values.h"
#include "saturn/tensor/probe.h"

namespace saturn::tensor::onnx_io {

void Exporter::start_probe() {
  for (int i = 0; i < out_->initializer_size(); ++i)
    folded_initializers_.emplace(out_->initializer(i).name(), i);
  probe_sizes_ = probe_sizes(g_.symbols);
  symbol_sizes_ = ordered_symbol_sizes(g_.symbols, probe_sizes_);
  probe_.assign(g_.nodes.size(), ValueType{});
  for (int i = 0; i < g_.size(); ++i) {
    for (std::size_t p = 0; p < names_[i].size(); ++p) value_of_name_[names_[i][p]] = {i, p};
    probe_[i] = types_[i];
    if (g_.nodes[i].op != Op::kInput) continue;
    // A graph input's axes name single symbols (the interface's), never "?".
    probe_[i] = probe_input_type(g_.symbols, probe_sizes_,
                                 *g_.nodes[i].attributes.get_string("name"), types_[i])
                    .value_or(types_[i]);
  }
}

std::string Exporter::following_symbols(std::span<const int> inputs) const {
  std::vector<std::string> names;
  for (int in : inputs) {
    for (std::size_t p = 0; p < types_[in].parts.size(); ++p) {
      const Dims& base = types_[in].parts[p].dims;
      const Dims& probe = probe_[in].parts[p].dims;
      for (std::size_t a = 0; a < base.size(); ++a) {
        if (base[a] == probe[a]) continue;
        for (const auto& [symbol, size] : g_.symbols.sizes) {
          if (size == base[a] && probe_sizes_.at(symbol) == probe[a]) names.push_back(symbol);
        }
      }
    }
  }
  std::ranges::sort(names);
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names.empty() ? "a product of symbolic dimensions"
                       : fmt::format("{}", fmt::join(names, ", "));
}

absl::Status Exporter::probe_node(int i) {
  const Node& n = g_.nodes[i];
  std::vector<ValueType> in;
  bool changed = false;
  for (int x : n.inputs) {
    in.push_back(probe_[x]);
    changed = changed || probe_[x].parts != types_[x].parts;
  }
  if (sized_by_values(n.op, n.inputs.size())) {
    // Its size follows its inputs' values, which change at the probe sizes
    // while their types may not: the importer's probe type, or else ONNX's
    // inference of the nodes written for it (by_inference).
    if (std::optional<ValueType> probe = opaque_probe_type(n.attributes, types_[i]))
      probe_[i] = *std::move(probe);
    return absl::OkStatus();
  }
  if (!changed || n.op == Op::kInput || n.op == Op::kOpaque) return absl::OkStatus();
  std::vector<ValueType> base;
  for (int x : n.inputs) base.push_back(types_[x]);
  absl::StatusOr<ProbedNode> probed =
      probe_node_type(n.op, n.attributes, base, in, types_[i], default_domain_opset(g_.opsets),
                      symbol_sizes_);
  if (!probed.ok())
    return absl::InvalidArgumentError(
        fmt::format("the graph holds only at the given size of {}: {}",
                    following_symbols(n.inputs), message(probed.status())));
  if (n.op == Op::kReshape || n.op == Op::kSlice) written_[i] = probed->attributes;
  probe_[i] = std::move(probed->type);
  return absl::OkStatus();
}

std::optional<std::string> Exporter::axis_size_value(int before, std::int64_t base,
                                                     std::int64_t probe) {
  if (auto it = axis_size_values_.find({base, probe}); it != axis_size_values_.end())
    return it->second;
  // The node's input first, then every value written before it.
  std::vector<int> candidates{g_.nodes[before].inputs.front()};
  for (int x = 0; x < before; ++x) candidates.push_back(x);
  for (int x : candidates) {
    if (!live_[x] || folded_[x] || names_[x].empty() || types_[x].is_tuple) continue;
    const Dims& at_base = types_[x].parts[0].dims;
    const Dims& at_probe = probe_[x].parts[0].dims;
    for (std::size_t a = 0; a < at_base.size() && a < at_probe.size(); ++a) {
      if (at_base[a] != base || at_probe[a] != probe) continue;
      const std::string shape = unary("Shape", names_[x][0], fresh(names_[x][0] + "_shape"));
      const std::string size = fresh(fmt::format("{}_dim{}", names_[x][0], a));
      set_int(node("Gather", {shape, ints_constant({static_cast<std::int64_t>(a)})}, {size}),
              "axis", 0);
      axis_size_values_[{base, probe}] = size;
      return size;
    }
  }
  return std::nullopt;
}

const Tensor* Exporter::shape_value(const std::string& name, bool probe) {
  for (; initializers_read_ < out_->initializer_size(); ++initializers_read_) {
    const onnx::TensorProto& t = out_->initializer(initializers_read_);
    if (shape_value_count(std::span<const std::int64_t>(t.dims().data(), t.dims().size())) >
        kMaxShapeValueElements)
      continue;
    absl::StatusOr<Tensor> value = initializer_value(initializers_read_);
    if (!value.ok()) continue;
    base_values_[t.name()] = *value;
    probe_values_[t.name()] = *value;
  }
  const std::map<std::string, Tensor>& values = probe ? probe_values_ : base_values_;
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

void Exporter::track_shape_values(int first_proto) {
  for (bool probe : {false, true}) {
    const ValueLookup values = [&](const std::string& name) { return shape_value(name, probe); };
    const DimsLookup dims = [&](const std::string& name) -> std::optional<Dims> {
      auto it = value_of_name_.find(name);
      if (it == value_of_name_.end()) return std::nullopt;
      const auto [node, part] = it->second;
      const std::vector<ValueType>& types = probe ? probe_ : types_;
      if (part >= types[node].parts.size()) return std::nullopt;
      return types[node].parts[part].dims;
    };
    for (int k = first_proto; k < out_->node_size(); ++k) {
      const onnx::NodeProto& proto = out_->node(k);
      if (std::optional<std::vector<Tensor>> out = evaluate_shape_node(proto, values, dims))
        (probe ? probe_values_ : base_values_)[proto.output(0)] = (*out)[0];
    }
  }
}

namespace {

// One of onnxruntime's quantized operators, which ONNX's inference does
// not know, typed from its inputs' probe types as the importer types it.
void add_runtime_operator_type(onnx::GraphProto* g) {
  const ValueTypeLookup lookup = [&](const std::string& name) -> std::optional<std::pair<int, Dims>> {
    for (const onnx::ValueInfoProto& v : g->input()) {
      if (v.name() != name) continue;
      Dims dims;
      for (const auto& d : v.type().tensor_type().shape().dim()) dims.push_back(d.dim_value());
      return std::pair{v.type().tensor_type().elem_type(), std::move(dims)};
    }
    return std::nullopt;
  };
  const onnx::NodeProto& n = g->node(0);
  if (std::optional<onnx::TypeProto> type = runtime_operator_type(n, lookup)) {
    onnx::ValueInfoProto* v = g->add_value_info();
    v->set_name(n.output(0));
    *v->mutable_type() = *std::move(type);
  }
}

}  // namespace

absl::Status Exporter::probe_opaque(int i, int first_proto) {
  const Node& n = g_.nodes[i];
  bool changed = false;
  for (int x : n.inputs) {
    changed = changed || probe_[x].parts != types_[x].parts;
    for (const std::string& name : names_[x]) {
      const Tensor* base = shape_value(name, false);
      const Tensor* probe = shape_value(name, true);
      if (base != nullptr && probe != nullptr && max_error_ratio(*base, *probe, 0, 0) > 0)
        changed = true;
    }
  }
  if (!changed) return absl::OkStatus();
  // The nodes written for it, alone in a model whose inputs have their probe types.
  onnx::ModelProto model;
  *model.mutable_opset_import() = model_.opset_import();
  model.set_ir_version(model_.ir_version());
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("probe");
  for (int k = first_proto; k < out_->node_size(); ++k) *g->add_node() = out_->node(k);
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    const int x = n.inputs[k];
    if (names_[x].empty() || probe_[x].is_tuple) continue;
    const std::string& name = names_[x][0];
    if (auto init = folded_initializers_.find(name);
        folded_[x] && init != folded_initializers_.end()) {
      absl::StatusOr<Tensor> folded = initializer_value(init->second);
      if (!folded.ok()) return folded.status();
      add_initializer(*folded, name, g);
    } else if (const Tensor* value = shape_value(name, true)) {
      add_initializer(*value, name, g);
    }
    auto* v = g->add_input();
    v->set_name(name);
    if (absl::Status s = value_type(x, 0, v->mutable_type()); !s.ok()) return s;
    auto* dims = v->mutable_type()->mutable_tensor_type()->mutable_shape();
    dims->clear_dim();
    for (std::int64_t d : probe_[x].parts[0].dims) dims->add_dim()->set_dim_value(d);
  }
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*strict_mode=*/0,
                                        /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        fmt::format("ONNX shape inference fails at other sizes of {}: {}",
                    following_symbols(n.inputs), e.what()));
  }
  if (g->node_size() == 1) add_runtime_operator_type(g);
  for (std::size_t p = 0; p < probe_[i].parts.size(); ++p) {
    if (p >= names_[i].size() || types_[i].parts[p].dtype == DType::kOther) continue;
    const onnx::ValueInfoProto* found = nullptr;
    for (const onnx::ValueInfoProto& v : model.graph().value_info()) {
      if (v.name() == names_[i][p]) found = &v;
    }
    Dims dims;
    if (found != nullptr && found->type().tensor_type().has_shape()) {
      for (const auto& d : found->type().tensor_type().shape().dim())
        dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
    if (dims.size() != types_[i].parts[p].rank() || std::ranges::count(dims, -1) > 0)
      return absl::InvalidArgumentError(
          fmt::format("ONNX shape inference cannot type output {} at other sizes of {}", p,
                      following_symbols(n.inputs)));
    probe_[i].parts[p].dims = std::move(dims);
  }
  return absl::OkStatus();
}

void Exporter::name_axes(int i, std::size_t p, onnx::TypeProto* type) const {
  if (!symbolic() || type->value_case() != onnx::TypeProto::kTensorType) return;
  const Dims& base = types_[i].parts[p].dims;
  const Dims& probe = probe_[i].parts[p].dims;
  auto* dims = type->mutable_tensor_type()->mutable_shape()->mutable_dim();
  const int rank = static_cast<int>(std::min(base.size(), probe.size()));
  for (int a = 0; a < dims->size() && a < rank; ++a) {
    if (base[a] == probe[a]) continue;
    auto& d = (*dims)[a];
    d.Clear();
    for (const auto& [symbol, size] : g_.symbols.sizes) {
      if (size == base[a] && probe_sizes_.at(symbol) == probe[a]) d.set_dim_param(symbol);
    }
  }
}

absl::Status Exporter::name_interface_axes(const std::string& name, int i, std::size_t p,
                                           onnx::TypeProto* type) const {
  // Without symbols there are no probe sizes to tell the named axes by.
  auto it = g_.symbols.axes.find(name);
  if (!symbolic() || it == g_.symbols.axes.end() ||
      type->value_case() != onnx::TypeProto::kTensorType)
    return absl::OkStatus();
  auto* dims = type->mutable_tensor_type()->mutable_shape()->mutable_dim();
  const Dims& base = types_[i].parts[p].dims;
  const Dims& probe = probe_[i].parts[p].dims;
  // The axes named for `name` (a graph input's, when an output takes its
  // name) may outnumber the value's own.
  const int rank = static_cast<int>(std::min({base.size(), probe.size(), it->second.size()}));
  for (int a = 0; a < dims->size() && a < rank; ++a) {
    const std::string& symbol = it->second[a];
    if (!symbol.empty() && base[a] == probe[a] && g_.symbols.sizes.contains(symbol))
      return absl::InvalidArgumentError(
          fmt::format("'{}' axis {} is {} in the model, but here it keeps the size {}", name, a,
                      symbol, base[a]));
    if (symbol.empty()) {
      if (base[a] != probe[a])
        return absl::InvalidArgumentError(
            fmt::format("'{}' axis {} is fixed in the model, but here it follows {}", name, a,
                        following_symbols(std::vector<int>{i})));
      continue;
    }
    (*dims)[a].Clear();
    (*dims)[a].set_dim_param(symbol);
  }
  return absl::OkStatus();
}

}  // namespace saturn::tensor::onnx_io

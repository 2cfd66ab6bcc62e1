// ONNX → IR. See onnx.h for what is mapped and what is kept opaque.
//
// This file holds the graph walk (the entry points that read files are in
// model_files.cc); importer.h says where the rest of the importer is.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels.h"
#include "saturn/onnx/importer.h"
#include "saturn/onnx/onnx.h"
#include "saturn/onnx/proto.h"
#include "saturn/onnx/shape_values.h"
#include "saturn/tensor/probe.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/tensor.h"

namespace saturn::tensor {

namespace onnx_io {

namespace {

bool is_random_op(const std::string& op_type) {
  return op_type.starts_with("Random") || op_type == "Bernoulli" || op_type == "Multinomial";
}

}  // namespace

absl::StatusOr<Graph> Importer::run(std::shared_ptr<onnx::ModelProto> owned) {
  onnx::ModelProto& model = *owned;
  if (absl::Status s = prepare(model); !s.ok()) return s;
  const onnx::GraphProto& g = model.graph();
  // Exporters name graphs generically ("torch_jit", "main_graph"): the file names the model.
  graph_.name = std::filesystem::path(file_).stem().string();
  graph_.ir_version = source_ir_version_;
  for (const auto& op : model.opset_import()) {
    // The opset the model was written at, which the export writes back.
    graph_.opsets.emplace_back(op.domain(), is_default_domain(op.domain()) ? source_opset_ : op.version());
  }

  for (const auto& v : g.input()) types_by_name_[v.name()] = v.type();
  for (const auto& v : g.value_info()) types_by_name_[v.name()] = v.type();
  for (const auto& v : g.output()) types_by_name_[v.name()] = v.type();

  // Before IR 4 every initializer had to be listed as a graph input too:
  // those are weights. From IR 4 on, an initializer named like a graph
  // input is the input's default, which a caller may override.
  const bool defaults = model.ir_version() >= 4;
  std::set<std::string> initializer_names, input_names;
  for (const auto& t : g.initializer()) initializer_names.insert(t.name());
  for (const auto& v : g.input()) {
    if (initializer_names.contains(v.name()) && !defaults) continue;
    if (absl::Status s = add_input(v); !s.ok()) return s;
    input_names.insert(v.name());
  }
  for (const auto& t : g.initializer()) {
    auto mapped = external_.find(t.name());
    absl::StatusOr<Tensor> value =
        mapped != external_.end() ? mapped->second : tensor_from_proto(t, owned);
    if (!value.ok()) return error("initializer '{}': {}", t.name(), message(value.status()));
    if (input_names.contains(t.name())) {
      if (absl::Status s = add_input_default(t.name(), *value); !s.ok()) return s;
    } else {
      add_weight(t.name(), *value);
    }
  }
  if (g.sparse_initializer_size() > 0)
    return error("sparse initializers are not supported (initializer '{}')",
                 g.sparse_initializer(0).values().name());
  for (int k = 0; k < g.node_size(); ++k) {
    if (absl::Status s = add_node(g.node(k), k); !s.ok()) return s;
  }
  for (const auto& v : g.output()) {
    auto it = values_.find(v.name());
    if (it == values_.end()) return error("graph output '{}' is never computed", v.name());
    graph_.outputs.push_back({it->second, v.name()});
  }
  prune();
  return std::move(graph_);
}

std::vector<std::string> Importer::unsized_symbols() const {
  std::vector<std::string> unsized;
  for (const auto& [symbol, size] : graph_.symbols.sizes) {
    if (!options_.dims.contains(symbol)) unsized.push_back(symbol);
  }
  return unsized;
}

absl::StatusOr<TensorType> Importer::tensor_type(const onnx::TypeProto& type,
                                                 const std::string& name, bool need_static) const {
  const auto& tt = type.tensor_type();
  std::optional<DType> dtype = dtype_from_onnx(tt.elem_type());
  if (!dtype) return plain("'{}' has an unsupported element type ({})", name, tt.elem_type());
  if (auto four_bit = four_bit_types_.find(name); four_bit != four_bit_types_.end())
    dtype = four_bit->second;
  TensorType out{*dtype, {}};
  if (!tt.has_shape()) {
    if (need_static) return plain("the shape of '{}' is unknown (not even its rank)", name);
    return out;
  }
  for (const auto& d : tt.shape().dim()) {
    if (!d.has_dim_value()) {
      if (need_static)
        return plain("the shape of '{}' is not static (dimension '{}' is unresolved)", name,
                     d.dim_param());
      out.dims.push_back(-1);
      continue;
    }
    out.dims.push_back(d.dim_value());
  }
  return out;
}

absl::StatusOr<TensorType> Importer::value_type(const std::string& name) const {
  auto it = types_by_name_.find(name);
  if (it == types_by_name_.end() || it->second.value_case() == onnx::TypeProto::VALUE_NOT_SET)
    return plain("the type of '{}' cannot be inferred", name);
  if (!it->second.has_tensor_type() || !it->second.tensor_type().has_shape())
    return TensorType{DType::kOther, {}};
  return tensor_type(it->second, name, /*need_static=*/false);
}

absl::StatusOr<int> Importer::append(Op op, Attributes attributes, std::vector<int> inputs,
                                     std::string name) {
  absl::StatusOr<Attributes> a = normalize_attributes(op, std::move(attributes));
  if (!a.ok()) return a.status();
  std::vector<ValueType> in;
  for (int i : inputs) in.push_back(types_[i]);
  absl::StatusOr<ValueType> t = infer_type(op, *a, in);
  if (!t.ok()) return t.status();
  graph_.nodes.push_back(Node{op, std::move(*a), std::move(inputs), std::move(name)});
  types_.push_back(std::move(*t));
  return graph_.size() - 1;
}

absl::Status Importer::add_input(const onnx::ValueInfoProto& v) {
  if (auto it = seeded_.find(v.name()); it != seeded_.end()) {
    absl::StatusOr<TensorType> t = tensor_type(v.type(), v.name(), true);
    if (!t.ok()) return error("{}", message(t.status()));
    graph_.weights[v.name()] =
        WeightInit{nullptr, stable_hash(v.name()), it->second.first, it->second.second};
    return define(v.name(),
                  append(Op::kWeight, leaf_attributes(v.name(), t->dims, t->dtype), {}, v.name()));
  }
  at_run_time_.insert(v.name());
  if (v.type().value_case() == onnx::TypeProto::VALUE_NOT_SET)
    return error("input '{}' has no type", v.name());
  Attributes a;
  if (v.type().has_tensor_type()) {
    absl::StatusOr<TensorType> t = tensor_type(v.type(), v.name(), true);
    if (!t.ok()) return error("{}", message(t.status()));
    a = leaf_attributes(v.name(), t->dims, t->dtype);
  } else {
    a = leaf_attributes(v.name(), {}, DType::kOther);
    a.set("onnx_type", serialize_base64(v.type()));
  }
  return define(v.name(), append(Op::kInput, std::move(a), {}, v.name()));
}

absl::Status Importer::define(const std::string& name, absl::StatusOr<int> id) {
  if (!id.ok()) return error("'{}': {}", name, message(id.status()));
  values_[name] = *id;
  return absl::OkStatus();
}

std::string Importer::where(const onnx::NodeProto& n, int k) const {
  return fmt::format("node {} ({}{})", k, n.op_type(), n.name().empty() ? "" : ", " + n.name());
}

bool Importer::at_run_time(const onnx::NodeProto& n) const {
  if (std::ranges::none_of(n.input(), [&](const std::string& in) { return at_run_time_.contains(in); }))
    return false;
  // onnxruntime's constant folding reads the type of a Shape's input (of
  // no other operator's: a Size of a computed value runs).
  if (!is_default_domain(n.domain()) || n.op_type() != "Shape") return true;
  if (graph_.symbols.empty()) return false;
  auto value = n.input_size() > 0 ? values_.find(n.input(0)) : values_.end();
  auto probe = n.input_size() > 0 ? probe_dims_.find(n.input(0)) : probe_dims_.end();
  if (value == values_.end() || probe == probe_dims_.end()) return true;
  const ValueType& type = types_[value->second];
  if (type.is_tuple) return true;
  const Dims& dims = type.tensor().dims;
  if (probe->second.size() != dims.size()) return true;
  const auto [start, end] = shape_axes(n, static_cast<std::int64_t>(dims.size()));
  for (std::int64_t d = start; d < end; ++d)
    if (dims[static_cast<std::size_t>(d)] != probe->second[static_cast<std::size_t>(d)]) return true;
  return false;
}

absl::Status Importer::add_node(const onnx::NodeProto& n, int k) {
  for (const std::string& in : n.input()) {
    if (!in.empty() && !values_.contains(in))
      return error("{}: input '{}' is not computed before it", where(n, k), in);
  }
  node_at_run_time_ = at_run_time(n);
  if (node_at_run_time_) at_run_time_.insert(n.output().begin(), n.output().end());
  if (n.output_size() == 1) {
    if (auto it = folded_.find(n.output(0)); it != folded_.end()) {
      add_weight(n.output(0), it->second);
      return absl::OkStatus();
    }
    if (auto it = expanded_.find(n.output(0)); it != expanded_.end()) {
      if (std::optional<int> whole = add_expanded(it->second)) return define(n.output(0), *whole);
    }
  }
  if (n.output_size() == 1 && dequantized_at_load_.contains(n.output(0))) {
    absl::StatusOr<bool> respelled = add_dequantized_at_load(n);
    if (!respelled.ok()) return error("{}: {}", where(n, k), message(respelled.status()));
    if (*respelled) return absl::OkStatus();
  }
  if (n.domain() == kKeptDomain && (n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear")) {
    // Opset 21's blocked scales and output_dtype, which opset 17's spelling
    // lacks: the IR's operators read them whatever the opset.
    onnx::NodeProto in_default_domain = n;
    in_default_domain.clear_domain();
    absl::StatusOr<bool> mapped = add_known(in_default_domain);
    if (!mapped.ok()) return error("{}: {}", where(n, k), message(mapped.status()));
    if (*mapped) return absl::OkStatus();
  }
  if (n.domain() == kKeptDomain) {  // as the file writes it (KeptNodes)
    auto why = n.output_size() > 0 ? kept_.find(n.output(0)) : kept_.end();
    why_opaque_ = why != kept_.end() ? why->second : "no spelling at the opset read";
    absl::Status s = add_opaque(n, k);
    return s.ok() ? s : error("{}: kept as written ({}), but {}", where(n, k), why_opaque_, message(s));
  }
  if (is_default_domain(n.domain()) && n.op_type() == "Constant") {
    if (std::optional<Tensor> value = constant_node_value(n)) {
      add_weight(n.output(0), *value);
      return absl::OkStatus();
    }
  }
  why_opaque_ = fmt::format("an operator of domain '{}'", n.domain());
  if (is_default_domain(n.domain()) || n.domain() == "com.microsoft") {
    absl::StatusOr<bool> mapped = add_known(n);
    if (!mapped.ok()) return error("{}: {}", where(n, k), message(mapped.status()));
    if (*mapped) return absl::OkStatus();
  }
  absl::Status s = add_opaque(n, k);
  return s.ok() ? s : error("{}: {}", where(n, k), message(s));
}

std::optional<int> Importer::neutral_operand_other(Op op, const std::vector<int>& inputs,
                                                   const ValueType& type) const {
  if (inputs.size() != 2 || type.is_tuple) return std::nullopt;
  const double neutral = op == Op::kAdd || op == Op::kSub ? 0.0 : 1.0;
  if (op != Op::kAdd && op != Op::kSub && op != Op::kMul && op != Op::kDiv) return std::nullopt;
  // Sub and Div have their neutral element on the right only.
  const bool commutes = op == Op::kAdd || op == Op::kMul;
  for (std::size_t k : {std::size_t{1}, std::size_t{0}}) {
    if (k == 0 && !commutes) break;
    const int other = inputs[1 - k];
    auto it = constants_.find(graph_.nodes[inputs[k]].name);
    const Node& operand = graph_.nodes[inputs[k]];
    if ((operand.op != Op::kWeight && operand.op != Op::kConstant) || it == constants_.end() ||
        it->second.dtype() != DType::kFloat32 || types_[other] != type)
      continue;
    const auto values = it->second.floats();
    if (std::ranges::all_of(values, [&](float v) { return v == neutral; })) return other;
  }
  return std::nullopt;
}

absl::StatusOr<bool> Importer::add_known(const onnx::NodeProto& n) {
  std::optional<Mapped> m = map_known(n);
  if (!m) return false;
  const auto refuse = [&](std::string why) {
    why_opaque_ = std::move(why);
    return false;
  };
  absl::StatusOr<Attributes> a = normalize_attributes(m->op, m->attributes);
  if (!a.ok()) return refuse(std::string(message(a.status())));
  compose_layout(*m, *a);
  std::vector<ValueType> in;
  for (int i : m->inputs) in.push_back(types_[i]);
  absl::StatusOr<ValueType> ir = infer_type(m->op, *a, in);
  if (!ir.ok()) return refuse(fmt::format("the IR does not type it: {}", message(ir.status())));
  std::vector<int> outputs = m->outputs;
  if (outputs.empty()) {
    for (int o = 0; o < n.output_size(); ++o) outputs.push_back(o);
  }
  if (ir->parts.size() != outputs.size())
    return refuse(fmt::format("the IR gives {} outputs, ONNX {}", ir->parts.size(), outputs.size()));
  for (std::size_t p = 0; p < outputs.size(); ++p) {
    if (outputs[p] < n.output_size() && !agrees(ir->parts[p], n.output(outputs[p])))
      return refuse(fmt::format("output {}: the IR's type {} differs from ONNX's inference",
                                outputs[p], to_string(ir->parts[p])));
  }
  // A Reshape spelled with its input's shape, a Slice that keeps every
  // element in order and a Pad by nothing are Identities (exporters write
  // them for windows that happen to fit).
  const Ints* steps = a->get_ints("steps");
  if ((m->op == Op::kReshape || m->op == Op::kPad || m->op == Op::kSlice) && *ir == types_[m->inputs[0]] &&
      (!steps || std::ranges::all_of(*steps, [](std::int64_t s) { return s == 1; })))
    make_identity(*m, *a);
  if (std::optional<int> kept = neutral_operand_other(m->op, m->inputs, *ir)) {
    m->inputs = {*kept};
    make_identity(*m, *a);
  }
  absl::StatusOr<std::optional<Tensor>> value = fold_weights_only(m->op, *a, m->inputs, *ir, n.output(0));
  if (!value.ok()) return refuse(fmt::format("its constant inputs: {}", message(value.status())));
  if (*value) {
    if (node_at_run_time_) {
      FoldedWork work{m->op, *a, {}, *ir, n.output(0), {}};
      for (int i : m->inputs) {
        work.inputs.push_back(types_[i]);
        work.reads.push_back(graph_.nodes[i].name);
      }
      graph_.folded_at_import.push_back(std::move(work));
    }
    add_weight(n.output(0), **value);
    return true;
  }
  std::string name = ir->is_tuple ? n.output(0) + "_parts" : n.output(0);
  absl::StatusOr<int> id = append(m->op, std::move(*a), std::move(m->inputs), name);
  if (!id.ok()) return id.status();
  if (!types_[*id].is_tuple) {
    values_[n.output(0)] = *id;
    return true;
  }
  return add_tuple_gets(n, *id, outputs).ok();  // Split: a tuple, even of one part
}

absl::Status Importer::add_tuple_gets(const onnx::NodeProto& n, int tuple,
                                      const std::vector<int>& outputs) {
  const std::size_t parts = outputs.empty() ? static_cast<std::size_t>(n.output_size()) : outputs.size();
  for (std::size_t p = 0; p < parts; ++p) {
    const int o = outputs.empty() ? static_cast<int>(p) : outputs[p];
    if (o >= n.output_size() || n.output(o).empty()) continue;
    absl::StatusOr<int> get = append(Op::kTupleGet, {{"index", static_cast<std::int64_t>(p)}},
                                     {tuple}, n.output(o));
    if (!get.ok()) return get.status();
    values_[n.output(o)] = *get;
  }
  return absl::OkStatus();
}

bool Importer::agrees(const TensorType& ir, const std::string& name) const {
  auto it = types_by_name_.find(name);
  if (it == types_by_name_.end() || !it->second.has_tensor_type()) return true;
  absl::StatusOr<TensorType> onnx_type = tensor_type(it->second, name, /*need_static=*/false);
  // libonnx infers a 4-bit value as its 8-bit kin (disguise_4bit).
  const bool kin = (ir.dtype == DType::kInt4 && onnx_type.ok() && onnx_type->dtype == DType::kInt8) ||
                   (ir.dtype == DType::kUInt4 && onnx_type.ok() && onnx_type->dtype == DType::kUInt8);
  if (!onnx_type.ok() || (onnx_type->dtype != ir.dtype && !kin)) return false;
  if (!it->second.tensor_type().has_shape()) return true;
  if (onnx_type->dims.size() != ir.dims.size()) return false;
  for (std::size_t i = 0; i < ir.dims.size(); ++i) {
    if (onnx_type->dims[i] >= 0 && onnx_type->dims[i] != ir.dims[i]) return false;
  }
  return true;
}

absl::Status Importer::add_opaque(const onnx::NodeProto& n, int k) {
  Attributes a{{"op_type", n.op_type()}, {"domain", n.domain()}};
  std::vector<int> inputs;
  Ints absent_in, absent_out;
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty())
      absent_in.push_back(i);
    else
      inputs.push_back(values_.at(n.input(i)));
  }
  const std::set<std::string> outer = node_outer_names(n);
  if (!outer.empty()) a.set(kExplicitInputs, static_cast<std::int64_t>(inputs.size()));
  for (const std::string& name : outer) {
    auto it = values_.find(name);
    if (it == values_.end())
      return absl::InvalidArgumentError(
          fmt::format("a subgraph reads '{}', which is not computed before the node", name));
    inputs.push_back(it->second);
  }
  std::vector<TensorType> outputs;
  for (int o = 0; o < n.output_size(); ++o) {
    if (n.output(o).empty()) {
      absent_out.push_back(o);
      outputs.push_back(TensorType{DType::kOther, {}});
      continue;
    }
    absl::StatusOr<TensorType> t = value_type(n.output(o));
    if (!t.ok()) return t.status();
    if (t->dtype == DType::kOther)
      a.set(fmt::format("{}{}", kOutTypePrefix, o),
            serialize_base64(types_by_name_.at(n.output(o))));
    outputs.push_back(std::move(*t));
  }
  if (outputs.empty()) return absl::InvalidArgumentError("the node has no outputs");
  set_opaque_outputs(a, outputs);
  set_probe_shapes(n, outputs, a);
  if (n.attribute_size() > 0) {
    onnx::NodeProto only_attributes;
    *only_attributes.mutable_attribute() = n.attribute();
    a.set(kAttrBlob, serialize_base64(only_attributes));
  }
  if (!absent_in.empty()) a.set(kAbsentInputs, absent_in);
  if (!absent_out.empty()) a.set(kAbsentOutputs, absent_out);
  if (is_random_op(n.op_type())) a.set(kInstance, fmt::format("{}#{}", n.name(), k));
  // ConstantOfShape's fill, for the interpreter (kernels::onnx_op).
  if (is_default_domain(n.domain()) && n.op_type() == "ConstantOfShape") {
    double fill = 0;
    for (const onnx::AttributeProto& attr : n.attribute()) {
      if (attr.name() != "value" || !attr.has_t()) continue;
      absl::StatusOr<Tensor> value = tensor_from_proto(attr.t());
      if (std::optional<double> v = value.ok() ? scalar_number(*value) : std::nullopt) fill = *v;
    }
    a.set("fill_value", fill);
  }
  std::string name = n.output_size() == 1 ? n.output(0) : fmt::format("{}_parts", n.output(0));
  graph_.opaque_reasons[name] = why_opaque_;
  absl::StatusOr<int> id = append(Op::kOpaque, std::move(a), std::move(inputs), name);
  if (!id.ok()) return id.status();
  if (n.output_size() == 1) {
    values_[n.output(0)] = *id;
    return absl::OkStatus();
  }
  return add_tuple_gets(n, *id, {});
}

void Importer::prune() {
  const std::vector<bool> live = live_nodes(graph_);
  std::vector<int> remap(graph_.nodes.size(), -1);
  std::vector<Node> kept;
  for (int i = 0; i < graph_.size(); ++i) {
    if (!live[i]) {
      if (graph_.nodes[i].op == Op::kWeight)
        graph_.weights.erase(*graph_.nodes[i].attributes.get_string("name"));
      continue;
    }
    Node n = std::move(graph_.nodes[i]);
    for (int& in : n.inputs) in = remap[in];
    remap[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(n));
  }
  graph_.nodes = std::move(kept);
  for (GraphOutput& o : graph_.outputs) o.node = remap[o.node];
  // The folded work counts where a live node reads its value, or folded
  // work that counts does.
  std::set<std::string> read;
  for (const Node& n : graph_.nodes) read.insert(n.name);
  std::vector<FoldedWork> counted;
  for (auto it = graph_.folded_at_import.rbegin(); it != graph_.folded_at_import.rend(); ++it) {
    if (!read.contains(it->name)) continue;
    read.insert(it->reads.begin(), it->reads.end());
    counted.push_back(std::move(*it));
  }
  graph_.folded_at_import.assign(std::make_move_iterator(counted.rbegin()),
                                 std::make_move_iterator(counted.rend()));
}

}  // namespace onnx_io

}  // namespace saturn::tensor

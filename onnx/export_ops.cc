// IR → ONNX: each IR operator written as ONNX nodes for the model's opset.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"
#include "saturn/onnx/exporter.h"
#include "saturn/onnx/proto.h"

namespace saturn::tensor::onnx_io {

std::string Exporter::constant(const Tensor& value) {
  std::string name = fresh("saturn_const");
  add_initializer(value, name);
  return name;
}

std::string Exporter::ints_constant(const Ints& values) {
  return constant(
      Tensor(TensorType{DType::kInt64, {static_cast<std::int64_t>(values.size())}}, Ints(values)));
}

std::string Exporter::scalar_constant(double value) {
  return constant(narrowed(Tensor::scalar(static_cast<float>(value)), float_type_));
}

onnx::NodeProto* Exporter::node(std::string_view op_type, std::vector<std::string> inputs,
                                std::vector<std::string> outputs) {
  onnx::NodeProto* n = out_->add_node();
  n->set_op_type(std::string(op_type));
  for (std::string& in : inputs) n->add_input(std::move(in));
  for (std::string& o : outputs) n->add_output(std::move(o));
  return n;
}

onnx::NodeProto* Exporter::runtime_node(Op op, std::vector<std::string> inputs,
                                        std::vector<std::string> outputs) {
  return domain_node(std::string(*runtime_domain(op)), op_name(op), std::move(inputs),
                     std::move(outputs));
}

onnx::NodeProto* Exporter::domain_node(const std::string& domain, std::string_view op_type,
                                       std::vector<std::string> inputs,
                                       std::vector<std::string> outputs) {
  bool imported = false;
  for (const auto& o : model_.opset_import()) imported = imported || o.domain() == domain;
  if (!imported) {
    auto* o = model_.add_opset_import();
    o->set_domain(domain);
    o->set_version(1);
  }
  onnx::NodeProto* n = node(op_type, std::move(inputs), std::move(outputs));
  n->set_domain(domain);
  return n;
}

std::string Exporter::unary(std::string_view op_type, const std::string& x, std::string out) {
  if (out.empty()) out = fresh("saturn_tmp");
  node(op_type, {x}, {out});
  return out;
}

std::string Exporter::binary(std::string_view op_type, const std::string& a, const std::string& b,
                             std::string out) {
  if (out.empty()) out = fresh("saturn_tmp");
  node(op_type, {a, b}, {out});
  return out;
}

std::int64_t Exporter::axis_of(const Node& n, std::size_t k) const {
  const std::int64_t axis = *n.attributes.get_int("axis");
  return normalize_axis(axis, types_[n.inputs[k]].parts[0].rank()).value_or(axis);
}

absl::Status Exporter::emit(int i) {
  const Node& n = g_.nodes[i];
  auto written = written_.find(i);
  const Attributes& a = written == written_.end() ? n.attributes : written->second;
  std::vector<std::string> in;
  for (int x : n.inputs) in.push_back(names_[x].empty() ? std::string() : names_[x][0]);
  const std::string out = names_[i].empty() ? std::string() : names_[i][0];
  const std::size_t rank = types_[i].parts[0].rank();
  float_type_ = is_float(types_[i].parts[0].dtype) ? types_[i].parts[0].dtype : DType::kFloat32;
  if (is_reduction(n.op)) return emit_reduce(n.op, a, in, out);
  if (is_quantization(n.op)) {
    // A per-axis scale names its axis (opset 13 on, where it was read), a
    // blocked one its block's length too. Blocks and 4-bit integers came in
    // opset 21: such a node is written as the lowering keeps it
    // (kKeptDomain), and raise_to_versions puts it back.
    const std::int64_t block_size = *a.get_int("block_size");
    const bool opset_21 = block_size > 0 || is_4bit(types_[n.inputs[0]].parts[0].dtype) ||
                          is_4bit(types_[i].parts[0].dtype);
    if (opset_21 && default_domain_opset(g_.opsets) < 21)
      return absl::InvalidArgumentError(fmt::format(
          "blocked scales and 4-bit integers need opset 21; the model declares opset {}",
          default_domain_opset(g_.opsets)));
    auto* q = opset_21 && opset_ < 21 ? domain_node(std::string(kKeptDomain), op_name(n.op), in, {out})
                                      : node(op_name(n.op), in, {out});
    if (types_[n.inputs[1]].parts[0].num_elements() > 1 || block_size > 0)
      set_int(q, "axis", axis_of(n, 0));
    if (block_size > 0) set_int(q, "block_size", block_size);
    return absl::OkStatus();
  }
  // onnxruntime's integer operators (QLinearAdd to MatMulNBits).
  if (is_integer_operator(n.op) && runtime_domain(n.op))
    return emit_quantized_runtime(n.op, a, in, out);
  switch (n.op) {
    case Op::kInput:
    case Op::kTupleGet:
    case Op::kTuple:
      return absl::OkStatus();  // the interface, or names only
    case Op::kWeight:
    case Op::kConstant:
      return absl::InternalError("a weight that was not folded");
    case Op::kEnlarge:
    case Op::kMergeGroups:
      return absl::InvalidArgumentError(
          "this kernel rewrite applies to weights only; its input is not a weight");
    case Op::kGemm:
      return emit_gemm(a, in, out);
    case Op::kConv:
    case Op::kConvInteger:
    case Op::kQLinearConv:
      return emit_conv(n.op, a, in, out);
    case Op::kDynamicQuantizeLinear:  // a tuple: its three outputs
      node(op_name(n.op), in, names_[i]);
      return absl::OkStatus();
    case Op::kMaxPool:
    case Op::kAveragePool:
      return emit_pool(n.op, a, in, out);
    case Op::kGelu:
      return emit_gelu(in, out);
    case Op::kClip:
      return emit_clip(a, in, out);
    case Op::kHardSigmoid: {
      auto* h = node("HardSigmoid", in, {out});
      set_float(h, "alpha", *a.get_float("alpha"));
      set_float(h, "beta", *a.get_float("beta"));
      return absl::OkStatus();
    }
    case Op::kSoftmax:
      return emit_softmax(a, in, out, rank);
    case Op::kLayerNorm:
      return emit_layer_norm(i, in, out, rank);
    case Op::kSimplifiedLayerNorm:
      return emit_simplified_layer_norm(a, in, out, rank);
    case Op::kSkipSimplifiedLayerNorm:
    case Op::kSkipLayerNorm:
      return emit_skip_layer_norm(i, a, in);
    case Op::kGroupQueryAttention:
      return emit_group_query_attention(i, a, in, out);
    case Op::kRotaryEmbedding:
      return emit_rotary_embedding(a, in, out);
    case Op::kBatchNorm:
      set_float(node("BatchNormalization", in, {out}), "epsilon", *a.get_float("epsilon"));
      return absl::OkStatus();
    case Op::kInstanceNorm:
      set_float(node("InstanceNormalization", in, {out}), "epsilon", *a.get_float("epsilon"));
      return absl::OkStatus();
    case Op::kTranspose:
      return emit_transpose(a, in, out);
    case Op::kReshape:
      return emit_reshape(i, a, in, out);
    case Op::kFlatten:
      set_int(node("Flatten", in, {out}), "axis", *a.get_int("axis"));
      return absl::OkStatus();
    case Op::kConcat:
      set_int(node("Concat", in, {out}), "axis", axis_of(n, 0));
      return absl::OkStatus();
    case Op::kSplit:
      return emit_split(i, in);
    case Op::kSlice:
      return emit_slice(a, in, out);
    case Op::kGather:
      set_int(node("Gather", in, {out}), "axis", axis_of(n, 0));
      return absl::OkStatus();
    case Op::kPad:
      return emit_pad(a, in, out);
    case Op::kShape:
    case Op::kCast:
      return emit_shape_or_cast(n.op, a, in, out);
    case Op::kExpand:
    case Op::kTile:
    case Op::kConstantOfShape:
    case Op::kCumSum:
    case Op::kGatherElements:
    case Op::kGatherND:
    case Op::kScatterND:
    case Op::kScatterElements:
    case Op::kResize:
    case Op::kEyeLike:
    case Op::kTrilu:
    case Op::kGridSample:
      return emit_value_op(n, a, in, out);
    case Op::kTopK:
      return emit_top_k(i, in);
    case Op::kIsInf: {
      auto* inf = node("IsInf", in, {out});
      set_int(inf, "detect_negative", *a.get_int("detect_negative"));
      set_int(inf, "detect_positive", *a.get_int("detect_positive"));
      return absl::OkStatus();
    }
    case Op::kOpaque:
      return emit_opaque(i, in);
    default:
      // The operators whose ONNX form is their IR form, without attributes.
      node(op_name(n.op), in, {out});
      return absl::OkStatus();
  }
}

absl::Status Exporter::emit_shape_or_cast(Op op, const Attributes& a,
                                          const std::vector<std::string>& in,
                                          const std::string& out) {
  if (op == Op::kCast) {
    set_int(node("Cast", in, {out}), "to", dtype_to_onnx(*parse_dtype(*a.get_string("to"))));
    return absl::OkStatus();
  }
  auto* shape = node("Shape", in, {out});
  if (*a.get_int("start") != 0) set_int(shape, "start", *a.get_int("start"));
  if (*a.get_int("end") != std::numeric_limits<std::int64_t>::max())
    set_int(shape, "end", *a.get_int("end"));
  return absl::OkStatus();
}

// Matrix products, convolution and pooling.

absl::Status Exporter::emit_gemm(const Attributes& a, const std::vector<std::string>& in,
                                 const std::string& out) {
  auto* g = node("Gemm", in, {out});
  if (*a.get_float("alpha") != 1.0) set_float(g, "alpha", *a.get_float("alpha"));
  if (*a.get_float("beta") != 1.0) set_float(g, "beta", *a.get_float("beta"));
  if (*a.get_int("transA") != 0) set_int(g, "transA", 1);
  if (*a.get_int("transB") != 0) set_int(g, "transB", 1);
  return absl::OkStatus();
}

absl::Status Exporter::emit_conv(Op op, const Attributes& a, const std::vector<std::string>& in,
                                 const std::string& out) {
  const std::string& act = *a.get_string("activation");
  std::string conv_out = act == "none" ? out : fresh("saturn_tmp");
  auto* c = node(op_name(op), in, {conv_out});
  set_ints(c, "strides", *a.get_ints("strides"));
  set_ints(c, "pads", *a.get_ints("pads"));
  set_ints(c, "dilations", *a.get_ints("dilations"));
  set_int(c, "group", *a.get_int("group"));
  if (act == "relu") unary("Relu", conv_out, out);
  if (act == "sigmoid") unary("Sigmoid", conv_out, out);
  if (act == "tanh") unary("Tanh", conv_out, out);
  return absl::OkStatus();
}

absl::Status Exporter::emit_pool(Op op, const Attributes& a, const std::vector<std::string>& in,
                                 const std::string& out) {
  auto* p = node(op == Op::kMaxPool ? "MaxPool" : "AveragePool", in, {out});
  set_ints(p, "kernel_shape", *a.get_ints("kernel_shape"));
  set_ints(p, "strides", *a.get_ints("strides"));
  set_ints(p, "pads", *a.get_ints("pads"));
  if (op == Op::kAveragePool && *a.get_int("count_include_pad") != 0)
    set_int(p, "count_include_pad", 1);
  return absl::OkStatus();
}

// Elementwise operators.

absl::Status Exporter::emit_gelu(const std::vector<std::string>& in, const std::string& out) {
  // GELU is an ONNX operator only from opset 20: x * 0.5 * (1 + erf(x / sqrt 2)).
  std::string e = unary("Erf", binary("Div", in[0], scalar_constant(std::sqrt(2.0))));
  std::string half = binary("Mul", in[0], scalar_constant(0.5));
  binary("Mul", half, binary("Add", e, scalar_constant(1.0)), out);
  return absl::OkStatus();
}

absl::Status Exporter::emit_clip(const Attributes& a, const std::vector<std::string>& in,
                                 const std::string& out) {
  if (opset_ < 11) {
    auto* c = node("Clip", in, {out});
    set_float(c, "min", *a.get_float("min"));
    set_float(c, "max", *a.get_float("max"));
  } else {
    node("Clip",
         {in[0], scalar_constant(*a.get_float("min")), scalar_constant(*a.get_float("max"))},
         {out});
  }
  return absl::OkStatus();
}

// Normalizations and reductions.

absl::Status Exporter::emit_softmax(const Attributes& a, const std::vector<std::string>& in,
                                    const std::string& out, std::size_t rank) {
  std::int64_t axis = *normalize_axis(*a.get_int("axis"), rank);
  if (opset_ >= 13 || axis + 1 == static_cast<std::int64_t>(rank)) {
    set_int(node("Softmax", in, {out}), "axis", axis);
    return absl::OkStatus();
  }
  // Before opset 13 Softmax works on the last axes flattened: move
  // `axis` last, and back.
  Ints perm(rank);
  for (std::size_t k = 0; k < rank; ++k) perm[k] = static_cast<std::int64_t>(k);
  std::swap(perm[axis], perm[rank - 1]);
  std::string t = fresh("saturn_tmp"), s = fresh("saturn_tmp");
  set_ints(node("Transpose", in, {t}), "perm", perm);
  set_int(node("Softmax", {t}, {s}), "axis", static_cast<std::int64_t>(rank) - 1);
  set_ints(node("Transpose", {s}, {out}), "perm", perm);
  return absl::OkStatus();
}

absl::Status Exporter::emit_reduce(Op op, const Attributes& a, const std::vector<std::string>& in,
                                    const std::string& out) {
  const Ints& axes = *a.get_ints("axes");
  // ReduceSum takes its axes as an input from opset 13 on (the others from
  // 18, which raise_to_versions respells).
  const bool axes_input = op == Op::kReduceSum && opset_ >= 13;
  std::vector<std::string> inputs = in;
  if (axes_input && !axes.empty()) inputs.push_back(ints_constant(axes));
  auto* r = node(op_name(op), inputs, {out});
  if (!axes_input && !axes.empty()) set_ints(r, "axes", axes);
  set_int(r, "keepdims", *a.get_int("keepdims"));
  return absl::OkStatus();
}

// onnxruntime's fused operators, in its domain.

// Shape operators.

absl::Status Exporter::emit_transpose(const Attributes& a, const std::vector<std::string>& in,
                                      const std::string& out) {
  auto* t = node("Transpose", in, {out});
  if (!a.get_ints("perm")->empty()) set_ints(t, "perm", *a.get_ints("perm"));
  return absl::OkStatus();
}

absl::Status Exporter::emit_reshape(int i, const Attributes& a, const std::vector<std::string>& in,
                                    const std::string& out) {
  const Ints& shape = *a.get_ints("shape");
  if (std::ranges::count(shape, kAxisAtRunTime) == 0) {
    if (opset_ < 5)
      set_ints(node("Reshape", in, {out}), "shape", shape);
    else
      node("Reshape", {in[0], ints_constant(shape)}, {out});
    return absl::OkStatus();
  }
  // The shape as a value: runs of written sizes, and the axes whose sizes
  // are read from another value's shape (tensor/probe.h).
  if (opset_ < 5) return absl::InvalidArgumentError("a computed shape needs opset 5");
  std::vector<std::string> parts;
  Ints run;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] != kAxisAtRunTime) {
      run.push_back(shape[k]);
      continue;
    }
    std::optional<std::string> size =
        axis_size_value(i, type(i).dims[k], probe_[i].parts[0].dims[k]);
    if (!size)
      return absl::InvalidArgumentError(fmt::format(
          "the graph holds only at the given sizes: no value gives output axis {}'s size", k));
    if (!run.empty()) parts.push_back(ints_constant(run)), run.clear();
    parts.push_back(*size);
  }
  if (!run.empty()) parts.push_back(ints_constant(run));
  const std::string computed = fresh(out + "_shape");
  set_int(node("Concat", parts, {computed}), "axis", 0);
  node("Reshape", {in[0], computed}, {out});
  return absl::OkStatus();
}

absl::Status Exporter::emit_split(int i, const std::vector<std::string>& in) {
  const Node& n = g_.nodes[i];
  const Attributes& a = n.attributes;
  onnx::NodeProto* s;
  if (opset_ < 13) {
    s = node("Split", in, names_[i]);
    set_ints(s, "split", *a.get_ints("split"));
  } else {
    s = node("Split", {in[0], ints_constant(*a.get_ints("split"))}, names_[i]);
  }
  set_int(s, "axis", axis_of(n, 0));
  return absl::OkStatus();
}

absl::Status Exporter::emit_slice(const Attributes& a, const std::vector<std::string>& in,
                                  const std::string& out) {
  const Ints& steps = *a.get_ints("steps");
  if (opset_ < 10) {
    if (std::ranges::any_of(steps, [](std::int64_t s) { return s != 1; }))
      return absl::InvalidArgumentError("Slice with steps needs opset 10 or later");
    auto* s = node("Slice", in, {out});
    set_ints(s, "starts", *a.get_ints("starts"));
    set_ints(s, "ends", *a.get_ints("ends"));
    if (!a.get_ints("axes")->empty()) set_ints(s, "axes", *a.get_ints("axes"));
    return absl::OkStatus();
  }
  std::vector<std::string> args = {in[0], ints_constant(*a.get_ints("starts")),
                                   ints_constant(*a.get_ints("ends"))};
  Ints axes = *a.get_ints("axes");
  if (axes.empty() && !steps.empty()) {
    for (std::size_t k = 0; k < a.get_ints("starts")->size(); ++k)
      axes.push_back(static_cast<std::int64_t>(k));
  }
  if (!axes.empty()) args.push_back(ints_constant(axes));
  if (!steps.empty()) args.push_back(ints_constant(steps));
  node("Slice", args, {out});
  return absl::OkStatus();
}

absl::Status Exporter::emit_pad(const Attributes& a, const std::vector<std::string>& in,
                                const std::string& out) {
  if (opset_ < 11) {
    auto* p = node("Pad", in, {out});
    set_ints(p, "pads", *a.get_ints("pads"));
    set_float(p, "value", *a.get_float("value"));
  } else {
    std::vector<std::string> args = {in[0], ints_constant(*a.get_ints("pads"))};
    // The pad value in the data's own type; 0, the default, is left out.
    if (*a.get_float("value") != 0.0) args.push_back(scalar_constant(*a.get_float("value")));
    node("Pad", args, {out});
  }
  return absl::OkStatus();
}

// Opaque operators.

absl::Status Exporter::emit_opaque(int i, std::vector<std::string> in) {
  const Attributes& a = g_.nodes[i].attributes;
  std::vector<std::string> outer = subgraph_reads(g_.nodes[i]);
  if (outer.size() > in.size() ||
      a.get_int(kExplicitInputs).value_or(static_cast<std::int64_t>(in.size())) !=
          static_cast<std::int64_t>(in.size() - outer.size()))
    return absl::InvalidArgumentError("the opaque node's subgraph inputs do not match its inputs");
  const std::size_t explicit_count = in.size() - outer.size();
  // Values a subgraph reads by name must be visible under that name.
  for (std::size_t k = 0; k < outer.size(); ++k) {
    const std::string& have = in[explicit_count + k];
    if (have == outer[k]) continue;
    auto [it, fresh_alias] = aliases_.emplace(outer[k], have);
    if (!fresh_alias && it->second != have)
      return absl::InvalidArgumentError(
          fmt::format("two values would need the name '{}' that a subgraph reads", outer[k]));
    if (fresh_alias) {
      if (taken_.contains(outer[k]))
        return absl::InvalidArgumentError(
            fmt::format("the name '{}' that a subgraph reads is taken by another value", outer[k]));
      taken_.insert(outer[k]);
      unary("Identity", have, outer[k]);
    }
  }
  in.resize(explicit_count);
  if (const Ints* absent = a.get_ints(kAbsentInputs)) {
    for (std::int64_t pos : *absent) {
      if (pos < 0 || pos > static_cast<std::int64_t>(in.size()))
        return absl::InvalidArgumentError("malformed absent_inputs");
      in.insert(in.begin() + pos, std::string());
    }
  }
  std::vector<std::string> outs = names_[i];
  if (const Ints* absent = a.get_ints(kAbsentOutputs)) {
    for (std::int64_t pos : *absent) {
      if (pos < 0 || pos >= static_cast<std::int64_t>(outs.size()))
        return absl::InvalidArgumentError("malformed absent_outputs");
      outs[pos].clear();
    }
  }
  onnx::NodeProto* n = node(*a.get_string("op_type"), in, outs);
  n->set_domain(*a.get_string("domain"));
  if (const std::string* blob = a.get_string(kAttrBlob)) {
    onnx::NodeProto attrs;
    if (!parse_base64(*blob, &attrs))
      return absl::InvalidArgumentError("malformed onnx_attributes");
    *n->mutable_attribute() = attrs.attribute();
  }
  return absl::OkStatus();
}

}  // namespace saturn::tensor::onnx_io

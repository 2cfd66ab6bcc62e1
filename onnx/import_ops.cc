// ONNX → IR: the known operators, mapped onto IR operators when the IR
// computes exactly what ONNX does for that opset and those attributes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"
#include "saturn/onnx/importer.h"
#include "saturn/tensor/probe.h"

namespace saturn::tensor::onnx_io {

namespace {

// Convolution and pooling padding from auto_pad, or the pads attribute.
std::optional<Ints> window_pads(AttrReader& r, const Dims& in, const Ints& kernel,
                                const Ints& strides, const Ints& dilations) {
  const auto ok = [&](const Ints& v) {
    return v.size() == kernel.size() &&
           std::ranges::all_of(v, [](std::int64_t x) { return x > 0; });
  };
  if (!ok(strides) || !ok(dilations) || !ok(kernel) || in.size() != kernel.size() + 2)
    return std::nullopt;
  std::string mode = r.s("auto_pad").value_or("NOTSET");
  if (mode == "NOTSET") {
    Ints pads = r.ints("pads").value_or(Ints(2 * kernel.size(), 0));
    if (pads.size() != 2 * kernel.size()) return std::nullopt;
    return pads;
  }
  if (r.find("pads") != nullptr) return std::nullopt;
  Ints begin(kernel.size(), 0), end(kernel.size(), 0);
  if (mode == "VALID") {
    begin.insert(begin.end(), end.begin(), end.end());
    return begin;
  }
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER") return std::nullopt;
  for (std::size_t i = 0; i < kernel.size(); ++i) {
    std::int64_t size = in[2 + i], stride = strides[i];
    std::int64_t out = (size + stride - 1) / stride;
    std::int64_t span = dilations[i] * (kernel[i] - 1) + 1;
    std::int64_t total = std::max<std::int64_t>(0, (out - 1) * stride + span - size);
    begin[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
    end[i] = total - begin[i];
  }
  begin.insert(begin.end(), end.begin(), end.end());
  return begin;
}

}  // namespace

std::optional<Mapped> Importer::map_known(const onnx::NodeProto& n) {
  std::vector<int> in;
  for (const std::string& name : n.input()) in.push_back(name.empty() ? -1 : values_.at(name));
  const auto refuse = [&](std::string why) {
    why_opaque_ = std::move(why);
    return std::nullopt;
  };
  // A Dropout's mask that nothing reads is left out (at inference it is all
  // true); one that is read keeps the node as it is.
  const bool unread_mask = n.op_type() == "Dropout" && n.output_size() == 2 &&
                           (n.output(1).empty() || !read_names_.contains(n.output(1)));
  // DynamicQuantizeLinear is an IR operator (saturn's JSON models) but read
  // from ONNX as opaque: its scale follows its input's whole range, so a
  // float rewrite before it (reassociated sums) can move every quantized
  // value by a step, which the self-check's float tolerance refuses as an
  // unsound result (BERT-base through quantize_dynamic: error ratio 225).
  // Opaque, it ends what the interpreter checks and onnxruntime's measured
  // check decides.
  if (n.op_type() == "DynamicQuantizeLinear")
    return refuse("its scale follows its input's range: a float rewrite before it may move "
                  "every quantized value by a step");
  if (n.output_size() != 1 && n.op_type() != "Split" && n.op_type() != "TopK" && !unread_mask &&
      n.op_type() != "SkipSimplifiedLayerNormalization" && n.op_type() != "SkipLayerNormalization")
    return refuse(fmt::format("{} outputs, where the IR operator has one", n.output_size()));
  if (in.empty() || in[0] < 0) return refuse("its first input is absent");
  for (std::size_t k = 0; k < in.size(); ++k) {
    const int i = in[k];
    if (i < 0) continue;
    if (types_[i].is_tuple || types_[i].parts[0].dtype == DType::kOther)
      return refuse(fmt::format("input {} has no tensor type", k));
    if (!types_[i].parts[0].is_static())
      return refuse(fmt::format("input {} has no static shape", k));
  }
  KnownNode node{n, AttrReader(n), std::move(in), types_};
  std::optional<Mapped> m = map_op(node);
  if (!m)
    return refuse(find_op(n.op_type()) ? "not mapped at these attributes or inputs"
                                       : "no IR operator");
  if (!node.attrs.all_read())
    return refuse(fmt::format("attribute '{}' is not mapped", node.attrs.first_unread()));
  for (int i : m->inputs) {
    if (i < 0) return refuse("an input the IR operator needs is absent");
  }
  return m;
}

std::optional<Mapped> Importer::map_op(KnownNode& node) {
  static const std::pair<std::string_view, Op> kSame[] = {
      {"Relu", Op::kRelu},         {"Sigmoid", Op::kSigmoid},
      {"Tanh", Op::kTanh},         {"Sqrt", Op::kSqrt},
      {"Erf", Op::kErf},           {"Add", Op::kAdd},
      {"Sub", Op::kSub},           {"Mul", Op::kMul},
      {"Div", Op::kDiv},           {"Pow", Op::kPow},
      {"MatMul", Op::kMatMul},     {"GlobalAveragePool", Op::kGlobalAveragePool},
      {"Identity", Op::kIdentity}, {"Neg", Op::kNeg},
      {"Abs", Op::kAbs},           {"Reciprocal", Op::kReciprocal},
      {"Exp", Op::kExp},           {"Log", Op::kLog},
      {"Sin", Op::kSin},           {"Cos", Op::kCos},
      {"HardSwish", Op::kHardSwish},
      {"Where", Op::kWhere},       {"Equal", Op::kEqual},
      {"Less", Op::kLess},         {"LessOrEqual", Op::kLessOrEqual},
      {"Greater", Op::kGreater},   {"GreaterOrEqual", Op::kGreaterOrEqual},
      {"And", Op::kAnd},           {"Or", Op::kOr},
      {"Not", Op::kNot},           {"IsNaN", Op::kIsNaN},
      {"Ceil", Op::kCeil},         {"Floor", Op::kFloor},
      {"Round", Op::kRound},       {"Sign", Op::kSign},
  };
  if (node.proto.domain() == "com.microsoft") return map_runtime(node);
  const std::string& t = node.proto.op_type();
  AttrReader& r = node.attrs;
  for (const auto& [name, op] : kSame) {
    // Old opsets' broadcast/consumed_inputs attributes keep a node opaque.
    if (t == name) return Mapped{op, {}, node.in};
  }
  if (t == "IsInf") {
    Mapped m{Op::kIsInf, {}, node.in};
    m.attributes.set("detect_negative", r.i("detect_negative").value_or(1));
    m.attributes.set("detect_positive", r.i("detect_positive").value_or(1));
    return m;
  }
  if (t == "Gemm") return map_gemm(node);
  if (t == "Conv") return map_conv(node, Op::kConv);
  if (t == "ConvInteger") return map_conv(node, Op::kConvInteger);
  if (t == "QLinearConv") return map_conv(node, Op::kQLinearConv);
  if (t == "MatMulInteger") {  // a's zero point, both or neither
    if (!node.present(2) && node.present(3)) return std::nullopt;
    return Mapped{Op::kMatMulInteger, {}, node.first(node.present(3) ? 4 : node.present(2) ? 3 : 2)};
  }
  if (t == "QLinearMatMul") {
    if (!node.all_present(8)) return std::nullopt;
    return Mapped{Op::kQLinearMatMul, {}, node.first(8)};
  }
  if (t == "MaxPool" || t == "AveragePool") return map_pool(node);
  if (t == "Clip") return map_clip(node);
  if (t == "HardSigmoid") {
    Mapped m{Op::kHardSigmoid, {}, node.in};
    if (auto v = r.f("alpha")) m.attributes.set("alpha", *v);
    if (auto v = r.f("beta")) m.attributes.set("beta", *v);
    return m;
  }
  if (t == "Softmax") return map_softmax(node);
  if (t == "LayerNormalization") {
    if (!node.present(2) || r.i("stash_type").value_or(1) != 1) return std::nullopt;
    Mapped m{Op::kLayerNorm, {}, node.in};
    m.attributes.set("axis", r.i("axis").value_or(-1));
    m.attributes.set("epsilon", r.f("epsilon").value_or(1e-5));
    return m;
  }
  if (t == "InstanceNormalization")
    return Mapped{Op::kInstanceNorm, {{"epsilon", r.f("epsilon").value_or(1e-5)}}, node.in};
  if (t == "BatchNormalization") {
    if (opset_ < 7 || r.i("training_mode").value_or(0) != 0 || r.i("spatial").value_or(1) != 1)
      return std::nullopt;
    r.f("momentum");  // training only
    return Mapped{Op::kBatchNorm, {{"epsilon", r.f("epsilon").value_or(1e-5)}}, node.in};
  }
  if (const std::optional<Op> op = find_op(t); op && is_reduction(*op)) return map_reduce(node, *op);
  if (t == "QuantizeLinear" || t == "DequantizeLinear") return map_quantization(node);
  if (t == "Transpose")
    return Mapped{Op::kTranspose, {{"perm", r.ints("perm").value_or(Ints{})}}, node.in};
  if (t == "Reshape") return map_reshape(node);
  if (t == "Squeeze" || t == "Unsqueeze" || t == "Flatten") return map_as_reshape(node);
  if (t == "Einsum") return map_einsum(node);
  if (t == "Cast") {
    // A cast to the type the value has already (float32 to float32 around
    // a normalization, as exporters write torch's .to()) is an identity.
    r.i("saturate");
    std::optional<std::int64_t> to = r.i("to");
    std::optional<DType> dtype = to ? dtype_from_onnx(static_cast<int>(*to)) : std::nullopt;
    if (!dtype || !is_plain_number(*dtype)) return std::nullopt;
    if (*dtype == node.dtype(0)) return Mapped{Op::kIdentity, {}, node.first(1)};
    return Mapped{Op::kCast, {{"to", std::string(dtype_name(*dtype))}}, node.first(1)};
  }
  if (t == "Shape") {
    Mapped m{Op::kShape, {}, node.first(1)};
    if (auto v = r.i("start")) m.attributes.set("start", *v);
    if (auto v = r.i("end")) m.attributes.set("end", *v);
    return m;
  }
  if (t == "Concat") {
    std::optional<std::int64_t> axis = r.i("axis");
    if (!axis) return std::nullopt;
    return Mapped{Op::kConcat, {{"axis", *axis}}, node.in};
  }
  if (t == "Split") return map_split(node);
  if (t == "Slice") return map_slice(node);
  if (t == "Gather") return Mapped{Op::kGather, {{"axis", r.i("axis").value_or(0)}}, node.in};
  if (t == "Pad") return map_pad(node);
  if (t == "Expand") return map_expand(node);
  if (t == "Resize") return map_resize(node);
  if (t == "Tile" || t == "Range" || t == "ConstantOfShape" || t == "Min" || t == "Max" ||
      t == "CumSum" || t == "GatherElements" || t == "GatherND" || t == "ScatterND" ||
      t == "ScatterElements" || t == "EyeLike" || t == "Trilu" || t == "TopK" ||
      t == "GridSample")
    return map_value_op(node);
  if (t == "Dropout") return map_dropout(node);
  return std::nullopt;
}

std::optional<Mapped> Importer::map_gemm(KnownNode& node) {
  AttrReader& r = node.attrs;
  if (!node.present(0) || !node.present(1)) return std::nullopt;
  Mapped m{Op::kGemm, {}, node.present(2) ? node.first(3) : node.first(2)};
  if (auto v = r.f("alpha")) m.attributes.set("alpha", *v);
  if (auto v = r.f("beta")) m.attributes.set("beta", *v);
  if (auto v = r.i("transA")) m.attributes.set("transA", *v);
  if (auto v = r.i("transB")) m.attributes.set("transB", *v);
  return m;
}

std::optional<Mapped> Importer::map_conv(KnownNode& node, Op op) {
  AttrReader& r = node.attrs;
  // The weight, and the inputs the IR takes: Conv's optional bias;
  // ConvInteger's zero points (x's, both or neither); QLinearConv's eight
  // and its optional bias.
  const int weight = op == Op::kQLinearConv ? 3 : 1;
  std::optional<std::vector<int>> inputs;
  if (op == Op::kConv) {
    inputs = node.first(node.present(2) ? 3 : 2);
  } else if (op == Op::kConvInteger && (node.present(2) || !node.present(3))) {
    inputs = node.first(node.present(3) ? 4 : node.present(2) ? 3 : 2);
  } else if (op == Op::kQLinearConv && node.all_present(8)) {
    inputs = node.first(node.present(8) ? 9 : 8);
  }
  if (!inputs || std::ranges::any_of(*inputs, [](int i) { return i < 0; }) ||
      node.dims(weight).size() != 4 || node.dims(0).size() != 4)
    return std::nullopt;
  Ints kernel(node.dims(weight).begin() + 2, node.dims(weight).end());
  if (auto k = r.ints("kernel_shape"); k && *k != kernel) return std::nullopt;
  Ints strides = r.ints("strides").value_or(Ints{1, 1});
  Ints dilations = r.ints("dilations").value_or(Ints{1, 1});
  std::optional<Ints> pads = window_pads(r, node.dims(0), kernel, strides, dilations);
  if (!pads) return std::nullopt;
  Mapped m{op, {}, *inputs};
  m.attributes.set("strides", strides);
  m.attributes.set("dilations", dilations);
  m.attributes.set("pads", *pads);
  m.attributes.set("group", r.i("group").value_or(1));
  return m;
}

std::optional<Mapped> Importer::map_pool(KnownNode& node) {
  AttrReader& r = node.attrs;
  const bool max = node.proto.op_type() == "MaxPool";
  const Dims& in = node.dims(0);
  if (in.size() != 4) return std::nullopt;
  std::optional<Ints> kernel = r.ints("kernel_shape");
  if (!kernel || kernel->size() != 2) return std::nullopt;
  Ints strides = r.ints("strides").value_or(Ints{1, 1});
  Ints dilations = r.ints("dilations").value_or(Ints{1, 1});
  if (dilations != Ints{1, 1}) return std::nullopt;
  std::optional<Ints> pads = window_pads(r, in, *kernel, strides, dilations);
  if (!pads) return std::nullopt;
  // ceil_mode rounds the output size up: the same windows as the IR's
  // (which rounds down) exactly when the division is exact.
  if (r.i("ceil_mode").value_or(0) != 0) {
    for (std::size_t k = 0; k < 2; ++k) {
      const std::int64_t span = (*kernel)[k], padded = in[2 + k] + (*pads)[k] + (*pads)[k + 2];
      if (padded < span || (padded - span) % strides[k] != 0) return std::nullopt;
    }
  }
  Mapped m{max ? Op::kMaxPool : Op::kAveragePool, {}, node.in};
  m.attributes.set("kernel_shape", *kernel);
  m.attributes.set("strides", strides);
  m.attributes.set("pads", *pads);
  if (max) {
    r.i("storage_order");  // only affects the indices output
  } else {
    m.attributes.set("count_include_pad", r.i("count_include_pad").value_or(0));
  }
  return m;
}

std::optional<Mapped> Importer::map_clip(KnownNode& node) {
  AttrReader& r = node.attrs;
  Mapped m{Op::kClip, {}, node.first(1)};
  if (opset_ < 11) {
    if (auto v = r.f("min")) m.attributes.set("min", *v);
    if (auto v = r.f("max")) m.attributes.set("max", *v);
    return m;
  }
  for (int i = 1; i < 3; ++i) {
    if (!node.present(i)) continue;
    std::optional<double> v = constant_scalar(node.proto.input(i));
    if (!v) return std::nullopt;
    m.attributes.set(i == 1 ? "min" : "max", *v);
  }
  return m;
}

std::optional<Mapped> Importer::map_softmax(KnownNode& node) {
  std::int64_t axis = node.attrs.i("axis").value_or(opset_ < 13 ? 1 : -1);
  std::optional<std::int64_t> a = normalize_axis(axis, node.dims(0).size());
  // Before opset 13 Softmax flattened to 2-D at `axis`: the same only
  // when `axis` is the last one.
  if (!a || (opset_ < 13 && *a + 1 != static_cast<std::int64_t>(node.dims(0).size())))
    return std::nullopt;
  return Mapped{Op::kSoftmax, {{"axis", axis}}, node.in};
}

std::optional<Mapped> Importer::map_reshape(KnownNode& node) {
  AttrReader& r = node.attrs;
  std::optional<Ints> shape = opset_ < 5 ? r.ints("shape") : constant_ints(node.input(1));
  if (opset_ >= 5 && !shape) {
    // A computed shape: the inferred output shape, when it is static.
    absl::StatusOr<TensorType> out = value_type(node.proto.output(0));
    if (!out.ok() || out->dtype == DType::kOther || !out->is_static()) return std::nullopt;
    shape = out->dims;
  }
  if (!shape) return std::nullopt;
  if (r.i("allowzero").value_or(0) != 0 && std::ranges::count(*shape, 0) > 0) return std::nullopt;
  return Mapped{Op::kReshape, {{"shape", *shape}}, node.first(1)};
}

// Squeeze, Unsqueeze and Flatten are reshapes to their inferred output
// shape: one canonical form for every spelling of a change of rank, so that
// a rule that moves an operator through a Reshape holds for all of them
// (TorchScript writes LeViT's Linear + BatchNorm1d with a Flatten where the
// dynamo exporter writes a Reshape to [-1, C]).
std::optional<Mapped> Importer::map_as_reshape(KnownNode& node) {
  if (node.proto.op_type() == "Flatten")
    node.attrs.i("axis");
  else if (opset_ < 13)
    node.attrs.ints("axes");  // an attribute before opset 13, an input since
  absl::StatusOr<TensorType> out = value_type(node.proto.output(0));
  if (!out.ok() || out->dtype == DType::kOther || !out->is_static()) return std::nullopt;
  return Mapped{Op::kReshape, {{"shape", out->dims}}, node.first(1)};
}

void make_identity(Mapped& m, Attributes& a) {
  m.op = Op::kIdentity;
  a = Attributes{};
  m.inputs.resize(1);
}

void Importer::compose_layout(Mapped& m, Attributes& a) const {
  const auto input = [&](std::size_t k) -> const Node& { return graph_.nodes[m.inputs[k]]; };
  // A Transpose's permutation, with the default (reversed axes) spelled out.
  const auto perm_of = [&](const Attributes& attributes, std::size_t rank) {
    Ints perm = *attributes.get_ints("perm");
    if (perm.empty()) {
      for (std::size_t k = rank; k-- > 0;) perm.push_back(static_cast<std::int64_t>(k));
    }
    return perm;
  };
  switch (m.op) {
    case Op::kReshape:
      while (input(0).op == Op::kReshape) m.inputs[0] = input(0).inputs[0];
      return;
    case Op::kTranspose: {
      Ints perm = perm_of(a, types_[m.inputs[0]].parts[0].rank());
      while (input(0).op == Op::kTranspose) {
        const Ints inner = perm_of(input(0).attributes, perm.size());
        if (inner.size() != perm.size()) return;
        for (std::int64_t& p : perm) {
          if (p < 0 || p >= static_cast<std::int64_t>(inner.size())) return;
          p = inner[static_cast<std::size_t>(p)];
        }
        m.inputs[0] = input(0).inputs[0];
        a.set("perm", perm);
      }
      std::size_t k = 0;
      while (k < perm.size() && perm[k] == static_cast<std::int64_t>(k)) ++k;
      if (k == perm.size()) make_identity(m, a);  // back to the input's order
      return;
    }
    case Op::kConcat: {
      const std::size_t rank = types_[m.inputs[0]].parts[0].rank();
      const auto axis = normalize_axis(*a.get_int("axis"), rank);
      std::vector<int> flat;
      for (std::size_t k = 0; k < m.inputs.size(); ++k) {
        const Node& n = input(k);
        if (n.op == Op::kConcat && axis && normalize_axis(*n.attributes.get_int("axis"), rank) == axis)
          flat.insert(flat.end(), n.inputs.begin(), n.inputs.end());
        else
          flat.push_back(m.inputs[k]);
      }
      m.inputs = std::move(flat);
      if (m.inputs.size() == 1) make_identity(m, a);
      return;
    }
    default:
      return;
  }
}

std::optional<Mapped> Importer::map_reduce(KnownNode& node, Op op) {
  AttrReader& r = node.attrs;
  // ReduceSum's axes are an input from opset 13 on (the others' from 18,
  // which the import reads through opset 17's spelling: lower_to_opset).
  const bool axes_input = op == Op::kReduceSum && opset_ >= 13;
  std::optional<Ints> axes = axes_input ? constant_ints(node.input(1)) : r.ints("axes");
  if (axes_input && node.present(1) && !axes) return std::nullopt;  // computed axes
  // No axes (or an empty list) with noop_with_empty_axes: the input as it
  // is; with axes given, the attribute says nothing.
  const bool noop_with_empty_axes = r.i("noop_with_empty_axes").value_or(0) != 0;
  const std::int64_t keepdims = r.i("keepdims").value_or(1);
  if ((!axes || axes->empty()) && noop_with_empty_axes)
    return Mapped{Op::kIdentity, {}, node.first(1)};
  Mapped m{op, {}, node.first(1)};
  m.attributes.set("axes", axes.value_or(Ints{}));
  m.attributes.set("keepdims", keepdims);
  return m;
}

std::optional<Mapped> Importer::map_quantization(KnownNode& node) {
  AttrReader& r = node.attrs;
  const bool quantize = node.proto.op_type() == "QuantizeLinear";
  // `saturate` concerns float8 only, which the import refuses by type.
  r.i("saturate");
  const std::int64_t block_size = r.i("block_size").value_or(0);
  // Without a zero point, QuantizeLinear writes uint8 unless output_dtype
  // (opset 21) names another type.
  if (const std::optional<std::int64_t> to = r.i("output_dtype"); to && *to != 0) {
    const std::optional<DType> named = dtype_from_onnx(static_cast<int>(*to));
    const std::optional<DType> given =
        node.present(2) ? std::optional<DType>(node.dtype(2)) : DType::kUInt8;
    if (!quantize || named != given) return std::nullopt;
  }
  const std::int64_t axis = r.i("axis").value_or(1);
  return Mapped{quantize ? Op::kQuantizeLinear : Op::kDequantizeLinear,
                {{"axis", axis}, {"block_size", block_size}}, node.first(node.present(2) ? 3 : 2)};
}

std::optional<Mapped> Importer::map_split(KnownNode& node) {
  AttrReader& r = node.attrs;
  std::int64_t axis = r.i("axis").value_or(0);
  std::optional<std::int64_t> a = normalize_axis(axis, node.dims(0).size());
  if (!a) return std::nullopt;
  std::optional<Ints> split = opset_ < 13 ? r.ints("split") : constant_ints(node.input(1));
  if (opset_ >= 13 && node.present(1) && !split) return std::nullopt;
  if (!split) {
    std::int64_t parts = node.proto.output_size(), size = node.dims(0)[*a];
    if (size % parts != 0) return std::nullopt;
    split = Ints(static_cast<std::size_t>(parts), size / parts);
  }
  return Mapped{Op::kSplit, {{"axis", axis}, {"split", *split}}, node.first(1)};
}

std::optional<Mapped> Importer::map_slice(KnownNode& node) {
  AttrReader& r = node.attrs;
  std::optional<Ints> starts, ends, axes, steps;
  if (opset_ < 10) {
    starts = r.ints("starts"), ends = r.ints("ends"), axes = r.ints("axes");
  } else {
    starts = constant_ints(node.input(1)), ends = constant_ints(node.input(2));
    if (node.present(3) && !(axes = constant_ints(node.proto.input(3)))) return std::nullopt;
    if (node.present(4) && !(steps = constant_ints(node.proto.input(4)))) return std::nullopt;
  }
  if (!starts || !ends) return std::nullopt;
  Mapped m{Op::kSlice, {}, node.first(1)};
  m.attributes.set("starts", *starts);
  m.attributes.set("ends", *ends);
  m.attributes.set("axes", axes.value_or(Ints{}));
  m.attributes.set("steps", steps.value_or(Ints{}));
  return m;
}

std::optional<Mapped> Importer::map_pad(KnownNode& node) {
  AttrReader& r = node.attrs;
  // Float tensors only: the IR's pad value is a float.
  if (r.s("mode").value_or("constant") != "constant" ||
      types_[node.in[0]].parts[0].dtype != DType::kFloat32)
    return std::nullopt;
  std::optional<Ints> pads;
  std::optional<double> value = 0.0;
  if (opset_ < 11) {
    pads = r.ints("pads");
    value = r.f("value").value_or(0.0);
  } else {
    pads = constant_ints(node.input(1));
    if (node.present(2)) value = constant_scalar(node.proto.input(2));
    if (node.present(3)) return std::nullopt;  // axes (opset 18)
  }
  if (!pads || !value) return std::nullopt;
  return Mapped{Op::kPad, {{"pads", *pads}, {"value", *value}}, node.first(1)};
}

std::optional<Mapped> Importer::map_dropout(KnownNode& node) {
  // Inference: the identity, unless training_mode is (or may be) true.
  if (opset_ < 7) return std::nullopt;
  if (node.present(2)) {
    auto it = constants_.find(node.proto.input(2));
    if (it == constants_.end() || it->second.dtype() != DType::kBool || it->second.size() != 1 ||
        it->second.bytes()[0] != std::byte{0})
      return std::nullopt;
  }
  node.attrs.f("ratio");
  node.attrs.i("seed");
  return Mapped{Op::kDropout, {}, node.first(1), {0}};  // the mask, if any, unread
}

void Importer::set_probe_shapes(const onnx::NodeProto& n, std::span<const TensorType> outputs,
                                Attributes& a) const {
  if (probe_dims_.empty()) return;
  Ints shapes;
  for (int o = 0; o < n.output_size(); ++o) {
    auto it = probe_dims_.find(n.output(o));
    if (n.output(o).empty() || outputs[o].dtype == DType::kOther) {
      shapes.push_back(static_cast<std::int64_t>(outputs[o].rank()));
      shapes.insert(shapes.end(), outputs[o].dims.begin(), outputs[o].dims.end());
      continue;
    }
    if (it == probe_dims_.end() || it->second.size() != outputs[o].rank()) return;
    shapes.push_back(static_cast<std::int64_t>(it->second.size()));
    shapes.insert(shapes.end(), it->second.begin(), it->second.end());
  }
  a.set(std::string(kProbeShapes), shapes);
}

}  // namespace saturn::tensor::onnx_io

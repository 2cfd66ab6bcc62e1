#include "saturn/tensor/ops.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cfloat>
#include <limits>
#include <vector>

#include "fmt/format.h"

namespace saturn::tensor {

namespace {

struct OpRow {
  std::string_view name;
  int arity;
};

constexpr std::array<OpRow, kNumOps> kOps = {{
#define SATURN_OP_ROW(e, name, arity) {name, arity},
    SATURN_TENSOR_OPS(SATURN_OP_ROW)
#undef SATURN_OP_ROW
}};

enum class Kind { kInt, kFloat, kString, kInts };

struct AttrSpec {
  std::string_view key;
  Kind kind;
  // Absent: the attribute is required.
  std::optional<AttrValue> fallback;
};

using Ints = std::vector<std::int64_t>;

std::vector<AttrSpec> schema(Op op) {
  const AttrValue one_one = Ints{1, 1};
  const AttrValue no_pads = Ints{0, 0, 0, 0};
  if (is_reduction(op) && op != Op::kReduceMean) return schema(Op::kReduceMean);
  switch (op) {
    case Op::kInput:
      // `onnx_type`: a serialized ONNX TypeProto (base64) for an input that
      // is not a tensor (dtype "other"); empty otherwise.
      return {{"name", Kind::kString, {}},
              {"shape", Kind::kInts, {}},
              {"dtype", Kind::kString, std::string("float32")},
              {"onnx_type", Kind::kString, std::string()}};
    case Op::kWeight:
      return {{"name", Kind::kString, {}},
              {"shape", Kind::kInts, {}},
              {"dtype", Kind::kString, std::string("float32")}};
    case Op::kConstant:
      return {{"value", Kind::kFloat, {}},
              {"shape", Kind::kInts, Ints{}},
              {"dtype", Kind::kString, std::string("float32")}};
    case Op::kGemm:
      return {{"alpha", Kind::kFloat, 1.0},
              {"beta", Kind::kFloat, 1.0},
              {"transA", Kind::kInt, std::int64_t{0}},
              {"transB", Kind::kInt, std::int64_t{0}}};
    case Op::kQGemm:
      return {{"alpha", Kind::kFloat, 1.0},
              {"transA", Kind::kInt, std::int64_t{0}},
              {"transB", Kind::kInt, std::int64_t{0}}};
    case Op::kQLinearConcat:
      return {{"axis", Kind::kInt, {}}};
    case Op::kQLinearLeakyRelu:  // onnxruntime's default
      return {{"alpha", Kind::kFloat, 0.01}};
    case Op::kQLinearGlobalAveragePool:
      return {{"channels_last", Kind::kInt, std::int64_t{0}}};
    case Op::kQLinearSoftmax:
      return {{"axis", Kind::kInt, std::int64_t{-1}}, {"opset", Kind::kInt, std::int64_t{13}}};
    case Op::kMatMulNBits:
      return {{"K", Kind::kInt, {}},
              {"N", Kind::kInt, {}},
              {"bits", Kind::kInt, std::int64_t{4}},
              {"block_size", Kind::kInt, {}},
              {"accuracy_level", Kind::kInt, std::int64_t{0}}};
    case Op::kConvInteger:  // Conv's, its activation "none"
    case Op::kQLinearConv:
      return schema(Op::kConv);
    case Op::kConv:
      return {{"strides", Kind::kInts, one_one},
              {"pads", Kind::kInts, no_pads},
              {"dilations", Kind::kInts, one_one},
              {"group", Kind::kInt, std::int64_t{1}},
              {"activation", Kind::kString, std::string("none")}};
    case Op::kClip:
      return {{"min", Kind::kFloat, static_cast<double>(-FLT_MAX)},
              {"max", Kind::kFloat, static_cast<double>(FLT_MAX)}};
    case Op::kHardSigmoid:  // ONNX's defaults
      return {{"alpha", Kind::kFloat, 0.2}, {"beta", Kind::kFloat, 0.5}};
    case Op::kSoftmax:
      return {{"axis", Kind::kInt, std::int64_t{-1}}};
    case Op::kShape:  // ONNX's [start, end) of the dimensions, clamped to the rank
      return {{"start", Kind::kInt, std::int64_t{0}},
              {"end", Kind::kInt, std::numeric_limits<std::int64_t>::max()}};
    case Op::kCast:  // the element type's name (types.h)
      return {{"to", Kind::kString, {}}};
    case Op::kLayerNorm:
      return {{"axis", Kind::kInt, std::int64_t{-1}}, {"epsilon", Kind::kFloat, 1e-5}};
    case Op::kBatchNorm:
    case Op::kInstanceNorm:
      return {{"epsilon", Kind::kFloat, 1e-5}};
    case Op::kSimplifiedLayerNorm:
      return {{"axis", Kind::kInt, std::int64_t{-1}}, {"epsilon", Kind::kFloat, 1e-5}};
    case Op::kSkipSimplifiedLayerNorm:
    case Op::kSkipLayerNorm:
      return {{"epsilon", Kind::kFloat, 1e-5}};
    case Op::kRotaryEmbedding:
      return {{"interleaved", Kind::kInt, std::int64_t{0}}};
    case Op::kGroupQueryAttention:
      // scale 0: 1 / sqrt(head size).
      return {{"num_heads", Kind::kInt, {}},
              {"kv_num_heads", Kind::kInt, {}},
              {"scale", Kind::kFloat, 0.0}};
    case Op::kReduceMean:  // every reduction's (is_reduction)
      return {{"axes", Kind::kInts, Ints{}}, {"keepdims", Kind::kInt, std::int64_t{1}}};
    case Op::kTranspose:
      return {{"perm", Kind::kInts, Ints{}}};
    case Op::kReshape:
      return {{"shape", Kind::kInts, {}}};
    case Op::kFlatten:
      return {{"axis", Kind::kInt, std::int64_t{1}}};
    case Op::kConcat:
      return {{"axis", Kind::kInt, {}}};
    case Op::kSplit:
      return {{"axis", Kind::kInt, std::int64_t{0}}, {"split", Kind::kInts, {}}};
    case Op::kSlice:
      return {{"starts", Kind::kInts, {}},
              {"ends", Kind::kInts, {}},
              {"axes", Kind::kInts, Ints{}},
              {"steps", Kind::kInts, Ints{}}};
    case Op::kGather:
      return {{"axis", Kind::kInt, std::int64_t{0}}};
    case Op::kPad:
      return {{"pads", Kind::kInts, {}}, {"value", Kind::kFloat, 0.0}};
    case Op::kQuantizeLinear:  // the axis of a per-axis or blocked scale (ONNX's
    case Op::kDequantizeLinear:  // default), and the block's length along it (0: per axis)
      return {{"axis", Kind::kInt, std::int64_t{1}}, {"block_size", Kind::kInt, std::int64_t{0}}};
    case Op::kIsInf:  // ONNX's defaults: both infinities count
      return {{"detect_negative", Kind::kInt, std::int64_t{1}},
              {"detect_positive", Kind::kInt, std::int64_t{1}}};
    case Op::kExpand:  // the input broadcast to `shape` (ONNX's Expand rule)
    case Op::kRange:   // `shape`: the output's dimensions at the given sizes
      return {{"shape", Kind::kInts, {}}, {"probe_shapes", Kind::kInts, Ints{}}};
    case Op::kTile:
      return {{"repeats", Kind::kInts, {}}, {"probe_shapes", Kind::kInts, Ints{}}};
    case Op::kConstantOfShape:  // `value` of element type `dtype` in `shape`
      return {{"shape", Kind::kInts, {}},
              {"value", Kind::kFloat, 0.0},
              {"dtype", Kind::kString, std::string("float32")},
              {"probe_shapes", Kind::kInts, Ints{}}};
    case Op::kCumSum:  // ONNX's: the axis (its second input) as an attribute
      return {{"axis", Kind::kInt, {}},
              {"exclusive", Kind::kInt, std::int64_t{0}},
              {"reverse", Kind::kInt, std::int64_t{0}}};
    case Op::kGatherElements:
      return {{"axis", Kind::kInt, std::int64_t{0}}};
    case Op::kGatherND:
      return {{"batch_dims", Kind::kInt, std::int64_t{0}}};
    case Op::kScatterND:  // ONNX's: none, add, mul, max or min
      return {{"reduction", Kind::kString, std::string("none")}};
    case Op::kScatterElements:
      return {{"axis", Kind::kInt, std::int64_t{0}},
              {"reduction", Kind::kString, std::string("none")}};
    case Op::kGridSample:  // opset 16's spelling (bilinear, bicubic), 4-D
      return {{"mode", Kind::kString, std::string("bilinear")},
              {"padding_mode", Kind::kString, std::string("zeros")},
              {"align_corners", Kind::kInt, std::int64_t{0}}};
    case Op::kTrilu:  // ONNX's: the triangle on and above (upper) or below diagonal k kept
      return {{"upper", Kind::kInt, std::int64_t{1}}, {"k", Kind::kInt, std::int64_t{0}}};
    case Op::kTopK:  // ONNX's, with k (its second input) as an attribute
      return {{"k", Kind::kInt, {}},
              {"axis", Kind::kInt, std::int64_t{-1}},
              {"largest", Kind::kInt, std::int64_t{1}},
              {"sorted", Kind::kInt, std::int64_t{1}}};
    case Op::kEyeLike:  // ones on diagonal k of a matrix like the input, of `dtype`
      return {{"k", Kind::kInt, std::int64_t{0}}, {"dtype", Kind::kString, std::string()}};
    case Op::kResize:  // ONNX's modes; `shape` the output's dimensions
      return {{"mode", Kind::kString, std::string("nearest")},
              {"coordinate_transformation_mode", Kind::kString, std::string("half_pixel")},
              {"nearest_mode", Kind::kString, std::string("round_prefer_floor")},
              {"cubic_coeff_a", Kind::kFloat, -0.75},
              {"exclude_outside", Kind::kInt, std::int64_t{0}},
              {"shape", Kind::kInts, {}},
              {"probe_shapes", Kind::kInts, Ints{}}};
    case Op::kMaxPool:
      return {{"kernel_shape", Kind::kInts, {}},
              {"strides", Kind::kInts, one_one},
              {"pads", Kind::kInts, no_pads}};
    case Op::kAveragePool:
      return {{"kernel_shape", Kind::kInts, {}},
              {"strides", Kind::kInts, one_one},
              {"pads", Kind::kInts, no_pads},
              {"count_include_pad", Kind::kInt, std::int64_t{0}}};
    case Op::kEnlarge:
      return {{"kernel_shape", Kind::kInts, {}}};
    case Op::kMergeGroups:
      return {{"group", Kind::kInt, {}}, {"count", Kind::kInt, {}}};
    case Op::kTupleGet:
      return {{"index", Kind::kInt, {}}};
    case Op::kOpaque:
      return {{"op_type", Kind::kString, {}},
              {"domain", Kind::kString, std::string()},
              {"out_shapes", Kind::kInts, {}},
              {"out_dtypes", Kind::kInts, {}}};
    default:
      return {};
  }
}

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::kInt:
      return "an integer";
    case Kind::kFloat:
      return "a number";
    case Kind::kString:
      return "a string";
    case Kind::kInts:
      return "a list of integers";
  }
  return "?";
}

// Converts `value` to `kind` where that loses nothing; false otherwise.
bool coerce(AttrValue& value, Kind kind) {
  switch (kind) {
    case Kind::kInt:
      return std::holds_alternative<std::int64_t>(value);
    case Kind::kFloat:
      if (const auto* i = std::get_if<std::int64_t>(&value)) value = static_cast<double>(*i);
      return std::holds_alternative<double>(value);
    case Kind::kString:
      return std::holds_alternative<std::string>(value);
    case Kind::kInts:
      return std::holds_alternative<Ints>(value);
  }
  return false;
}

}  // namespace

std::string_view op_name(Op op) { return kOps[static_cast<std::size_t>(op)].name; }

std::optional<Op> find_op(std::string_view name) {
  for (std::size_t i = 0; i < kNumOps; ++i) {
    if (kOps[i].name == name) return static_cast<Op>(i);
  }
  return std::nullopt;
}

std::span<const Op> all_ops() {
  static const std::array<Op, kNumOps> ops = [] {
    std::array<Op, kNumOps> a{};
    for (std::size_t i = 0; i < kNumOps; ++i) a[i] = static_cast<Op>(i);
    return a;
  }();
  return ops;
}

bool is_unary_elementwise(Op op) {
  switch (op) {
    case Op::kSqrt:
    case Op::kErf:
    case Op::kRelu:
    case Op::kSigmoid:
    case Op::kTanh:
    case Op::kGelu:
    case Op::kClip:
    case Op::kNeg:
    case Op::kAbs:
    case Op::kReciprocal:
    case Op::kExp:
    case Op::kLog:
    case Op::kSin:
    case Op::kCos:
    case Op::kHardSigmoid:
    case Op::kHardSwish:
    case Op::kCeil:
    case Op::kFloor:
    case Op::kRound:
    case Op::kSign:
      return true;
    default:
      return false;
  }
}

bool is_comparison(Op op) {
  return op == Op::kEqual || op == Op::kLess || op == Op::kLessOrEqual || op == Op::kGreater ||
         op == Op::kGreaterOrEqual;
}

bool is_reduction(Op op) {
  switch (op) {
    case Op::kReduceMean:
    case Op::kReduceSum:
    case Op::kReduceMax:
    case Op::kReduceMin:
    case Op::kReduceProd:
    case Op::kReduceL1:
    case Op::kReduceL2:
    case Op::kReduceSumSquare:
    case Op::kReduceLogSum:
    case Op::kReduceLogSumExp:
      return true;
    default:
      return false;
  }
}

bool is_quantization(Op op) {
  return op == Op::kQuantizeLinear || op == Op::kDequantizeLinear;
}

bool is_integer_operator(Op op) {
  return op == Op::kDynamicQuantizeLinear || op == Op::kMatMulInteger || op == Op::kConvInteger ||
         op == Op::kQLinearMatMul || op == Op::kQLinearConv || op == Op::kQLinearAdd ||
         op == Op::kQLinearMul || op == Op::kQGemm || op == Op::kQLinearConcat ||
         is_quantized_unary(op) || op == Op::kMatMulNBits;
}

bool is_quantized_unary(Op op) {
  return op == Op::kQLinearSigmoid || op == Op::kQLinearLeakyRelu ||
         op == Op::kQLinearGlobalAveragePool || op == Op::kQLinearSoftmax;
}

bool computed_ahead(Op op) {
  return op != Op::kInput && op != Op::kOpaque && !is_quantization(op);
}

bool is_value_op(Op op) {
  return is_comparison(op) || op == Op::kShape || op == Op::kCast || op == Op::kWhere ||
         op == Op::kAnd || op == Op::kOr || op == Op::kNot || op == Op::kIsNaN ||
         op == Op::kIsInf || moves_or_makes_values(op);
}

bool moves_or_makes_values(Op op) {
  return op == Op::kExpand || op == Op::kTile || op == Op::kRange || op == Op::kConstantOfShape ||
         op == Op::kMin || op == Op::kMax || op == Op::kCumSum || op == Op::kGatherElements ||
         op == Op::kGatherND || op == Op::kScatterND || op == Op::kScatterElements ||
         op == Op::kResize || op == Op::kGridSample || op == Op::kEyeLike || op == Op::kTrilu;
}

bool sized_by_values(Op op, std::size_t num_inputs) {
  return op == Op::kRange || op == Op::kConstantOfShape || op == Op::kResize ||
         ((op == Op::kExpand || op == Op::kTile) && num_inputs == 2);
}

std::optional<std::string_view> runtime_domain(Op op) {
  switch (op) {
    case Op::kSkipSimplifiedLayerNorm:
    case Op::kSkipLayerNorm:
    case Op::kRotaryEmbedding:
    case Op::kGroupQueryAttention:
    case Op::kQLinearAdd:
    case Op::kQLinearMul:
    case Op::kQGemm:
    case Op::kQLinearConcat:
    case Op::kQLinearSigmoid:
    case Op::kQLinearLeakyRelu:
    case Op::kQLinearGlobalAveragePool:
    case Op::kQLinearSoftmax:
    case Op::kMatMulNBits:
      return "com.microsoft";
    default:
      return std::nullopt;
  }
}

std::optional<std::int64_t> standard_since(Op op) {
  if (op == Op::kGroupQueryAttention || op == Op::kRotaryEmbedding) return 23;
  return std::nullopt;
}

bool is_binary_elementwise(Op op) {
  return op == Op::kAdd || op == Op::kSub || op == Op::kMul || op == Op::kDiv || op == Op::kPow;
}

std::pair<int, int> input_count(Op op) {
  switch (op) {
    case Op::kGemm:
      return {2, 3};
    case Op::kConv:
    case Op::kQuantizeLinear:
    case Op::kDequantizeLinear:
      return {2, 3};
    case Op::kExpand:  // the shape or repeats as a value, where given
    case Op::kTile:
      return {1, 2};
    case Op::kMatMulInteger:  // the zero points optional
    case Op::kConvInteger:
      return {2, 4};
    case Op::kQLinearConv:  // the bias optional
    case Op::kQGemm:
      return {8, 9};
    case Op::kMatMulNBits:  // the zero points optional
      return {3, 4};
    case Op::kQLinearConcat:  // y's scale and zero point, then one triple per operand
      return {5, 1 << 20};
    case Op::kConcat:
      return {1, 1 << 20};
    case Op::kTuple:
      return {1, 1 << 20};
    case Op::kOpaque:
      return {0, 1 << 20};
    default: {
      int a = kOps[static_cast<std::size_t>(op)].arity;
      return {a, a};
    }
  }
}

absl::StatusOr<Attributes> normalize_attributes(Op op, Attributes attributes,
                                                std::span<const std::string> open_keys) {
  const std::vector<AttrSpec> specs = schema(op);
  auto is_open = [&](std::string_view key) {
    return std::find(open_keys.begin(), open_keys.end(), key) != open_keys.end();
  };
  for (const std::string& key : open_keys) {
    bool known = false;
    for (const AttrSpec& s : specs) known = known || s.key == key;
    if (!known && op != Op::kOpaque) {
      return absl::InvalidArgumentError(fmt::format("{} has no attribute '{}'", op_name(op), key));
    }
  }
  for (const Attribute& a : attributes.entries()) {
    bool known = false;
    for (const AttrSpec& s : specs) known = known || s.key == a.key;
    if (!known && op != Op::kOpaque) {
      return absl::InvalidArgumentError(
          fmt::format("{} has no attribute '{}'", op_name(op), a.key));
    }
  }
  for (const AttrSpec& s : specs) {
    if (is_open(s.key)) continue;
    const AttrValue* v = attributes.find(s.key);
    if (v == nullptr) {
      if (!s.fallback) {
        return absl::InvalidArgumentError(
            fmt::format("{} needs attribute '{}'", op_name(op), s.key));
      }
      attributes.set(s.key, *s.fallback);
      continue;
    }
    AttrValue value = *v;
    if (!coerce(value, s.kind)) {
      return absl::InvalidArgumentError(fmt::format("{} attribute '{}' must be {}, not {}",
                                                    op_name(op), s.key, kind_name(s.kind),
                                                    format_attr_value(*v)));
    }
    attributes.set(s.key, std::move(value));
  }
  return attributes;
}

TensorLanguage::TensorLanguage() : Language("tensor") {
  for (Op op : all_ops()) {
    [[maybe_unused]] Symbol s =
        add_operator(tensor::op_name(op), kOps[static_cast<std::size_t>(op)].arity);
    assert(s == symbol(op));
  }
}

}  // namespace saturn::tensor

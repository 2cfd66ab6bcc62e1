// The tensor operators saturn optimizes: their names, arities and attribute
// schemas, and the e-graph language that holds them.
//
//   TensorLanguage lang;
//   Symbol conv = lang.symbol(Op::kConv);
//   absl::StatusOr<Attributes> a = normalize_attributes(Op::kConv, {{"group", 2}});
//   // a->get_ints("strides") == {1, 1}: defaults are filled in, so two
//   // spellings of the same convolution are the same e-node.
//
// onnxruntime's fused kernels: SkipLayerNormalization,
// SkipSimplifiedLayerNormalization, RotaryEmbedding and GroupQueryAttention
// are not standard ONNX but operators of onnxruntime's
// com.microsoft domain (see runtime_domain); `saturn optimize --target onnx`
// never chooses them, except GroupQueryAttention and RotaryEmbedding in a
// model at opset 23 or later, which are written as the standard Attention
// and RotaryEmbedding (standard_since).
// SimplifiedLayerNormalization (RMSNorm) is written as the standard
// operators onnxruntime fuses into its kernel of that name (as
// RMSNormalization from opset 23 on).
//
// Conventions (close to ONNX, with static shapes): 2-D convolution and
// pooling on NCHW tensors; pads are [top, left, bottom, right]; a Split or an
// opaque operator with several outputs yields a tuple, read with TupleGet.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "saturn/egraph/language.h"

namespace saturn::tensor {

// X(enumerator, name, arity) — arity Language::kVariadic (-1) for n inputs.
#define SATURN_TENSOR_OPS(X)                    \
  X(kInput, "Input", 0)                         \
  X(kWeight, "Weight", 0)                       \
  X(kConstant, "Constant", 0)                   \
  X(kMatMul, "MatMul", 2)                       \
  X(kGemm, "Gemm", -1)                          \
  X(kConv, "Conv", -1)                          \
  X(kAdd, "Add", 2)                             \
  X(kSub, "Sub", 2)                             \
  X(kMul, "Mul", 2)                             \
  X(kDiv, "Div", 2)                             \
  X(kPow, "Pow", 2)                             \
  X(kSqrt, "Sqrt", 1)                           \
  X(kErf, "Erf", 1)                             \
  X(kRelu, "Relu", 1)                           \
  X(kSigmoid, "Sigmoid", 1)                     \
  X(kTanh, "Tanh", 1)                           \
  X(kGelu, "Gelu", 1)                           \
  X(kClip, "Clip", 1)                           \
  X(kNeg, "Neg", 1)             \
  X(kAbs, "Abs", 1)             \
  X(kReciprocal, "Reciprocal", 1) \
  X(kExp, "Exp", 1)             \
  X(kLog, "Log", 1)             \
  X(kSin, "Sin", 1)             \
  X(kCos, "Cos", 1)             \
  X(kHardSigmoid, "HardSigmoid", 1) \
  X(kHardSwish, "HardSwish", 1) \
  X(kCeil, "Ceil", 1)           \
  X(kFloor, "Floor", 1)         \
  X(kRound, "Round", 1)         \
  X(kSign, "Sign", 1)           \
  X(kSoftmax, "Softmax", 1)                     \
  X(kLayerNorm, "LayerNormalization", 3)        \
  X(kBatchNorm, "BatchNormalization", 5)        \
  X(kInstanceNorm, "InstanceNormalization", 3)  \
  X(kReduceMean, "ReduceMean", 1)               \
  X(kReduceSum, "ReduceSum", 1)                 \
  X(kReduceMax, "ReduceMax", 1)                 \
  X(kReduceMin, "ReduceMin", 1)                 \
  X(kReduceProd, "ReduceProd", 1)               \
  X(kReduceL1, "ReduceL1", 1)                   \
  X(kReduceL2, "ReduceL2", 1)                   \
  X(kReduceSumSquare, "ReduceSumSquare", 1)     \
  X(kReduceLogSum, "ReduceLogSum", 1)           \
  X(kReduceLogSumExp, "ReduceLogSumExp", 1)     \
  X(kTranspose, "Transpose", 1)                 \
  X(kReshape, "Reshape", 1)                     \
  X(kFlatten, "Flatten", 1)                     \
  X(kConcat, "Concat", -1)                      \
  X(kSplit, "Split", 1)                         \
  X(kSlice, "Slice", 1)                         \
  X(kGather, "Gather", 2)                       \
  X(kPad, "Pad", 1)                             \
  X(kMaxPool, "MaxPool", 1)                     \
  X(kAveragePool, "AveragePool", 1)             \
  X(kGlobalAveragePool, "GlobalAveragePool", 1) \
  X(kIdentity, "Identity", 1)                   \
  X(kDropout, "Dropout", 1)                     \
  X(kEnlarge, "Enlarge", 1)                     \
  X(kMergeGroups, "MergeGroups", 1)             \
  X(kTuple, "Tuple", -1)                        \
  X(kTupleGet, "TupleGet", 1)                   \
  X(kSimplifiedLayerNorm, "SimplifiedLayerNormalization", 2) \
  X(kSkipSimplifiedLayerNorm, "SkipSimplifiedLayerNormalization", 3) \
  X(kSkipLayerNorm, "SkipLayerNormalization", 4) \
  X(kRotaryEmbedding, "RotaryEmbedding", 3)     \
  X(kGroupQueryAttention, "GroupQueryAttention", 3) \
  X(kShape, "Shape", 1)                         \
  X(kCast, "Cast", 1)                           \
  X(kWhere, "Where", 3)                         \
  X(kEqual, "Equal", 2)                         \
  X(kLess, "Less", 2)                           \
  X(kLessOrEqual, "LessOrEqual", 2)             \
  X(kGreater, "Greater", 2)                     \
  X(kGreaterOrEqual, "GreaterOrEqual", 2)       \
  X(kAnd, "And", 2)                             \
  X(kOr, "Or", 2)                               \
  X(kNot, "Not", 1)                             \
  X(kIsNaN, "IsNaN", 1)                         \
  X(kIsInf, "IsInf", 1)                         \
  X(kExpand, "Expand", -1)                      \
  X(kTile, "Tile", -1)                          \
  X(kRange, "Range", 3)                         \
  X(kConstantOfShape, "ConstantOfShape", 1)     \
  X(kMin, "Min", 2)                             \
  X(kMax, "Max", 2)                             \
  X(kCumSum, "CumSum", 1)                       \
  X(kGatherElements, "GatherElements", 2)       \
  X(kGatherND, "GatherND", 2)                   \
  X(kScatterND, "ScatterND", 3)                 \
  X(kScatterElements, "ScatterElements", 3)     \
  X(kResize, "Resize", 2)                       \
  X(kEyeLike, "EyeLike", 1)                     \
  X(kTrilu, "Trilu", 1)                         \
  X(kGridSample, "GridSample", 2)               \
  X(kTopK, "TopK", 1)                           \
  X(kQuantizeLinear, "QuantizeLinear", -1)      \
  X(kDequantizeLinear, "DequantizeLinear", -1)  \
  X(kDynamicQuantizeLinear, "DynamicQuantizeLinear", 1) \
  X(kMatMulInteger, "MatMulInteger", -1)        \
  X(kConvInteger, "ConvInteger", -1)            \
  X(kQLinearMatMul, "QLinearMatMul", 8)         \
  X(kQLinearConv, "QLinearConv", -1)            \
  X(kQLinearAdd, "QLinearAdd", 8)               \
  X(kQLinearMul, "QLinearMul", 8)               \
  X(kQGemm, "QGemm", -1)                        \
  X(kQLinearConcat, "QLinearConcat", -1)        \
  X(kQLinearSigmoid, "QLinearSigmoid", 5)       \
  X(kQLinearLeakyRelu, "QLinearLeakyRelu", 5)   \
  X(kQLinearGlobalAveragePool, "QLinearGlobalAveragePool", 5) \
  X(kQLinearSoftmax, "QLinearSoftmax", 5)       \
  X(kMatMulNBits, "MatMulNBits", -1)            \
  X(kOpaque, "Opaque", -1)

enum class Op : std::uint32_t {
#define SATURN_OP_ENUM(e, name, arity) e,
  SATURN_TENSOR_OPS(SATURN_OP_ENUM)
#undef SATURN_OP_ENUM
};

inline constexpr std::size_t kNumOps = static_cast<std::size_t>(Op::kOpaque) + 1;

std::string_view op_name(Op op);
std::optional<Op> find_op(std::string_view name);
// The operators in declaration order.
std::span<const Op> all_ops();

// Whether an operator works elementwise on one input (Relu, Sigmoid, ...).
bool is_unary_elementwise(Op op);
// Whether an operator is a broadcasting binary (Add, Sub, Mul, Div, Pow).
bool is_binary_elementwise(Op op);

// Whether an operator computes on values of any element type rather than on
// floats: Shape, Cast, Where, Expand, Tile, Range, ConstantOfShape, Min,
// Max, CumSum, GatherElements, GatherND, ScatterND, ScatterElements, Resize,
// GridSample, EyeLike, Trilu, the comparisons (Equal, Less, ...), the logic operators (And, Or, Not) and
// the tests of floats (IsNaN, IsInf). The shape arithmetic, position ids and mask building that
// exporters write, kept typed so that its readers are; no rule rewrites
// them.
bool is_value_op(Op op);
// The value operators that move or make values: Expand, Tile, Range,
// ConstantOfShape, Min, Max, CumSum, GatherElements, GatherND, ScatterND,
// ScatterElements, Resize, GridSample, EyeLike and Trilu.
bool moves_or_makes_values(Op op);
// Whether a node's output size depends on its inputs' values rather than
// their types: Range, ConstantOfShape and Resize (by its scales or sizes),
// and Expand and Tile given their shape or repeats as a second input. Such a node carries its output's
// dimensions at the given sizes of the symbols as attributes ("shape" or
// "repeats": a fresh symbol standing at its size) and, where the importer
// found them, at the probe sizes (kProbeShapes, tensor/probe.h); its
// kernel computes the size from the values and the interpreter checks
// that the two agree.
bool sized_by_values(Op op, std::size_t num_inputs);
// The comparisons: two inputs of one element type, a bool result.
bool is_comparison(Op op);
// QuantizeLinear and DequantizeLinear (x, scale, [zero point]): per tensor
// (a scalar scale) or per axis (a 1-D scale along `axis`), between float32
// and int8, uint8, int16 or uint16 (DequantizeLinear reads int32 too).
bool is_quantization(Op op);
// ONNX's integer operators, computed as ONNX defines them:
//   DynamicQuantizeLinear (x): x quantized to uint8 with a scale and zero
//     point from its own range, a tuple (y, y_scale, y_zero_point);
//   MatMulInteger (a, b, [a_zero_point, [b_zero_point]]) and ConvInteger
//     (x, w, [x_zero_point, [w_zero_point]]): the product of the integers
//     less their zero points, int32;
//   QLinearMatMul (a, a_scale, a_zero_point, b, b_scale, b_zero_point,
//     y_scale, y_zero_point) and QLinearConv (x, x_scale, x_zero_point,
//     w, w_scale, w_zero_point, y_scale, y_zero_point, [int32 bias]): that
//     product (plus the bias) requantized to y's scale and zero point;
//   onnxruntime's QLinearAdd and QLinearMul (a, a_scale, a_zero_point, b,
//     b_scale, b_zero_point, c_scale, c_zero_point; com.microsoft): the sum
//     or product of the dequantized operands, broadcast, quantized to c's
//     scale and zero point (the three of one type, each scale and zero
//     point one value);
//   onnxruntime's QGemm (a, a_scale, a_zero_point, b, b_scale,
//     b_zero_point, y_scale, y_zero_point, [int32 c]; ONNX writes c before
//     y's scale): QLinearMatMul of 2-D operands with Gemm's transA, transB
//     and alpha, c (broadcast to the result) added to the sums;
//   onnxruntime's QLinearConcat (y_scale, y_zero_point, then x, x_scale,
//     x_zero_point for each operand): each operand requantized to y's
//     scale and zero point, concatenated along `axis`;
//   onnxruntime's QLinearSigmoid, QLinearLeakyRelu (alpha),
//     QLinearGlobalAveragePool (channels_last) and QLinearSoftmax (axis,
//     and the opset of the Softmax it quantizes: before 13 it normalizes
//     over every axis from `axis` on) (x, x_scale, x_zero_point, y_scale,
//     y_zero_point): the float operator on the dequantized x, quantized to
//     y's scale and zero point (x and y of one type);
//   onnxruntime's MatMulNBits (a, b, scales, [zero_points]; K, N, bits,
//     block_size, accuracy_level): float32 a [..., K] times the transpose
//     of b [N, K], whose rows are stored in blocks of block_size elements
//     along K, each element `bits` wide (4 or 8, packed from the low bits
//     of each byte), each block with a float32 scale and a zero point
//     (packed the same way; 2^(bits-1) without them), float32.
// int8 or uint8 operands; a zero point or scale per tensor, or per column
// of b (the products of matrices) or per output channel of w (the
// convolutions). The convolutions have Conv's attributes, 2-D. The ONNX
// importer reads DynamicQuantizeLinear as opaque (onnx/import_ops.cc says
// why); saturn's JSON models have it.
bool is_integer_operator(Op op);
// QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool and
// QLinearSoftmax: a float operator between a dequantization and a
// quantization.
bool is_quantized_unary(Op op);
// Whether a node of `op` whose inputs are all weights or constants is a
// weight itself: computed ahead of time (at import and export) and free to
// the extraction. Not an opaque operator (the runtime's to compute), nor
// QuantizeLinear and DequantizeLinear: a quantized weight stays integer and
// its DequantizeLinear stays, which onnxruntime fuses with the operator
// reading it into an integer kernel.
bool computed_ahead(Op op);
// ONNX's reductions over `axes` (all axes where empty), `keepdims` or not:
// ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp.
bool is_reduction(Op op);

// The ONNX domain of an operator that is one of onnxruntime's fused kernels
// rather than standard ONNX ("com.microsoft"); nullopt for the others.
std::optional<std::string_view> runtime_domain(Op op);
inline bool is_runtime_operator(Op op) { return runtime_domain(op).has_value(); }
// The default-domain opset from which the export writes runtime operator
// `op` as a standard one (GroupQueryAttention as opset 23's Attention,
// RotaryEmbedding as its RotaryEmbedding: raise_to_versions); nullopt for none.
std::optional<std::int64_t> standard_since(Op op);
// Whether a model at default-domain `opset` needs onnxruntime's domain for `op`.
inline bool needs_runtime_domain(Op op, std::int64_t opset) {
  const std::optional<std::int64_t> since = standard_since(op);
  return is_runtime_operator(op) && !(since && opset >= *since);
}

// Checks `attributes` against `op`'s schema (known keys, value kinds,
// required keys) and fills in defaults. Integers given for float attributes
// become floats. Opaque nodes accept any extra keys.
// Keys in `open_keys` may be absent (pattern variables bind them later).
absl::StatusOr<Attributes> normalize_attributes(Op op, Attributes attributes,
                                                std::span<const std::string> open_keys = {});

// Number of inputs `op` accepts: [min, max].
std::pair<int, int> input_count(Op op);

// The e-graph language of tensor operators. Symbol i is Op i.
class TensorLanguage final : public Language {
 public:
  TensorLanguage();
  static Symbol symbol(Op op) { return Symbol{static_cast<std::uint32_t>(op)}; }
  static Op op(Symbol s) { return static_cast<Op>(s.value); }
  absl::StatusOr<Attributes> normalize(Symbol op, Attributes attributes,
                                       std::span<const std::string> open_keys) const override {
    return normalize_attributes(TensorLanguage::op(op), std::move(attributes), open_keys);
  }
};

}  // namespace saturn::tensor

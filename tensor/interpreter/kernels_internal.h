// Internal to the reference kernels (kernels*.cc): the helpers they share
// and each family's kernels, which evaluate_op dispatches to.
//
//   kernels.cc              evaluate_op, and the shared helpers
//   kernels_elementwise.cc  unary and binary elementwise operators
//   kernels_matmul.cc       MatMul, Gemm and the blocked product under them
//   kernels_conv.cc         convolution and pooling
//   kernels_norm.cc         Softmax, LayerNorm, BatchNorm and the reductions
//   kernels_fused.cc        onnxruntime's fused normalizations and rotary
//                           embedding
//   kernels_shape.cc        data movement (Transpose to Pad) and the
//                           rewrites of convolution kernels
//   kernels_values.cc       Shape, Cast, Where, comparisons and logic on
//                           any plain element type
//   kernels_made.cc         the value operators that move or make values
//                           (Expand to GatherND, Min and Max)
//   kernels_quant.cc        QuantizeLinear and DequantizeLinear
//   kernels_integer.cc      ONNX's integer operators (MatMulInteger to
//                           QLinearConv, DynamicQuantizeLinear)
//
// Each kernel takes normalized attributes and inputs that type-check.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/tensor.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor::kernels {

using Ints = std::vector<std::int64_t>;

// Runs fn(begin, end) over [0, n) in parallel chunks of at least `grain`.
void parallel(std::int64_t n, std::int64_t grain,
              const std::function<void(std::int64_t, std::int64_t)>& fn);

// strides_of and broadcast_strides: tensor/infer.h.

// Calls fn(out_index, offset_a, offset_b) for every element of `out`, with
// the offsets of two operands of the given strides.
template <typename Fn>
void for_each_index(const Dims& out, const Ints& sa, const Ints& sb, Fn&& fn) {
  std::int64_t total = 1;
  for (std::int64_t d : out) total *= d;
  if (total == 0) return;
  std::size_t r = out.size();
  Ints idx(r, 0);
  std::int64_t oa = 0, ob = 0;
  for (std::int64_t i = 0; i < total; ++i) {
    fn(i, oa, ob);
    for (std::size_t k = r; k-- > 0;) {
      if (++idx[k] < out[k]) {
        oa += sa[k];
        ob += sb[k];
        break;
      }
      oa -= sa[k] * (out[k] - 1);
      ob -= sb[k] * (out[k] - 1);
      idx[k] = 0;
    }
  }
}

// Splits dims around `axis` into outer x axis x inner extents.
struct AxisView {
  std::int64_t outer = 1, extent = 1, inner = 1;
};
AxisView view_around(const Dims& dims, std::int64_t axis);

// Elementwise operators (kernels_elementwise.cc).
Tensor unary(Op op, const Attributes& a, const Tensor& x);
Tensor binary(Op op, const Tensor& x, const Tensor& y);
// Applies a convolution's activation ("relu", "sigmoid", "tanh"; anything
// else is none) to `t` in place.
void activate(Tensor& t, const std::string& activation);

// Matrix products (kernels_matmul.cc).
Tensor matmul(const Tensor& x, const Tensor& y);
Tensor gemm(const Attributes& attrs, std::span<const Tensor> in);

// Convolution and pooling (kernels_conv.cc).
Tensor conv(const Attributes& attrs, std::span<const Tensor> in);
Tensor pool(Op op, const Attributes& attrs, const Tensor& x);
Tensor global_average_pool(const Tensor& x);

// Normalizations and reductions (kernels_norm.cc).
Tensor softmax(const Attributes& attrs, const Tensor& x);
Tensor layer_norm(const Attributes& attrs, std::span<const Tensor> in);
Tensor batch_norm(const Attributes& attrs, std::span<const Tensor> in);
Tensor instance_norm(const Attributes& attrs, std::span<const Tensor> in);
// QuantizeLinear and DequantizeLinear (is_quantization) into `out_type`.
Tensor quantization(Op op, const Attributes& a, std::span<const Tensor> in,
                    const TensorType& out_type);
// Writes `values` (whole numbers) as `dtype` (int8, uint8, int16 or uint16)
// into `out`, each saturated to the type's range, NaN as 0.
void write_saturated(std::span<const float> values, DType dtype, std::span<std::byte> out);

// ONNX's integer operators (is_integer_operator; kernels_integer.cc): one
// value, or DynamicQuantizeLinear's three.
std::vector<Tensor> integer_operator(Op op, const Attributes& a, std::span<const Tensor> in,
                                     const ValueType& type);
// The reductions (is_reduction), accumulated in double.
Tensor reduce(Op op, const Attributes& attrs, const Tensor& x);

// onnxruntime's fused operators (kernels_fused.cc).
Tensor simplified_layer_norm(const Attributes& attrs, std::span<const Tensor> in);
// The normalized sum and the sum: RMSNorm with the scale in[2], or, with
// a bias in[3] too, LayerNorm.
std::vector<Tensor> skip_layer_norm(const Attributes& attrs, std::span<const Tensor> in);
Tensor rotary_embedding(const Attributes& attrs, std::span<const Tensor> in);
Tensor group_query_attention(const Attributes& attrs, std::span<const Tensor> in);

// Data movement and the rewrites of convolution kernels (kernels_shape.cc),
// on any element type but string: `movable` says which.
absl::Status movable(Op op, const Tensor& x);
Tensor transpose(const Attributes& attrs, const Tensor& x);
Tensor slice(const Attributes& attrs, const Tensor& x);
Tensor concat(const Attributes& attrs, std::span<const Tensor> in);
std::vector<Tensor> split(const Attributes& attrs, const Tensor& x);
absl::StatusOr<Tensor> gather(const Attributes& attrs, const Tensor& data, const Tensor& indices);
absl::StatusOr<Tensor> pad(const Attributes& attrs, const Tensor& x);
Tensor enlarge(const Attributes& attrs, const Tensor& w);
Tensor merge_groups(const Attributes& attrs, const Tensor& w);

// The value operators, on any plain element type (kernels_values.cc), of
// the output type inference gave.
absl::StatusOr<Tensor> value_op(Op op, const Attributes& attrs, std::span<const Tensor> in,
                                const TensorType& out);
// Add, Sub, Mul and Div of two integer tensors of one type, or Neg and Abs
// of one, as ONNX computes them: wrapping in the type's width, Div
// truncating toward zero; a division by zero is an error.
absl::StatusOr<Tensor> integer_arithmetic(Op op, std::span<const Tensor> in, const TensorType& out);
// Expand, Tile, Range, ConstantOfShape, Min, Max, CumSum, GatherElements,
// GatherND, ScatterND, ScatterElements and Resize (kernels_made.cc), of the output
// type inference gave: where
// the size depends on the values (sized_by_values), the size the values
// give, which must be that type's.
absl::StatusOr<Tensor> made_value(Op op, const Attributes& attrs, std::span<const Tensor> in,
                                  const TensorType& out);
// Resize of in[0] by its scales or sizes in[1] (kernels_resize.cc); an
// error where they do not give `out`'s dimensions.
// GridSample (opset 16's modes, 4-D), as onnxruntime computes it.
absl::StatusOr<Tensor> grid_sample(const Attributes& a, std::span<const Tensor> in,
                                   const TensorType& out);
absl::StatusOr<Tensor> resize(const Attributes& attrs, std::span<const Tensor> in,
                              const TensorType& out);
// Advances `index` through `dims` in row-major order; false after the last.
bool next_index(Dims& index, const Dims& dims);
// ReduceSum, ReduceProd, ReduceMax or ReduceMin of an integer tensor `x`
// into `kept` (x's dimensions with the reduced ones 1; `out_strides` x's
// strides into it), in the type's width: sums and products wrap, an empty
// Max is the type's lowest value (kernels_made.cc).
Tensor reduce_integers(Op op, const Tensor& x, const Dims& kept, const Ints& out_strides);
// ONNX's Range of three scalars, Expand of a tensor by a shape value, and
// ConstantOfShape of a shape value filled with `fill` as `dtype`.
absl::StatusOr<Tensor> range_of(std::span<const Tensor> in);
absl::StatusOr<Tensor> expand_by(std::span<const Tensor> in);
absl::StatusOr<Tensor> constant_of_shape(DType dtype, double fill, const Tensor& shape);
// An opaque node by its ONNX definition, for the operators exporters use on
// sizes and positions (Range, Expand, and Add, Sub and Mul on integers);
// an error naming any other.
// TopK's values and indices (`type`, from inference).
std::vector<Tensor> top_k(const Attributes& a, const Tensor& x, const ValueType& type);
absl::StatusOr<Tensor> onnx_op(const Attributes& attrs, std::span<const Tensor> in);

}  // namespace saturn::tensor::kernels

// Shape and dtype inference: the type of an operator's result from its
// attributes and its inputs' types, or an error saying why they do not fit.
//
//   absl::StatusOr<ValueType> t = infer_type(Op::kMatMul, {}, {a, b});
//   // error: "MatMul: inner dimensions differ: float32[2,3] x float32[4,5]"
//
// Attributes must be normalized (see normalize_attributes). The same function
// serves the graph builder, the JSON and ONNX loaders and the e-graph's shape
// analysis, so a rewrite whose result does not type-check is never built.
#pragma once

#include <span>

#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor {

absl::StatusOr<ValueType> infer_type(Op op, const Attributes& attributes,
                                     std::span<const ValueType> inputs);

// The shape two broadcast operands give (numpy rules), or nullopt.
std::optional<Dims> broadcast_dims(const Dims& a, const Dims& b);
// Row-major strides of `dims`.
Dims strides_of(const Dims& dims);
// Strides of an operand of dimensions `in` read at the positions of its
// broadcast to `out` (0 along the axes it is broadcast on).
Dims broadcast_strides(const Dims& in, const Dims& out);

// Normalizes `axis` for a tensor of `rank` (negative counts from the end);
// nullopt when out of range.
std::optional<std::int64_t> normalize_axis(std::int64_t axis, std::size_t rank);

// Slice bounds of one axis after ONNX clamping: first index, step, count.
struct SliceRange {
  std::int64_t start = 0, step = 1, count = 0;
};
// `dim` is known (>= 0) and `step` is not 0.
SliceRange slice_range(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step);

// The dimensions [start, end) a Shape node reads of a tensor of `rank`
// (its attributes clamped as ONNX clamps them; start <= end).
std::pair<std::int64_t, std::int64_t> shape_range(const Attributes& shape, std::size_t rank);

// Output spatial extent of a convolution or pooling window.
std::int64_t window_output(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                           std::int64_t pad_begin, std::int64_t pad_end, std::int64_t dilation);

// Decodes an opaque node's output types from its out_shapes / out_dtypes
// attributes (shapes stored rank-prefixed: [r0, d.., r1, d..]).
absl::StatusOr<std::vector<TensorType>> opaque_outputs(const Attributes& attributes);
// Encodes output types for an opaque node's attributes.
void set_opaque_outputs(Attributes& attributes, std::span<const TensorType> outputs);

}  // namespace saturn::tensor

// Reference kernels: one operator evaluated on input tensors. Naive but
// correct, with the heavy ones (MatMul, Gemm, Conv) blocked and parallel
// (TBB) so that the zoo models run in seconds.
//
//   absl::StatusOr<std::vector<Tensor>> out =
//       evaluate_op(Op::kRelu, attributes, {x});   // one tensor per result part
//
// Tuple plumbing (Tuple, TupleGet) is the interpreter's business, not a
// kernel's; opaque operators cannot be evaluated.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/tensor.h"

namespace saturn::tensor {

// The most bytes one computed value may hold (4 GiB): a larger one is an
// error, not an allocation the machine cannot make. The value operators
// (and the opaque ones on sizes) compute each element in 16 bytes, whatever
// its type, and count so.
inline constexpr std::int64_t kMaxEvaluatedBytes = std::int64_t{1} << 32;
inline constexpr std::int64_t kValueOpElementBytes = 16;

// Attributes must be normalized. The inputs are typed first (infer_type): a
// value they do not type-check for, an index outside its axis or a result
// over kMaxEvaluatedBytes is an error naming the operator and the value.
absl::StatusOr<std::vector<Tensor>> evaluate_op(Op op, const Attributes& attributes,
                                                std::span<const Tensor> inputs);

// The element of a one-element tensor of a plain number type (or bool) as
// a double (exact for float32 and for integers up to 2^53); nullopt for
// another tensor.
std::optional<double> scalar_number(const Tensor& t);

namespace kernels {
// A tensor of `type` (a plain number or bool type) with every element
// `value` (cast as Cast does).
Tensor filled(const TensorType& type, double value);
// The dimensions Resize gives `in` by a float32 scales or int64 sizes value
// (one per axis): the sizes, or each dimension times its scale, floored;
// nullopt for another value, a negative size or a scale not above 0.
std::optional<Dims> resize_dims(const Dims& in, const Tensor& scales_or_sizes);
}  // namespace kernels

// C[m x n] += A[m x k] * B[k x n], all row-major and contiguous; serial.
void gemm_accumulate(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n,
                     std::int64_t k);

}  // namespace saturn::tensor

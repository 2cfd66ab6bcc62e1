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

#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/tensor.h"

namespace saturn::tensor {

// Attributes must be normalized and the inputs must type-check.
absl::StatusOr<std::vector<Tensor>> evaluate_op(Op op, const Attributes& attributes,
                                                std::span<const Tensor> inputs);

// C[m x n] += A[m x k] * B[k x n], all row-major and contiguous; serial.
void gemm_accumulate(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n,
                     std::int64_t k);

}  // namespace saturn::tensor

// Internal to the reference kernels of the value operators
// (kernels_values.cc, kernels_made.cc): elements read as Numbers, written
// back in any plain element type, and maps over a broadcast.
//
// A Number is a long double, whose 64-bit significand (x86-64's extended
// format; binary128 elsewhere) holds every int64, uint64, float32 and
// float64 exactly, so one code path serves every type without loss.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/interpreter/kernels.h"
#include "saturn/tensor/tensor.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor::kernels {

using Number = long double;

// The elements a computed value may have: each is a Number while computed.
inline constexpr std::int64_t kMaxElements = kMaxEvaluatedBytes / kValueOpElementBytes;
static_assert(sizeof(Number) <= kValueOpElementBytes);

// The elements of `t` (a plain number or bool type), in order.
std::vector<Number> numbers(const Tensor& t);
// A tensor of `type` holding `v` (integers truncated toward zero and
// saturated at the type's range, as Cast does).
Tensor from_numbers(TensorType type, std::span<const Number> v);

// x op y (or op x, for Neg, Abs and Sign) on integers of `dtype` as ONNX
// computes them: in the type's width, wrapping on overflow (two's
// complement), Div truncating toward zero. `by_zero` is set on a division
// by zero.
Number integer_op(Op op, DType dtype, Number x, Number y, bool& by_zero);

// f(args) at every element of the broadcast of `in`, as a tensor of `type`
// (whose dimensions are that broadcast).
template <typename F>
Tensor broadcast_map(std::span<const Tensor> in, const TensorType& type, F f) {
  std::vector<std::vector<Number>> values;
  std::vector<Dims> steps;
  for (const Tensor& t : in) {
    values.push_back(numbers(t));
    steps.push_back(broadcast_strides(t.dims(), type.dims));
  }
  const std::int64_t total = type.num_elements();
  std::vector<Number> out(static_cast<std::size_t>(total));
  const std::size_t rank = type.dims.size();
  Dims index(rank, 0);
  std::vector<std::int64_t> offset(in.size(), 0);
  std::vector<Number> args(in.size());
  for (std::int64_t i = 0; i < total; ++i) {
    for (std::size_t k = 0; k < in.size(); ++k) args[k] = values[k][offset[k]];
    out[static_cast<std::size_t>(i)] = f(args);
    for (std::size_t axis = rank; axis-- > 0;) {  // the next index, odometer-wise
      const bool carry = ++index[axis] == type.dims[axis];
      for (std::size_t k = 0; k < in.size(); ++k)
        offset[k] += carry ? -steps[k][axis] * (type.dims[axis] - 1) : steps[k][axis];
      if (!carry) break;
      index[axis] = 0;
    }
  }
  return from_numbers(type, out);
}

}  // namespace saturn::tensor::kernels

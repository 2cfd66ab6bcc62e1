// Internal to shape inference (infer.cc, infer_compute.cc, infer_shape.cc):
// the Inference of one operator application, whose rules those files hold.
//
//   infer.cc          infer_type and the shape helpers of infer.h; the
//                     dispatch by operator, the input checks, leaves,
//                     elementwise operators, tuples and opaque operators
//   infer_compute.cc  matrix products, convolution and pooling,
//                     normalizations and reductions, and onnxruntime's
//                     fused normalizations, rotary embedding and attention
//   infer_shape.cc    the shape operators (Transpose to Pad) and the
//                     rewrites of convolution kernels
//   infer_values.cc   the value operators that move or make values
//                     (Expand, Tile, Range, ConstantOfShape, CumSum,
//                     GatherElements, GatherND), Min and Max
//   infer_integer.cc  ONNX's integer operators (is_integer_operator)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "fmt/format.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor::inference {

using Ints = std::vector<std::int64_t>;

template <typename... Args>
absl::Status fail(Op op, fmt::format_string<Args...> f, Args&&... args) {
  return absl::InvalidArgumentError(
      fmt::format("{}: {}", op_name(op), fmt::format(f, std::forward<Args>(args)...)));
}

inline const Ints& ints(const Attributes& a, std::string_view key) {
  static const Ints kEmpty;
  const Ints* v = a.get_ints(key);
  return v ? *v : kEmpty;
}
inline std::int64_t int_attr(const Attributes& a, std::string_view key) {
  return a.get_int(key).value_or(0);
}

class Inference {
 public:
  Inference(Op op, const Attributes& a, std::span<const ValueType> in) : op_(op), a_(a), in_(in) {}

  absl::StatusOr<ValueType> run();

 private:
  const TensorType& t(std::size_t i) const { return in_[i].tensor(); }
  const Dims& d(std::size_t i) const { return in_[i].tensor().dims; }

  ValueType like(std::size_t i, Dims dims) const {
    return ValueType::of(TensorType{t(i).dtype, std::move(dims)});
  }

  // The dispatch, the checks and the rules of infer.cc.
  absl::StatusOr<ValueType> infer();
  absl::Status need_float(std::size_t i) const;
  absl::Status need_rank(std::size_t i, std::size_t rank) const;
  absl::Status need_positive(const Ints& v, std::string_view what, std::size_t n) const;
  absl::Status need_pads(const Ints& pads, std::size_t n) const;
  absl::StatusOr<ValueType> leaf();
  absl::StatusOr<ValueType> broadcast();
  absl::StatusOr<ValueType> unary();
  absl::StatusOr<ValueType> tuple();
  absl::StatusOr<ValueType> tuple_get();
  absl::StatusOr<ValueType> opaque();
  absl::StatusOr<ValueType> value_op();

  // infer_values.cc
  absl::StatusOr<ValueType> made_value();
  absl::StatusOr<ValueType> top_k();
  absl::StatusOr<ValueType> grid_sample();  // X [N, C, H, W] at grid [N, H', W', 2]  // values and their int64 indices, a tuple  // an operator of value_op() below
  absl::StatusOr<ValueType> scatter();     // ScatterND, ScatterElements
  absl::StatusOr<ValueType> resize();
  absl::Status need_index(std::size_t i) const;
  absl::Status need_shape_value(std::size_t i, std::size_t length) const;

  // infer_compute.cc
  absl::StatusOr<ValueType> matmul();
  absl::StatusOr<ValueType> gemm();
  absl::StatusOr<ValueType> conv();
  absl::StatusOr<ValueType> pool();
  absl::StatusOr<ValueType> global_average_pool();
  absl::StatusOr<ValueType> softmax();
  absl::StatusOr<ValueType> layer_norm();
  absl::StatusOr<ValueType> instance_norm();
  absl::StatusOr<ValueType> simplified_layer_norm();
  absl::StatusOr<ValueType> skip_layer_norm();
  absl::StatusOr<ValueType> rotary_embedding();
  absl::StatusOr<ValueType> group_query_attention();
  absl::StatusOr<ValueType> batch_norm();
  absl::StatusOr<ValueType> reduce();
  absl::StatusOr<ValueType> quantization();

  // infer_integer.cc
  absl::StatusOr<ValueType> integer_operator();
  absl::StatusOr<ValueType> quantized_binary();
  absl::StatusOr<ValueType> quantized_unary();
  absl::StatusOr<ValueType> quantized_concat();
  absl::StatusOr<ValueType> matmul_nbits();
  absl::Status need_per_tensor_quantization(std::size_t scale, std::size_t zero_point,
                                            DType type) const;

  // infer_shape.cc
  absl::StatusOr<ValueType> transpose();
  absl::StatusOr<ValueType> reshape();
  absl::StatusOr<ValueType> flatten();
  absl::StatusOr<ValueType> concat();
  absl::StatusOr<ValueType> split();
  absl::StatusOr<ValueType> slice();
  absl::StatusOr<ValueType> gather();
  absl::StatusOr<ValueType> pad();
  absl::StatusOr<ValueType> enlarge();
  absl::StatusOr<ValueType> merge_groups();

  Op op_;
  const Attributes& a_;
  std::span<const ValueType> in_;
};

}  // namespace saturn::tensor::inference

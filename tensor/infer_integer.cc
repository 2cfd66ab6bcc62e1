// Shape inference rules: ONNX's integer operators (DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv) and
// onnxruntime's QLinearAdd and QLinearMul. Their output sizes are MatMul's,
// Conv's and a broadcast's; what is theirs is the typing of the quantized
// operands and their scales and zero points.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/inference.h"

namespace saturn::tensor::inference {

namespace {

bool is_quantized_8bit(DType d) { return d == DType::kInt8 || d == DType::kUInt8; }

bool per_tensor(const TensorType& t) { return t.rank() <= 1 && t.num_elements() == 1; }

// Where each input of an integer operator sits: its quantized operands and,
// for each, its scale and zero point (absent: -1), and the extent a
// per-axis scale or zero point may have (0: per tensor only).
struct Operand {
  int value, scale, zero_point;
  std::int64_t per_axis_extent = 0;
};

}  // namespace

absl::StatusOr<ValueType> Inference::integer_operator() {
  if (op_ == Op::kDynamicQuantizeLinear) {
    if (t(0).dtype != DType::kFloat32)
      return fail(op_, "input 0 must be float32, is {}", to_string(t(0)));
    return ValueType::tuple({TensorType{DType::kUInt8, d(0)}, TensorType{DType::kFloat32, {}},
                             TensorType{DType::kUInt8, {}}});
  }
  if (op_ == Op::kQLinearAdd || op_ == Op::kQLinearMul) return quantized_binary();
  const bool matmul = op_ == Op::kMatMulInteger || op_ == Op::kQLinearMatMul;
  const bool requantized = op_ == Op::kQLinearMatMul || op_ == Op::kQLinearConv;
  const int a = 0, b = requantized ? 3 : 1;
  for (int i : {a, b}) {
    if (!is_quantized_8bit(t(i).dtype))
      return fail(op_, "input {} must be int8 or uint8, is {}", i, to_string(t(i)));
  }
  // The product's size, as the float operator's.
  std::vector<ValueType> as_float = {ValueType::of(TensorType{DType::kFloat32, d(a)}),
                                     ValueType::of(TensorType{DType::kFloat32, d(b)})};
  absl::StatusOr<ValueType> product = matmul ? infer_type(Op::kMatMul, {}, as_float)
                                             : infer_type(Op::kConv, a_, as_float);
  if (!product.ok()) return fail(op_, "{}", std::string(product.status().message()));
  if (!matmul && *a_.get_string("activation") != "none")
    return fail(op_, "has no activation, is given '{}'", *a_.get_string("activation"));
  // b's scale and zero point may be per column of b (the matrix products)
  // or per output channel of w (the convolutions).
  const std::int64_t b_axis_extent = matmul ? d(b).back() : d(b)[0];
  std::vector<Operand> operands;
  if (requantized) {
    operands = {{a, 1, 2}, {b, 4, 5, b_axis_extent}, {-1, 6, 7}};
  } else if (in_.size() == 4) {
    operands = {{a, -1, 2}, {b, -1, 3, b_axis_extent}};
  } else if (in_.size() == 3) {  // a's zero point only
    operands = {{a, -1, 2}};
  }
  for (const Operand& o : operands) {
    for (int i : {o.scale, o.zero_point}) {
      if (i < 0) continue;
      const bool along_axis = o.per_axis_extent != 0 && t(i).rank() == 1 &&
                              d(i)[0] == o.per_axis_extent;
      if (!per_tensor(t(i)) && !along_axis)
        return fail(op_, "input {} {} is neither one value nor one per {}", i, to_string(t(i)),
                    matmul ? "column of the second operand" : "output channel");
    }
    if (o.scale >= 0 && t(o.scale).dtype != DType::kFloat32)
      return fail(op_, "the scale (input {}) must be float32, is {}", o.scale,
                  to_string(t(o.scale)));
    const DType zero_point = t(o.zero_point).dtype;
    if (o.value >= 0 ? zero_point != t(o.value).dtype : !is_quantized_8bit(zero_point))
      return fail(op_, "the zero point (input {}) {} must be of {}", o.zero_point,
                  to_string(t(o.zero_point)),
                  o.value >= 0 ? fmt::format("input {}'s type", o.value) : "int8 or uint8");
    if (o.scale >= 0 && o.zero_point >= 0 && d(o.scale) != d(o.zero_point) &&
        !(per_tensor(t(o.scale)) && per_tensor(t(o.zero_point))))
      return fail(op_, "the zero point (input {}) {} must have its scale's shape {}",
                  o.zero_point, to_string(t(o.zero_point)), to_string(t(o.scale)));
  }
  if (op_ == Op::kQLinearConv && in_.size() == 9 &&
      (t(8).dtype != DType::kInt32 || d(8) != Dims{d(b)[0]}))
    return fail(op_, "the bias must be int32 [{}], is {}", d(b)[0], to_string(t(8)));
  const DType out = requantized ? t(7).dtype : DType::kInt32;
  return ValueType::of(TensorType{out, product->tensor().dims});
}

// QLinearAdd and QLinearMul: a (0) and b (3) of one 8-bit type, c's zero
// point (7) too; every scale (1, 4, 6) and zero point (2, 5, 7) one value.
absl::StatusOr<ValueType> Inference::quantized_binary() {
  const DType type = t(0).dtype;
  if (!is_quantized_8bit(type))
    return fail(op_, "input 0 must be int8 or uint8, is {}", to_string(t(0)));
  for (int i : {2, 3, 5, 7}) {
    if (t(i).dtype != type)
      return fail(op_, "input {} {} must be of input 0's type {}", i, to_string(t(i)),
                  dtype_name(type));
  }
  for (int i : {1, 2, 4, 5, 6, 7}) {
    if (!per_tensor(t(i))) return fail(op_, "input {} {} must be one value", i, to_string(t(i)));
    if ((i == 1 || i == 4 || i == 6) && t(i).dtype != DType::kFloat32)
      return fail(op_, "the scale (input {}) must be float32, is {}", i, to_string(t(i)));
  }
  std::optional<Dims> out = broadcast_dims(d(0), d(3));
  if (!out) return fail(op_, "cannot broadcast {} with {}", to_string(t(0)), to_string(t(3)));
  return ValueType::of(TensorType{type, *out});
}

}  // namespace saturn::tensor::inference

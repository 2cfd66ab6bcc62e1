// Shape inference rules: ONNX's integer operators (DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv) and
// onnxruntime's (QLinearAdd, QLinearMul, QGemm, QLinearConcat and the
// quantized unary operators). Their output sizes are the float operators'
// (MatMul's, Conv's, Gemm's, a broadcast's, Concat's, ...); what is theirs
// is the typing of the quantized operands and their scales and zero points.
#include <algorithm>
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
  if (is_quantized_unary(op_)) return quantized_unary();
  if (op_ == Op::kQLinearConcat) return quantized_concat();
  if (op_ == Op::kMatMulNBits) return matmul_nbits();
  const bool gemm = op_ == Op::kQGemm;
  const bool matmul = op_ == Op::kMatMulInteger || op_ == Op::kQLinearMatMul || gemm;
  const bool requantized = op_ == Op::kQLinearMatMul || op_ == Op::kQLinearConv || gemm;
  const int a = 0, b = requantized ? 3 : 1;
  for (int i : {a, b}) {
    if (!is_quantized_8bit(t(i).dtype))
      return fail(op_, "input {} must be int8 or uint8, is {}", i, to_string(t(i)));
  }
  // The product's size, as the float operator's.
  std::vector<ValueType> as_float = {ValueType::of(TensorType{DType::kFloat32, d(a)}),
                                     ValueType::of(TensorType{DType::kFloat32, d(b)})};
  Attributes transposed;
  if (gemm) {
    transposed.set("transA", *a_.get_int("transA"));
    transposed.set("transB", *a_.get_int("transB"));
  }
  absl::StatusOr<ValueType> product = gemm     ? infer_type(Op::kGemm, transposed, as_float)
                                      : matmul ? infer_type(Op::kMatMul, {}, as_float)
                                               : infer_type(Op::kConv, a_, as_float);
  if (!product.ok()) return fail(op_, "{}", std::string(product.status().message()));
  if (!matmul && *a_.get_string("activation") != "none")
    return fail(op_, "has no activation, is given '{}'", *a_.get_string("activation"));
  // b's scale and zero point may be per column of b (the matrix products)
  // or per output channel of w (the convolutions).
  const std::int64_t b_axis_extent = matmul ? product->tensor().dims.back() : d(b)[0];
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
  if (gemm && in_.size() == 9) {
    const Dims& out = product->tensor().dims;
    if (t(8).dtype != DType::kInt32 || broadcast_dims(d(8), out) != out)
      return fail(op_, "c must be int32 and broadcast to {}, is {}", to_string(out),
                  to_string(t(8)));
  }
  const DType out = requantized ? t(7).dtype : DType::kInt32;
  return ValueType::of(TensorType{out, product->tensor().dims});
}

// QLinearAdd and QLinearMul: a (0) and b (3) of one 8-bit type, c's zero
// point (7) too; every scale (1, 4, 6) and zero point (2, 5, 7) one value.
absl::StatusOr<ValueType> Inference::quantized_binary() {
  const DType type = t(0).dtype;
  if (!is_quantized_8bit(type))
    return fail(op_, "input 0 must be int8 or uint8, is {}", to_string(t(0)));
  if (t(3).dtype != type)
    return fail(op_, "input 3 {} must be of input 0's type {}", to_string(t(3)), dtype_name(type));
  for (std::size_t i : {1, 4, 6}) {
    if (absl::Status s = need_per_tensor_quantization(i, i + 1, type); !s.ok()) return s;
  }
  std::optional<Dims> out = broadcast_dims(d(0), d(3));
  if (!out) return fail(op_, "cannot broadcast {} with {}", to_string(t(0)), to_string(t(3)));
  return ValueType::of(TensorType{type, *out});
}

absl::Status Inference::need_per_tensor_quantization(std::size_t scale, std::size_t zero_point,
                                                     DType type) const {
  if (!per_tensor(t(scale)) || t(scale).dtype != DType::kFloat32)
    return fail(op_, "the scale (input {}) must be one float32, is {}", scale,
                to_string(t(scale)));
  if (!per_tensor(t(zero_point)) || t(zero_point).dtype != type)
    return fail(op_, "the zero point (input {}) must be one {}, is {}", zero_point,
                dtype_name(type), to_string(t(zero_point)));
  return absl::OkStatus();
}

// The quantized unary operators: x (0) 8-bit, its scale and zero point (1,
// 2), y's (3, 4) of x's type; y's size the float operator's.
absl::StatusOr<ValueType> Inference::quantized_unary() {
  const DType type = t(0).dtype;
  if (!is_quantized_8bit(type))
    return fail(op_, "input 0 must be int8 or uint8, is {}", to_string(t(0)));
  for (std::size_t i : {1, 3}) {
    if (absl::Status s = need_per_tensor_quantization(i, i + 1, type); !s.ok()) return s;
  }
  const ValueType as_float[] = {ValueType::of(TensorType{DType::kFloat32, d(0)})};
  absl::StatusOr<ValueType> y = ValueType::of(TensorType{DType::kFloat32, d(0)});
  if (op_ == Op::kQLinearGlobalAveragePool) {
    if (d(0).size() < 3) return fail(op_, "x must have rank 3 or more, is {}", to_string(t(0)));
    Dims pooled = d(0);
    const bool channels_last = *a_.get_int("channels_last") != 0;
    std::fill(pooled.begin() + (channels_last ? 1 : 2), pooled.end() - (channels_last ? 1 : 0), 1);
    y = ValueType::of(TensorType{DType::kFloat32, pooled});
  } else if (op_ == Op::kQLinearSoftmax) {
    Attributes axis;
    axis.set("axis", *a_.get_int("axis"));
    y = infer_type(Op::kSoftmax, axis, as_float);
  }
  if (!y.ok()) return fail(op_, "{}", std::string(y.status().message()));
  return like(0, y->tensor().dims);
}

// QLinearConcat: y's scale and zero point (0, 1), then each operand with
// its scale and zero point, all of y's type; y's size Concat's.
absl::StatusOr<ValueType> Inference::quantized_concat() {
  if (in_.size() < 5 || (in_.size() - 2) % 3 != 0)
    return fail(op_, "takes y's scale and zero point, then (x, scale, zero point) per operand; "
                "is given {} inputs", in_.size());
  const DType type = t(1).dtype;
  if (!is_quantized_8bit(type))
    return fail(op_, "y's zero point must be int8 or uint8, is {}", to_string(t(1)));
  if (absl::Status s = need_per_tensor_quantization(0, 1, type); !s.ok()) return s;
  std::vector<ValueType> as_float;
  for (std::size_t i = 2; i < in_.size(); i += 3) {
    if (t(i).dtype != type)
      return fail(op_, "input {} {} must be of y's type {}", i, to_string(t(i)), dtype_name(type));
    if (absl::Status s = need_per_tensor_quantization(i + 1, i + 2, type); !s.ok()) return s;
    as_float.push_back(ValueType::of(TensorType{DType::kFloat32, d(i)}));
  }
  Attributes axis;
  axis.set("axis", *a_.get_int("axis"));
  absl::StatusOr<ValueType> y = infer_type(Op::kConcat, axis, as_float);
  if (!y.ok()) return fail(op_, "{}", std::string(y.status().message()));
  return ValueType::of(TensorType{type, y->tensor().dims});
}

// MatMulNBits: a float32 [..., K]; b uint8 [N, blocks, block_size * bits /
// 8]; a scale per block of each row (N * blocks), and where given a uint8
// zero point per block packed `bits` wide, each row's to whole bytes.
absl::StatusOr<ValueType> Inference::matmul_nbits() {
  const std::int64_t k = *a_.get_int("K"), n = *a_.get_int("N"), bits = *a_.get_int("bits");
  const std::int64_t block = *a_.get_int("block_size");
  if (bits != 4 && bits != 8) return fail(op_, "bits must be 4 or 8, is {}", bits);
  if (block < 16 || block > (1 << 20) || (block & (block - 1)) != 0)
    return fail(op_, "block_size must be a power of two from 16 to 2^20, is {}", block);
  constexpr std::int64_t kMostElements = std::int64_t{1} << 31;
  if (k < 1 || n < 1 || k > kMostElements || n > kMostElements)
    return fail(op_, "K and N must be from 1 to 2^31, are {} and {}", k, n);
  if (t(0).dtype != DType::kFloat32 || d(0).empty() || d(0).back() != k)
    return fail(op_, "a must be float32 [..., {}], is {}", k, to_string(t(0)));
  const std::int64_t blocks = (k + block - 1) / block;
  if (t(1).dtype != DType::kUInt8 || d(1) != Dims{n, blocks, block * bits / 8})
    return fail(op_, "b must be uint8 [{}, {}, {}], is {}", n, blocks, block * bits / 8,
                to_string(t(1)));
  if (t(2).dtype != DType::kFloat32 || t(2).num_elements() != n * blocks)
    return fail(op_, "scales must be {} float32 values, are {}", n * blocks, to_string(t(2)));
  const std::int64_t zero_bytes = n * ((blocks * bits + 7) / 8);
  if (in_.size() == 4 && (t(3).dtype != DType::kUInt8 || t(3).num_elements() != zero_bytes))
    return fail(op_, "zero_points must be {} uint8 values, are {}", zero_bytes, to_string(t(3)));
  Dims out = d(0);
  out.back() = n;
  return ValueType::of(TensorType{DType::kFloat32, std::move(out)});
}

}  // namespace saturn::tensor::inference

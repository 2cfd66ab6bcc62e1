// Reference kernels: the unary and binary elementwise operators, and the
// activations fused into convolutions.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels_internal.h"

namespace saturn::tensor::kernels {

namespace {

float apply_unary(Op op, float x, const Attributes& a) {
  switch (op) {
    case Op::kSqrt:
      return std::sqrt(x);
    case Op::kErf:
      return std::erf(x);
    case Op::kRelu:
      return x > 0 ? x : 0.0f;
    case Op::kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case Op::kTanh:
      return std::tanh(x);
    case Op::kGelu:
      return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case Op::kClip:
      return std::clamp(x, static_cast<float>(*a.get_float("min")),
                        static_cast<float>(*a.get_float("max")));
    case Op::kNeg:
      return -x;
    case Op::kAbs:
      return std::abs(x);
    case Op::kReciprocal:
      return 1.0f / x;
    case Op::kExp:
      return std::exp(x);
    case Op::kLog:
      return std::log(x);
    case Op::kSin:
      return std::sin(x);
    case Op::kCos:
      return std::cos(x);
    case Op::kHardSigmoid:
      return std::clamp(static_cast<float>(*a.get_float("alpha")) * x +
                            static_cast<float>(*a.get_float("beta")),
                        0.0f, 1.0f);
    case Op::kHardSwish:  // x * HardSigmoid(x) at alpha 1/6, beta 0.5
      return x * std::clamp(x / 6.0f + 0.5f, 0.0f, 1.0f);
    case Op::kCeil:
      return std::ceil(x);
    case Op::kFloor:
      return std::floor(x);
    case Op::kRound:  // halves to even, as ONNX defines it
      return std::nearbyint(x);
    case Op::kSign:
      return x > 0 ? 1.0f : x < 0 ? -1.0f : x;  // NaN stays NaN, -0 stays -0
    default:
      return x;
  }
}

float apply_binary(Op op, float x, float y) {
  switch (op) {
    case Op::kAdd:
      return x + y;
    case Op::kSub:
      return x - y;
    case Op::kMul:
      return x * y;
    case Op::kDiv:
      return x / y;
    case Op::kPow:
      return std::pow(x, y);
    default:
      return 0;
  }
}

}  // namespace

Tensor unary(Op op, const Attributes& a, const Tensor& x) {
  Tensor out(x.type());
  std::span<const float> in = x.floats();
  std::span<float> o = out.mutable_floats();
  parallel(x.size(), 1 << 15, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) o[i] = apply_unary(op, in[i], a);
  });
  return out;
}

void activate(Tensor& t, const std::string& activation) {
  Op op = activation == "relu"      ? Op::kRelu
          : activation == "sigmoid" ? Op::kSigmoid
          : activation == "tanh"    ? Op::kTanh
                                    : Op::kIdentity;
  if (op == Op::kIdentity) return;
  std::span<float> v = t.mutable_floats();
  parallel(t.size(), 1 << 15, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) v[i] = apply_unary(op, v[i], {});
  });
}

Tensor binary(Op op, const Tensor& x, const Tensor& y) {
  Dims dims = *broadcast_dims(x.dims(), y.dims());
  Tensor out(TensorType{DType::kFloat32, dims});
  std::span<const float> a = x.floats(), b = y.floats();
  std::span<float> o = out.mutable_floats();
  if (x.dims() == y.dims()) {
    parallel(out.size(), 1 << 15, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) o[i] = apply_binary(op, a[i], b[i]);
    });
    return out;
  }
  for_each_index(dims, broadcast_strides(x.dims(), dims), broadcast_strides(y.dims(), dims),
                 [&](std::int64_t i, std::int64_t ia, std::int64_t ib) {
                   o[i] = apply_binary(op, a[ia], b[ib]);
                 });
  return out;
}

}  // namespace saturn::tensor::kernels

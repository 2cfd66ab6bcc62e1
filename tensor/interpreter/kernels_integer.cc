// Reference kernels: ONNX's integer operators. The products multiply the
// integers less their zero points and sum in 64 bits (ONNX's int32 sums,
// which no model's sizes overflow); MatMulInteger and ConvInteger write the
// sum as int32. QLinearMatMul and QLinearConv add the bias, scale the sum by
// (a_scale * b_scale) / y_scale in float32, round half to even, add y's
// zero point and saturate, as ONNX defines them and onnxruntime's kernels
// compute them. DynamicQuantizeLinear quantizes x to uint8 with the scale
// and zero point of its range widened to hold 0 (NaNs left out of the
// range; a range of zero width, all of x 0, gets the scale 1, as in
// onnxruntime, where ONNX's formula divides by zero). onnxruntime's
// QLinearAdd and QLinearMul dequantize each operand (scale * (q - zero
// point), float32), add or multiply them, divide by c's scale, round half to
// even, add c's zero point and saturate: the formula of onnxruntime's
// reference kernel (mlas qladd.cpp). Its vector kernels scale by fixed-point
// multipliers instead and may land one step away
// (tests/python/test_qoperator_int8.py measures it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels_internal.h"

namespace saturn::tensor::kernels {

namespace {

// The elements of `x` less their zero point: the only one, or the one of
// index (i / inner) % extent, the zero point's extent (a column of a
// matrix: inner 1; an output channel of a convolution's weight: inner its
// channels times its kernel).
std::vector<std::int32_t> centered(const Tensor& x, const Tensor* zero_point,
                                   std::int64_t inner) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(x.size()));
  const std::int64_t extent = zero_point ? zero_point->size() : 1;
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const std::int64_t z = zero_point ? read_integer(*zero_point, (i / inner) % extent) : 0;
    v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(read_integer(x, i) - z);
  }
  return v;
}

// The product of a [..., M, K] and b [..., K, N] (centered), batches
// broadcast as MatMul's, into `out_dims`.
std::vector<std::int64_t> integer_matmul(const std::vector<std::int32_t>& a, const Dims& da,
                                         const std::vector<std::int32_t>& b, const Dims& db,
                                         const Dims& out_dims) {
  const std::int64_t m = da[da.size() - 2], k = da.back(), n = db.back();
  const Dims batch(out_dims.begin(), out_dims.end() - 2);
  std::vector<std::int64_t> offs_a, offs_b;
  for_each_index(batch, broadcast_strides(Dims(da.begin(), da.end() - 2), batch),
                 broadcast_strides(Dims(db.begin(), db.end() - 2), batch),
                 [&](std::int64_t, std::int64_t ia, std::int64_t ib) {
                   offs_a.push_back(ia);
                   offs_b.push_back(ib);
                 });
  if (batch.empty()) offs_a = offs_b = {0};
  std::vector<std::int64_t> c(offs_a.size() * static_cast<std::size_t>(m * n), 0);
  const auto rows = static_cast<std::int64_t>(offs_a.size()) * m;
  parallel(rows, 16, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      const std::int64_t bi = r / m, i = r % m;
      const std::int32_t* arow = a.data() + offs_a[bi] * m * k + i * k;
      const std::int32_t* bmat = b.data() + offs_b[bi] * k * n;
      std::int64_t* crow = c.data() + r * n;
      for (std::int64_t p = 0; p < k; ++p) {
        const std::int64_t x = arow[p];
        const std::int32_t* brow = bmat + p * n;
        for (std::int64_t j = 0; j < n; ++j) crow[j] += x * brow[j];
      }
    }
  });
  return c;
}

// The convolution of x [N, C, H, W] by w [M, C / group, kh, kw] (centered:
// the padding adds 0), with Conv's attributes, into [N, M, oh, ow].
std::vector<std::int64_t> integer_conv(const Attributes& attrs, const std::vector<std::int32_t>& x,
                                       const Dims& xd, const std::vector<std::int32_t>& w,
                                       const Dims& wd, const Dims& out_dims) {
  const Ints& st = *attrs.get_ints("strides");
  const Ints& pads = *attrs.get_ints("pads");
  const Ints& dil = *attrs.get_ints("dilations");
  const std::int64_t group = *attrs.get_int("group");
  const std::int64_t c_in = xd[1], h = xd[2], wi = xd[3];
  const std::int64_t m = wd[0], cg = wd[1], kh = wd[2], kw = wd[3];
  const std::int64_t oh = out_dims[2], ow = out_dims[3], mg = m / group;
  std::vector<std::int64_t> y(static_cast<std::size_t>(out_dims[0] * m * oh * ow), 0);
  parallel(out_dims[0] * m, 1, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t task = s; task < e; ++task) {
      const std::int64_t n = task / m, oc = task % m, g = oc / mg;
      std::int64_t* out = y.data() + task * oh * ow;
      for (std::int64_t ci = 0; ci < cg; ++ci) {
        const std::int32_t* plane = x.data() + (n * c_in + g * cg + ci) * h * wi;
        for (std::int64_t ki = 0; ki < kh; ++ki) {
          for (std::int64_t kj = 0; kj < kw; ++kj) {
            const std::int64_t weight = w[static_cast<std::size_t>(((oc * cg + ci) * kh + ki) * kw + kj)];
            if (weight == 0) continue;
            for (std::int64_t oy = 0; oy < oh; ++oy) {
              const std::int64_t iy = oy * st[0] - pads[0] + ki * dil[0];
              if (iy < 0 || iy >= h) continue;
              for (std::int64_t ox = 0; ox < ow; ++ox) {
                const std::int64_t ix = ox * st[1] - pads[1] + kj * dil[1];
                if (ix >= 0 && ix < wi) out[oy * ow + ox] += weight * plane[iy * wi + ix];
              }
            }
          }
        }
      }
    }
  });
  return y;
}

Tensor as_int32(const std::vector<std::int64_t>& sums, const Dims& dims) {
  Tensor out(TensorType{DType::kInt32, dims});
  std::span<std::byte> bytes = out.mutable_data();
  for (std::size_t i = 0; i < sums.size(); ++i) {
    const auto v = static_cast<std::int32_t>(sums[i]);
    std::memcpy(bytes.data() + i * sizeof v, &v, sizeof v);
  }
  return out;
}

// The sums (plus `bias`, int32 per output channel) requantized to y's
// scale and zero point: sum * (a_scale * b_scale[c]) / y_scale, c the
// output column or channel, element i's (i / inner) % extent.
Tensor requantized(const std::vector<std::int64_t>& sums, const Tensor& a_scale,
                   const Tensor& b_scale, const Tensor& y_scale, const Tensor& y_zero_point,
                   const Tensor* bias, std::int64_t inner, std::int64_t extent,
                   const TensorType& type) {
  const std::span<const float> bs = b_scale.floats();
  std::vector<float> multiplier(static_cast<std::size_t>(extent));
  for (std::int64_t c = 0; c < extent; ++c)
    multiplier[c] = a_scale.floats()[0] * bs[bs.size() == 1 ? 0 : c] / y_scale.floats()[0];
  const auto zero = static_cast<float>(read_integer(y_zero_point, 0));
  std::vector<float> rounded(sums.size());
  for (std::size_t i = 0; i < sums.size(); ++i) {
    const std::int64_t c = (static_cast<std::int64_t>(i) / inner) % extent;
    const std::int64_t sum = sums[i] + (bias ? read_integer(*bias, c) : 0);
    rounded[i] = std::nearbyint(static_cast<float>(static_cast<std::int32_t>(sum)) * multiplier[c]) + zero;
  }
  Tensor out(type);
  write_saturated(rounded, type.dtype, out.mutable_data());
  return out;
}

std::vector<Tensor> dynamic_quantize(const Tensor& x, const Dims& dims) {
  float lo = 0, hi = 0;
  for (float v : x.floats()) {
    if (std::isnan(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float zero = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  std::vector<float> rounded;
  rounded.reserve(static_cast<std::size_t>(x.size()));
  for (float v : x.floats()) rounded.push_back(std::nearbyint(v / scale) + zero);
  Tensor y(TensorType{DType::kUInt8, dims});
  write_saturated(rounded, DType::kUInt8, y.mutable_data());
  Tensor zero_point(TensorType{DType::kUInt8, {}});
  write_saturated(std::vector<float>{zero}, DType::kUInt8, zero_point.mutable_data());
  return {std::move(y), Tensor::scalar(scale), std::move(zero_point)};
}

// QLinearAdd and QLinearMul, broadcast.
Tensor quantized_binary(Op op, std::span<const Tensor> in, const TensorType& out) {
  const float sa = in[1].floats()[0], sb = in[4].floats()[0], sc = in[6].floats()[0];
  const std::int64_t za = read_integer(in[2], 0), zb = read_integer(in[5], 0);
  const auto zc = static_cast<float>(read_integer(in[7], 0));
  std::vector<float> rounded(static_cast<std::size_t>(out.num_elements()));
  for_each_index(out.dims, broadcast_strides(in[0].dims(), out.dims),
                 broadcast_strides(in[3].dims(), out.dims),
                 [&](std::int64_t o, std::int64_t ia, std::int64_t ib) {
                   const float a = sa * static_cast<float>(read_integer(in[0], ia) - za);
                   const float b = sb * static_cast<float>(read_integer(in[3], ib) - zb);
                   const float c = op == Op::kQLinearAdd ? a + b : a * b;
                   rounded[static_cast<std::size_t>(o)] = std::nearbyint(c / sc) + zc;
                 });
  Tensor y(out);
  write_saturated(rounded, out.dtype, y.mutable_data());
  return y;
}

}  // namespace

std::vector<Tensor> integer_operator(Op op, const Attributes& a, std::span<const Tensor> in,
                                     const ValueType& type) {
  if (op == Op::kDynamicQuantizeLinear) return dynamic_quantize(in[0], in[0].dims());
  const TensorType& out = type.tensor();
  if (op == Op::kQLinearAdd || op == Op::kQLinearMul) return {quantized_binary(op, in, out)};
  const bool matmul = op == Op::kMatMulInteger || op == Op::kQLinearMatMul;
  const bool requantize = op == Op::kQLinearMatMul || op == Op::kQLinearConv;
  // The operands and their zero points: inputs (0, 2) and (3, 5) of the
  // requantized products, (0, 2) and (1, 3) of the others (either zero
  // point may be absent, the second only with the first).
  const Tensor& x = in[0];
  const Tensor& w = in[requantize ? 3 : 1];
  const Tensor* x_zero = requantize || in.size() >= 3 ? &in[2] : nullptr;
  const Tensor* w_zero = requantize ? &in[5] : in.size() == 4 ? &in[3] : nullptr;
  const Dims& wd = w.dims();
  // A per-axis zero point or scale of w: per column (inner 1) of a
  // matrix, per output channel of a convolution's weight.
  const std::int64_t w_inner = matmul ? 1 : wd[1] * wd[2] * wd[3];
  const std::vector<std::int32_t> cx = centered(x, x_zero, 1);
  const std::vector<std::int32_t> cw = centered(w, w_zero, w_inner);
  const std::vector<std::int64_t> sums = matmul ? integer_matmul(cx, x.dims(), cw, wd, out.dims)
                                                : integer_conv(a, cx, x.dims(), cw, wd, out.dims);
  if (!requantize) return {as_int32(sums, out.dims)};
  // The output's column (matrix products) or channel (convolutions).
  const std::int64_t inner = matmul ? 1 : out.dims[2] * out.dims[3];
  const std::int64_t extent = matmul ? out.dims.back() : out.dims[1];
  const Tensor* bias = op == Op::kQLinearConv && in.size() == 9 ? &in[8] : nullptr;
  return {requantized(sums, in[1], in[4], in[6], in[7], bias, inner, extent, out)};
}

}  // namespace saturn::tensor::kernels

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
// (tests/python/test_qoperator_int8.py measures it). QGemm is QLinearMatMul
// with Gemm's transposes, its int32 c added to the sums and alpha in the
// multiplier ((alpha * a_scale * b_scale) / y_scale, as onnxruntime's
// kernel). QLinearConcat requantizes each operand to y's scale and zero
// point. The quantized unary operators dequantize x, apply the float
// operator and quantize to y, the definition onnxruntime's lookup tables
// are built from; QLinearGlobalAveragePool sums the integers less their
// zero point and scales the sum by x_scale / (y_scale * count), as
// onnxruntime's kernel does. MatMulNBits unpacks b's blocks into float32
// ((q - zero point) * scale) and multiplies as MatMul does, as onnxruntime
// does at accuracy level 0 (float32 throughout; its sums run in another
// order).
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
                   const TensorType& type, float alpha = 1.0f) {
  const std::span<const float> bs = b_scale.floats();
  std::vector<float> multiplier(static_cast<std::size_t>(extent));
  for (std::int64_t c = 0; c < extent; ++c)
    multiplier[c] = alpha * a_scale.floats()[0] * bs[bs.size() == 1 ? 0 : c] / y_scale.floats()[0];
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

// The elements of a per-tensor quantized `q` as floats: scale * (q - zero).
std::vector<float> dequantized(const Tensor& q, const Tensor& scale, const Tensor& zero_point) {
  const float s = scale.floats()[0];
  const std::int64_t z = read_integer(zero_point, 0);
  std::vector<float> x(static_cast<std::size_t>(q.size()));
  for (std::int64_t i = 0; i < q.size(); ++i)
    x[static_cast<std::size_t>(i)] = s * static_cast<float>(read_integer(q, i) - z);
  return x;
}

// `x` quantized per tensor into `type`: x / scale rounded half to even,
// plus the zero point, saturated.
Tensor quantized(std::span<const float> x, const Tensor& scale, const Tensor& zero_point,
                 const TensorType& type) {
  const float s = scale.floats()[0];
  const auto z = static_cast<float>(read_integer(zero_point, 0));
  std::vector<float> rounded(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) rounded[i] = std::nearbyint(x[i] / s) + z;
  Tensor y(type);
  write_saturated(rounded, type.dtype, y.mutable_data());
  return y;
}

// QLinearAdd and QLinearMul, broadcast.
Tensor quantized_binary(Op op, std::span<const Tensor> in, const TensorType& out) {
  const std::vector<float> a = dequantized(in[0], in[1], in[2]);
  const std::vector<float> b = dequantized(in[3], in[4], in[5]);
  std::vector<float> c(static_cast<std::size_t>(out.num_elements()));
  for_each_index(out.dims, broadcast_strides(in[0].dims(), out.dims),
                 broadcast_strides(in[3].dims(), out.dims),
                 [&](std::int64_t o, std::int64_t ia, std::int64_t ib) {
                   const float x = a[static_cast<std::size_t>(ia)], y = b[static_cast<std::size_t>(ib)];
                   c[static_cast<std::size_t>(o)] = op == Op::kQLinearAdd ? x + y : x * y;
                 });
  return quantized(c, in[6], in[7], out);
}

// `v`, a [rows, cols] matrix, transposed.
std::vector<std::int32_t> transposed(const std::vector<std::int32_t>& v, std::int64_t rows,
                                     std::int64_t cols) {
  std::vector<std::int32_t> t(v.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
  }
  return t;
}

// QGemm (IR order: a, a_scale, a_zero_point, b, b_scale, b_zero_point,
// y_scale, y_zero_point, [c]).
Tensor quantized_gemm(const Attributes& attrs, std::span<const Tensor> in, const TensorType& out) {
  const bool ta = *attrs.get_int("transA") != 0, tb = *attrs.get_int("transB") != 0;
  const std::int64_t m = out.dims[0], n = out.dims[1];
  const std::int64_t k = in[0].dims()[ta ? 0 : 1];
  std::vector<std::int32_t> a = centered(in[0], &in[2], 1);
  if (ta) a = transposed(a, k, m);
  // b's zero point may be per column: one per row of a transposed b.
  const std::vector<std::int32_t> b = tb ? transposed(centered(in[3], &in[5], k), n, k)
                                         : centered(in[3], &in[5], 1);
  std::vector<std::int64_t> sums = integer_matmul(a, Dims{m, k}, b, Dims{k, n}, out.dims);
  if (in.size() == 9) {
    for_each_index(out.dims, broadcast_strides(in[8].dims(), out.dims), Ints(2, 0),
                   [&](std::int64_t o, std::int64_t ic, std::int64_t) {
                     sums[static_cast<std::size_t>(o)] += read_integer(in[8], ic);
                   });
  }
  return requantized(sums, in[1], in[4], in[6], in[7], nullptr, 1, n, out,
                     static_cast<float>(*attrs.get_float("alpha")));
}

// QLinearGlobalAveragePool: each channel's integers less x's zero point
// summed, the sum scaled by x_scale / (y_scale * count).
Tensor quantized_average(const Attributes& attrs, std::span<const Tensor> in,
                         const TensorType& out) {
  const Tensor& x = in[0];
  const Dims& d = x.dims();
  const bool channels_last = *attrs.get_int("channels_last") != 0;
  const std::int64_t batch = d[0], channels = channels_last ? d.back() : d[1];
  const std::int64_t count = batch * channels == 0 ? 0 : x.size() / (batch * channels);
  const std::int64_t zero = read_integer(in[2], 0);
  const float scale = in[1].floats()[0] / (in[3].floats()[0] * static_cast<float>(count));
  const auto y_zero = static_cast<float>(read_integer(in[4], 0));
  std::vector<float> rounded(static_cast<std::size_t>(batch * channels));
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t c = 0; c < channels; ++c) {
      std::int64_t sum = 0;
      for (std::int64_t p = 0; p < count; ++p) {
        const std::int64_t at = channels_last ? (b * count + p) * channels + c
                                              : (b * channels + c) * count + p;
        sum += read_integer(x, at) - zero;
      }
      rounded[static_cast<std::size_t>(b * channels + c)] =
          std::nearbyint(static_cast<float>(sum) * scale) + y_zero;
    }
  }
  Tensor y(out);
  write_saturated(rounded, out.dtype, y.mutable_data());
  return y;
}

// QLinearSigmoid, QLinearLeakyRelu and QLinearSoftmax: the float operator
// between a dequantization and a quantization.
Tensor quantized_unary(Op op, const Attributes& attrs, std::span<const Tensor> in,
                       const TensorType& out) {
  if (op == Op::kQLinearGlobalAveragePool) return quantized_average(attrs, in, out);
  const Tensor x(TensorType{DType::kFloat32, in[0].dims()}, dequantized(in[0], in[1], in[2]));
  Tensor y(x.type());
  if (op == Op::kQLinearSigmoid) {
    y = unary(Op::kSigmoid, {}, x);
  } else if (op == Op::kQLinearLeakyRelu) {
    const auto alpha = static_cast<float>(*attrs.get_float("alpha"));
    std::ranges::transform(x.floats(), y.mutable_floats().begin(),
                           [alpha](float v) { return v < 0 ? alpha * v : v; });
  } else {  // QLinearSoftmax: before opset 13, over every axis from `axis` on
    const Dims& d = x.dims();
    const std::int64_t axis = *normalize_axis(*attrs.get_int("axis"), d.size());
    Attributes last;
    if (*attrs.get_int("opset") < 13) {
      std::int64_t outer = 1;
      for (std::int64_t k = 0; k < axis; ++k) outer *= d[k];
      last.set("axis", std::int64_t{1});
      y = softmax(last, x.reshaped(Dims{outer, x.size() / std::max<std::int64_t>(outer, 1)}))
              .reshaped(d);
    } else {
      last.set("axis", axis);
      y = softmax(last, x);
    }
  }
  return quantized(y.floats(), in[3], in[4], out);
}

// QLinearConcat (y_scale, y_zero_point, then x, x_scale, x_zero_point per
// operand): each operand requantized to y, concatenated.
Tensor quantized_concat(const Attributes& attrs, std::span<const Tensor> in,
                        const TensorType& out) {
  std::vector<Tensor> parts;
  for (std::size_t i = 2; i < in.size(); i += 3) {
    const TensorType part{out.dtype, in[i].dims()};
    parts.push_back(quantized(dequantized(in[i], in[i + 1], in[i + 2]), in[0], in[1], part));
  }
  Attributes axis;
  axis.set("axis", *attrs.get_int("axis"));
  return concat(axis, parts);
}

// Element `i` of a row of `bits`-wide values packed from each byte's low
// bits.
std::int64_t unpacked(std::span<const std::byte> row, std::int64_t i, std::int64_t bits) {
  const auto byte = std::to_integer<std::int64_t>(row[static_cast<std::size_t>(i * bits / 8)]);
  return (byte >> (i * bits % 8)) & ((std::int64_t{1} << bits) - 1);
}

// MatMulNBits: a times the transpose of b unpacked.
Tensor matmul_nbits(const Attributes& attrs, std::span<const Tensor> in) {
  const std::int64_t k = *attrs.get_int("K"), n = *attrs.get_int("N");
  const std::int64_t bits = *attrs.get_int("bits"), block = *attrs.get_int("block_size");
  const std::int64_t blocks = (k + block - 1) / block, blob = block * bits / 8;
  const std::int64_t zero_row = (blocks * bits + 7) / 8;
  const std::span<const float> scales = in[2].floats();
  Tensor w(TensorType{DType::kFloat32, {k, n}});
  std::span<float> wv = w.mutable_floats();
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t zero =
          in.size() == 4 ? unpacked(in[3].data().subspan(static_cast<std::size_t>(r * zero_row)), b, bits)
                         : std::int64_t{1} << (bits - 1);
      const float scale = scales[static_cast<std::size_t>(r * blocks + b)];
      const std::span<const std::byte> values =
          in[1].data().subspan(static_cast<std::size_t>((r * blocks + b) * blob));
      for (std::int64_t j = 0; j < block && b * block + j < k; ++j)
        wv[static_cast<std::size_t>((b * block + j) * n + r)] =
            static_cast<float>(unpacked(values, j, bits) - zero) * scale;
    }
  }
  return matmul(in[0], w);
}

}  // namespace

std::vector<Tensor> integer_operator(Op op, const Attributes& a, std::span<const Tensor> in,
                                     const ValueType& type) {
  if (op == Op::kDynamicQuantizeLinear) return dynamic_quantize(in[0], in[0].dims());
  const TensorType& out = type.tensor();
  if (op == Op::kQLinearAdd || op == Op::kQLinearMul) return {quantized_binary(op, in, out)};
  if (op == Op::kQGemm) return {quantized_gemm(a, in, out)};
  if (op == Op::kQLinearConcat) return {quantized_concat(a, in, out)};
  if (is_quantized_unary(op)) return {quantized_unary(op, a, in, out)};
  if (op == Op::kMatMulNBits) return {matmul_nbits(a, in)};
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

// Reference kernels: convolution (im2col and the blocked product) and
// pooling.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels.h"
#include "saturn/tensor/interpreter/kernels_internal.h"

namespace saturn::tensor::kernels {

Tensor conv(const Attributes& attrs, std::span<const Tensor> in) {
  const Ints& st = *attrs.get_ints("strides");
  const Ints& pads = *attrs.get_ints("pads");
  const Ints& dil = *attrs.get_ints("dilations");
  const std::int64_t group = *attrs.get_int("group");
  const Dims& xd = in[0].dims();
  const Dims& wd = in[1].dims();
  const std::int64_t batch = xd[0], c_in = xd[1], h = xd[2], w = xd[3];
  const std::int64_t m = wd[0], cg = wd[1], kh = wd[2], kw = wd[3];
  const std::int64_t oh = window_output(h, kh, st[0], pads[0], pads[2], dil[0]);
  const std::int64_t ow = window_output(w, kw, st[1], pads[1], pads[3], dil[1]);
  const std::int64_t mg = m / group, ckk = cg * kh * kw, spatial = oh * ow;
  Tensor out(TensorType{DType::kFloat32, {batch, m, oh, ow}});
  const float* x = in[0].floats().data();
  const float* wt = in[1].floats().data();
  float* y = out.mutable_floats().data();
  const bool pointwise = kh == 1 && kw == 1 && st[0] == 1 && st[1] == 1 && pads[0] == 0 &&
                         pads[1] == 0 && pads[2] == 0 && pads[3] == 0;
  // Output columns are processed in chunks so the im2col buffer stays small.
  const std::int64_t chunk =
      std::clamp<std::int64_t>((1 << 17) / std::max<std::int64_t>(ckk, 1), 64, 4096);
  const std::int64_t chunks = (spatial + chunk - 1) / chunk;
  parallel(batch * group * chunks, 1, [&](std::int64_t s, std::int64_t e) {
    std::vector<float> col;
    std::vector<float> tmp;
    for (std::int64_t task = s; task < e; ++task) {
      std::int64_t ch = task % chunks, g = (task / chunks) % group, n = task / chunks / group;
      std::int64_t p0 = ch * chunk, len = std::min(chunk, spatial - p0);
      const float* xin = x + (n * c_in + g * cg) * h * w;
      const float* wg = wt + g * mg * ckk;
      float* yout = y + (n * m + g * mg) * spatial;
      tmp.assign(static_cast<std::size_t>(mg * len), 0.0f);
      if (pointwise && chunks == 1) {
        gemm_accumulate(wg, xin, tmp.data(), mg, len, ckk);
      } else {
        col.assign(static_cast<std::size_t>(ckk * len), 0.0f);
        for (std::int64_t r = 0; r < ckk; ++r) {
          std::int64_t ci = r / (kh * kw), ki = (r / kw) % kh, kj = r % kw;
          float* dst = col.data() + r * len;
          for (std::int64_t p = 0; p < len; ++p) {
            std::int64_t oy = (p0 + p) / ow, ox = (p0 + p) % ow;
            std::int64_t iy = oy * st[0] - pads[0] + ki * dil[0];
            std::int64_t ix = ox * st[1] - pads[1] + kj * dil[1];
            if (iy >= 0 && iy < h && ix >= 0 && ix < w) dst[p] = xin[(ci * h + iy) * w + ix];
          }
        }
        gemm_accumulate(wg, col.data(), tmp.data(), mg, len, ckk);
      }
      for (std::int64_t o = 0; o < mg; ++o) {
        std::copy_n(tmp.data() + o * len, len, yout + o * spatial + p0);
      }
    }
  });
  if (in.size() == 3) {
    std::span<const float> bias = in[2].floats();
    for (std::int64_t n = 0; n < batch; ++n) {
      for (std::int64_t o = 0; o < m; ++o) {
        float* row = y + (n * m + o) * spatial;
        for (std::int64_t p = 0; p < spatial; ++p) row[p] += bias[o];
      }
    }
  }
  activate(out, *attrs.get_string("activation"));
  return out;
}

Tensor pool(Op op, const Attributes& attrs, const Tensor& x) {
  if (x.dtype() == DType::kInt8 || x.dtype() == DType::kUInt8) {
    // MaxPool of 8-bit integers: the same maximum over their float values
    // (each exact), written back exactly.
    Tensor as_float(TensorType{DType::kFloat32, x.dims()});
    for (std::int64_t i = 0; i < x.size(); ++i)
      as_float.mutable_floats()[static_cast<std::size_t>(i)] = static_cast<float>(read_integer(x, i));
    const Tensor pooled = pool(op, attrs, as_float);
    Tensor out(TensorType{x.dtype(), pooled.dims()});
    write_saturated(pooled.floats(), x.dtype(), out.mutable_data());
    return out;
  }
  const Ints& k = *attrs.get_ints("kernel_shape");
  const Ints& st = *attrs.get_ints("strides");
  const Ints& pads = *attrs.get_ints("pads");
  const bool include_pad = op == Op::kAveragePool && *attrs.get_int("count_include_pad") != 0;
  const Dims& d = x.dims();
  const std::int64_t h = d[2], w = d[3];
  const std::int64_t oh = window_output(h, k[0], st[0], pads[0], pads[2], 1);
  const std::int64_t ow = window_output(w, k[1], st[1], pads[1], pads[3], 1);
  Tensor out(TensorType{DType::kFloat32, {d[0], d[1], oh, ow}});
  const float* in = x.floats().data();
  float* o = out.mutable_floats().data();
  parallel(d[0] * d[1], 4, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t plane = s; plane < e; ++plane) {
      const float* src = in + plane * h * w;
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          float acc = op == Op::kMaxPool ? -INFINITY : 0.0f;
          std::int64_t count = 0;
          for (std::int64_t i = 0; i < k[0]; ++i) {
            for (std::int64_t j = 0; j < k[1]; ++j) {
              std::int64_t iy = oy * st[0] - pads[0] + i, ix = ox * st[1] - pads[1] + j;
              bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
              if (op == Op::kMaxPool) {
                if (inside) acc = std::max(acc, src[iy * w + ix]);
              } else if (inside || (include_pad && iy < h + pads[2] && ix < w + pads[3])) {
                acc += inside ? src[iy * w + ix] : 0.0f;
                ++count;
              }
            }
          }
          o[(plane * oh + oy) * ow + ox] =
              op == Op::kMaxPool ? acc : acc / static_cast<float>(std::max<std::int64_t>(count, 1));
        }
      }
    }
  });
  return out;
}

Tensor global_average_pool(const Tensor& x) {
  const Dims& d = x.dims();
  Attributes p{{"kernel_shape", Ints{d[2], d[3]}},
               {"strides", Ints{1, 1}},
               {"pads", Ints{0, 0, 0, 0}},
               {"count_include_pad", std::int64_t{0}}};
  return pool(Op::kAveragePool, p, x);
}

}  // namespace saturn::tensor::kernels

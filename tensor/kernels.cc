#include "tensor/kernels.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "fmt/format.h"
#include "oneapi/tbb/parallel_for.h"
#include "tensor/infer.h"

namespace saturn::tensor {

namespace {

using Ints = std::vector<std::int64_t>;

// Runs fn(begin, end) over [0, n) in parallel chunks of at least `grain`.
void parallel(std::int64_t n, std::int64_t grain,
              const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n <= grain) {
    if (n > 0) fn(0, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<std::int64_t>& r) { fn(r.begin(), r.end()); });
}

// Row-major strides of `dims`.
Ints strides_of(const Dims& dims) {
  Ints s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Strides of an operand broadcast to `out` (0 along broadcast axes).
Ints broadcast_strides(const Dims& in, const Dims& out) {
  Ints s(out.size(), 0);
  Ints own = strides_of(in);
  std::size_t shift = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) s[shift + i] = in[i] == 1 ? 0 : own[i];
  return s;
}

// Calls fn(out_index, offset_a, offset_b) for every element of `out`, with
// the offsets of two operands of the given strides.
template <typename Fn>
void for_each_index(const Dims& out, const Ints& sa, const Ints& sb, Fn&& fn) {
  std::int64_t total = 1;
  for (std::int64_t d : out) total *= d;
  if (total == 0) return;
  std::size_t r = out.size();
  Ints idx(r, 0);
  std::int64_t oa = 0, ob = 0;
  for (std::int64_t i = 0; i < total; ++i) {
    fn(i, oa, ob);
    for (std::size_t k = r; k-- > 0;) {
      if (++idx[k] < out[k]) {
        oa += sa[k];
        ob += sb[k];
        break;
      }
      oa -= sa[k] * (out[k] - 1);
      ob -= sb[k] * (out[k] - 1);
      idx[k] = 0;
    }
  }
}

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

// A transposed copy of a row-major [rows x cols] matrix.
std::vector<float> transposed(const float* m, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) t[j * rows + i] = m[i * cols + j];
  }
  return t;
}

// C += A * B with rows of C computed in parallel.
void gemm_parallel(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n,
                   std::int64_t k) {
  std::int64_t grain = std::max<std::int64_t>(1, (1 << 16) / std::max<std::int64_t>(1, n * k / 64));
  parallel(m, std::min<std::int64_t>(grain, 64), [&](std::int64_t s, std::int64_t e) {
    gemm_accumulate(a + s * k, b, c + s * n, e - s, n, k);
  });
}

Tensor matmul(const Tensor& x, const Tensor& y) {
  const Dims& da = x.dims();
  const Dims& db = y.dims();
  std::int64_t m = da[da.size() - 2], k = da.back(), n = db.back();
  Dims batch_a(da.begin(), da.end() - 2), batch_b(db.begin(), db.end() - 2);
  Dims batch = *broadcast_dims(batch_a, batch_b);
  Dims out_dims = batch;
  out_dims.push_back(m);
  out_dims.push_back(n);
  Tensor out(TensorType{DType::kFloat32, out_dims});
  const float* a = x.floats().data();
  const float* b = y.floats().data();
  float* c = out.mutable_floats().data();
  std::vector<std::int64_t> offs_a, offs_b;
  for_each_index(batch, broadcast_strides(batch_a, batch), broadcast_strides(batch_b, batch),
                 [&](std::int64_t, std::int64_t ia, std::int64_t ib) {
                   offs_a.push_back(ia);
                   offs_b.push_back(ib);
                 });
  if (batch.empty()) {
    offs_a = {0};
    offs_b = {0};
  }
  std::int64_t nb = static_cast<std::int64_t>(offs_a.size());
  if (nb == 1) {
    gemm_parallel(a, b, c, m, n, k);
    return out;
  }
  parallel(nb, 1, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t i = s; i < e; ++i) {
      gemm_accumulate(a + offs_a[i] * m * k, b + offs_b[i] * k * n, c + i * m * n, m, n, k);
    }
  });
  return out;
}

Tensor gemm(const Attributes& attrs, std::span<const Tensor> in) {
  bool ta = *attrs.get_int("transA") != 0, tb = *attrs.get_int("transB") != 0;
  float alpha = static_cast<float>(*attrs.get_float("alpha"));
  float beta = static_cast<float>(*attrs.get_float("beta"));
  const Dims& da = in[0].dims();
  const Dims& db = in[1].dims();
  std::int64_t m = da[ta ? 1 : 0], k = da[ta ? 0 : 1], n = db[tb ? 0 : 1];
  std::vector<float> at, bt;
  const float* a = in[0].floats().data();
  const float* b = in[1].floats().data();
  if (ta) a = (at = transposed(a, k, m)).data();
  if (tb) b = (bt = transposed(b, n, k)).data();
  Tensor out(TensorType{DType::kFloat32, {m, n}});
  std::span<float> c = out.mutable_floats();
  gemm_parallel(a, b, c.data(), m, n, k);
  Ints strides = in.size() == 3 ? broadcast_strides(in[2].dims(), Dims{m, n}) : Ints{0, 0};
  std::span<const float> bias = in.size() == 3 ? in[2].floats() : std::span<const float>();
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      float add = bias.empty() ? 0.0f : beta * bias[i * strides[0] + j * strides[1]];
      c[i * n + j] = alpha * c[i * n + j] + add;
    }
  }
  return out;
}

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

// Splits dims around `axis` into outer x axis x inner extents.
struct AxisView {
  std::int64_t outer = 1, extent = 1, inner = 1;
};
AxisView view_around(const Dims& dims, std::int64_t axis) {
  AxisView v;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(dims.size()); ++i) {
    (i < axis ? v.outer : i == axis ? v.extent : v.inner) *= dims[i];
  }
  return v;
}

Tensor softmax(const Attributes& attrs, const Tensor& x) {
  std::int64_t axis = *normalize_axis(*attrs.get_int("axis"), x.dims().size());
  AxisView v = view_around(x.dims(), axis);
  Tensor out(x.type());
  const float* in = x.floats().data();
  float* o = out.mutable_floats().data();
  parallel(v.outer * v.inner, 256, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      std::int64_t base = (r / v.inner) * v.extent * v.inner + r % v.inner;
      float mx = -INFINITY;
      for (std::int64_t i = 0; i < v.extent; ++i) mx = std::max(mx, in[base + i * v.inner]);
      double sum = 0;
      for (std::int64_t i = 0; i < v.extent; ++i) {
        float ex = std::exp(in[base + i * v.inner] - mx);
        o[base + i * v.inner] = ex;
        sum += ex;
      }
      for (std::int64_t i = 0; i < v.extent; ++i)
        o[base + i * v.inner] = static_cast<float>(o[base + i * v.inner] / sum);
    }
  });
  return out;
}

Tensor layer_norm(const Attributes& attrs, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  std::int64_t axis = *normalize_axis(*attrs.get_int("axis"), x.dims().size());
  double eps = *attrs.get_float("epsilon");
  std::int64_t width = 1;
  for (std::size_t i = axis; i < x.dims().size(); ++i) width *= x.dims()[i];
  std::int64_t rows = x.size() / std::max<std::int64_t>(width, 1);
  Tensor out(x.type());
  const float* src = x.floats().data();
  const float* scale = in[1].floats().data();
  const float* bias = in[2].floats().data();
  float* o = out.mutable_floats().data();
  parallel(rows, 16, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      const float* row = src + r * width;
      double mean = 0, var = 0;
      for (std::int64_t i = 0; i < width; ++i) mean += row[i];
      mean /= static_cast<double>(width);
      for (std::int64_t i = 0; i < width; ++i) var += (row[i] - mean) * (row[i] - mean);
      var /= static_cast<double>(width);
      double inv = 1.0 / std::sqrt(var + eps);
      for (std::int64_t i = 0; i < width; ++i) {
        o[r * width + i] = static_cast<float>((row[i] - mean) * inv * scale[i] + bias[i]);
      }
    }
  });
  return out;
}

Tensor batch_norm(const Attributes& attrs, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  AxisView v = view_around(x.dims(), 1);
  double eps = *attrs.get_float("epsilon");
  Tensor out(x.type());
  const float* src = x.floats().data();
  float* o = out.mutable_floats().data();
  for (std::int64_t c = 0; c < v.extent; ++c) {
    float scale = in[1].floats()[c] / static_cast<float>(std::sqrt(in[4].floats()[c] + eps));
    float shift = in[2].floats()[c] - in[3].floats()[c] * scale;
    for (std::int64_t n = 0; n < v.outer; ++n) {
      std::int64_t base = (n * v.extent + c) * v.inner;
      for (std::int64_t i = 0; i < v.inner; ++i) o[base + i] = src[base + i] * scale + shift;
    }
  }
  return out;
}

// Copies the elements of `x` laid out as `out_dims` with source strides
// `src_strides` starting at `offset` (transpose, slice, broadcasts).
Tensor gather_strided(const Tensor& x, const Dims& out_dims, const Ints& src_strides,
                      std::int64_t offset) {
  Tensor out(TensorType{x.dtype(), out_dims});
  Ints zero(out_dims.size(), 0);
  if (x.dtype() == DType::kFloat32) {
    const float* in = x.floats().data() + offset;
    float* o = out.mutable_floats().data();
    for_each_index(out_dims, src_strides, zero,
                   [&](std::int64_t i, std::int64_t ia, std::int64_t) { o[i] = in[ia]; });
  } else {
    const std::int64_t* in = x.ints().data() + offset;
    std::int64_t* o = out.mutable_ints().data();
    for_each_index(out_dims, src_strides, zero,
                   [&](std::int64_t i, std::int64_t ia, std::int64_t) { o[i] = in[ia]; });
  }
  return out;
}

Tensor transpose(const Attributes& attrs, const Tensor& x) {
  Ints perm = *attrs.get_ints("perm");
  std::size_t r = x.dims().size();
  if (perm.empty()) {
    for (std::size_t i = 0; i < r; ++i) perm.push_back(static_cast<std::int64_t>(r - 1 - i));
  }
  Ints src = strides_of(x.dims());
  Dims out_dims(r);
  Ints strides(r);
  for (std::size_t i = 0; i < r; ++i) {
    out_dims[i] = x.dims()[perm[i]];
    strides[i] = src[perm[i]];
  }
  return gather_strided(x, out_dims, strides, 0);
}

Tensor slice(const Attributes& attrs, const Tensor& x) {
  const Ints& starts = *attrs.get_ints("starts");
  const Ints& ends = *attrs.get_ints("ends");
  Ints axes = *attrs.get_ints("axes");
  Ints steps = *attrs.get_ints("steps");
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  Ints src = strides_of(x.dims());
  Dims out_dims = x.dims();
  Ints strides = src;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    std::int64_t ax = *normalize_axis(axes[i], out_dims.size());
    SliceRange range = slice_range(x.dims()[ax], starts[i], ends[i], steps[i]);
    out_dims[ax] = range.count;
    strides[ax] = src[ax] * range.step;
    if (range.count > 0) offset += range.start * src[ax];
  }
  return gather_strided(x, out_dims, strides, offset);
}

// Concatenation and its inverse work on [outer, extent, inner] views.
template <typename T>
void copy_block(std::span<const T> from, std::span<T> to, const AxisView& src, const AxisView& dst,
                std::int64_t at) {
  for (std::int64_t o = 0; o < src.outer; ++o) {
    std::copy_n(from.data() + o * src.extent * src.inner, src.extent * src.inner,
                to.data() + (o * dst.extent + at) * dst.inner);
  }
}

Tensor concat(const Attributes& attrs, std::span<const Tensor> in) {
  std::int64_t axis = *normalize_axis(*attrs.get_int("axis"), in[0].dims().size());
  Dims out_dims = in[0].dims();
  for (std::size_t i = 1; i < in.size(); ++i) out_dims[axis] += in[i].dims()[axis];
  Tensor out(TensorType{in[0].dtype(), out_dims});
  AxisView dst = view_around(out_dims, axis);
  std::int64_t at = 0;
  for (const Tensor& t : in) {
    AxisView src = view_around(t.dims(), axis);
    if (t.dtype() == DType::kFloat32)
      copy_block(t.floats(), out.mutable_floats(), src, dst, at);
    else
      copy_block(t.ints(), out.mutable_ints(), src, dst, at);
    at += src.extent;
  }
  return out;
}

std::vector<Tensor> split(const Attributes& attrs, const Tensor& x) {
  std::int64_t axis = *normalize_axis(*attrs.get_int("axis"), x.dims().size());
  std::vector<Tensor> parts;
  std::int64_t at = 0;
  for (std::int64_t size : *attrs.get_ints("split")) {
    Attributes s{
        {"starts", Ints{at}}, {"ends", Ints{at + size}}, {"axes", Ints{axis}}, {"steps", Ints{1}}};
    parts.push_back(slice(s, x));
    at += size;
  }
  return parts;
}

absl::StatusOr<Tensor> gather(const Attributes& attrs, const Tensor& data, const Tensor& indices) {
  std::int64_t axis = *normalize_axis(*attrs.get_int("axis"), data.dims().size());
  AxisView v = view_around(data.dims(), axis);
  Dims out_dims(data.dims().begin(), data.dims().begin() + axis);
  out_dims.insert(out_dims.end(), indices.dims().begin(), indices.dims().end());
  out_dims.insert(out_dims.end(), data.dims().begin() + axis + 1, data.dims().end());
  Tensor out(TensorType{data.dtype(), out_dims});
  std::span<const std::int64_t> idx = indices.ints();
  std::int64_t count = static_cast<std::int64_t>(idx.size());
  for (std::int64_t q = 0; q < count; ++q) {
    std::int64_t i = idx[q] < 0 ? idx[q] + v.extent : idx[q];
    if (i < 0 || i >= v.extent) {
      return absl::OutOfRangeError(
          fmt::format("Gather: index {} out of range [0, {})", idx[q], v.extent));
    }
    for (std::int64_t o = 0; o < v.outer; ++o) {
      std::int64_t from = (o * v.extent + i) * v.inner, to = (o * count + q) * v.inner;
      if (data.dtype() == DType::kFloat32)
        std::copy_n(data.floats().data() + from, v.inner, out.mutable_floats().data() + to);
      else
        std::copy_n(data.ints().data() + from, v.inner, out.mutable_ints().data() + to);
    }
  }
  return out;
}

// Places `x` inside a larger zero tensor (value `fill`) at offset `begin`.
Tensor embed(const Tensor& x, const Dims& out_dims, const Ints& begin, float fill) {
  Tensor out(TensorType{x.dtype(), out_dims});
  Ints dst = strides_of(out_dims);
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < begin.size(); ++i) offset += begin[i] * dst[i];
  Ints zero(x.dims().size(), 0);
  if (x.dtype() == DType::kFloat32) {
    std::span<float> o = out.mutable_floats();
    std::fill(o.begin(), o.end(), fill);
    const float* in = x.floats().data();
    for_each_index(x.dims(), dst, zero,
                   [&](std::int64_t i, std::int64_t at, std::int64_t) { o[offset + at] = in[i]; });
  } else {
    std::span<std::int64_t> o = out.mutable_ints();
    std::fill(o.begin(), o.end(), static_cast<std::int64_t>(fill));
    const std::int64_t* in = x.ints().data();
    for_each_index(x.dims(), dst, zero,
                   [&](std::int64_t i, std::int64_t at, std::int64_t) { o[offset + at] = in[i]; });
  }
  return out;
}

Tensor pad(const Attributes& attrs, const Tensor& x) {
  const Ints& pads = *attrs.get_ints("pads");
  std::size_t r = x.dims().size();
  Dims out_dims = x.dims();
  Ints begin(pads.begin(), pads.begin() + r);
  for (std::size_t i = 0; i < r; ++i) out_dims[i] += pads[i] + pads[r + i];
  return embed(x, out_dims, begin, static_cast<float>(*attrs.get_float("value")));
}

Tensor enlarge(const Attributes& attrs, const Tensor& w) {
  const Ints& k = *attrs.get_ints("kernel_shape");
  Dims out_dims = w.dims();
  Ints begin{0, 0, (k[0] - out_dims[2]) / 2, (k[1] - out_dims[3]) / 2};
  out_dims[2] = k[0];
  out_dims[3] = k[1];
  return embed(w, out_dims, begin, 0.0f);
}

Tensor merge_groups(const Attributes& attrs, const Tensor& w) {
  const std::int64_t group = *attrs.get_int("group"), count = *attrs.get_int("count");
  const Dims& d = w.dims();
  const std::int64_t m = d[0], cg = d[1], kk = d[2] * d[3], per_group = m / group;
  Tensor out(TensorType{DType::kFloat32, {m, cg * count, d[2], d[3]}});
  const float* in = w.floats().data();
  float* o = out.mutable_floats().data();
  for (std::int64_t oc = 0; oc < m; ++oc) {
    std::int64_t slot = (oc / per_group) % count;
    std::copy_n(in + oc * cg * kk, cg * kk, o + (oc * cg * count + slot * cg) * kk);
  }
  return out;
}

Tensor reduce_mean(const Attributes& attrs, const Tensor& x) {
  const Ints& axes = *attrs.get_ints("axes");
  std::size_t r = x.dims().size();
  std::vector<bool> reduced(r, axes.empty());
  for (std::int64_t a : axes) reduced[*normalize_axis(a, r)] = true;
  Dims kept = x.dims();
  std::int64_t n = 1;
  for (std::size_t i = 0; i < r; ++i) {
    if (reduced[i]) {
      n *= kept[i];
      kept[i] = 1;
    }
  }
  Ints out_strides = broadcast_strides(kept, x.dims());
  Tensor acc(TensorType{DType::kFloat32, kept});
  std::vector<double> sums(static_cast<std::size_t>(acc.size()), 0.0);
  const float* in = x.floats().data();
  for_each_index(x.dims(), out_strides, Ints(r, 0),
                 [&](std::int64_t i, std::int64_t o, std::int64_t) { sums[o] += in[i]; });
  std::span<float> a = acc.mutable_floats();
  for (std::size_t i = 0; i < sums.size(); ++i)
    a[i] = static_cast<float>(sums[i] / static_cast<double>(n));
  if (*attrs.get_int("keepdims") != 0) return acc;
  Dims squeezed;
  for (std::size_t i = 0; i < r; ++i) {
    if (!reduced[i]) squeezed.push_back(kept[i]);
  }
  return acc.reshaped(squeezed);
}

}  // namespace

void gemm_accumulate(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n,
                     std::int64_t k) {
  // Blocks of B stay in cache while every row of A streams past them.
  constexpr std::int64_t kBlockN = 512, kBlockK = 128;
  for (std::int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    const std::int64_t jn = std::min(kBlockN, n - j0);
    for (std::int64_t k0 = 0; k0 < k; k0 += kBlockK) {
      const std::int64_t kn = std::min(kBlockK, k - k0);
      for (std::int64_t i = 0; i < m; ++i) {
        float* __restrict crow = c + i * n + j0;
        const float* arow = a + i * k + k0;
        for (std::int64_t p = 0; p < kn; ++p) {
          const float av = arow[p];
          const float* __restrict brow = b + (k0 + p) * n + j0;
          for (std::int64_t j = 0; j < jn; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
}

absl::StatusOr<std::vector<Tensor>> evaluate_op(Op op, const Attributes& a,
                                                std::span<const Tensor> in) {
  auto one = [](Tensor t) { return std::vector<Tensor>{std::move(t)}; };
  if (is_unary_elementwise(op)) return one(unary(op, a, in[0]));
  if (is_binary_elementwise(op)) return one(binary(op, in[0], in[1]));
  switch (op) {
    case Op::kConstant: {
      TensorType t{DType::kFloat32, *a.get_ints("shape")};
      Tensor out(t);
      std::span<float> v = out.mutable_floats();
      std::fill(v.begin(), v.end(), static_cast<float>(*a.get_float("value")));
      return one(std::move(out));
    }
    case Op::kMatMul:
      return one(matmul(in[0], in[1]));
    case Op::kGemm:
      return one(gemm(a, in));
    case Op::kConv:
      return one(conv(a, in));
    case Op::kSoftmax:
      return one(softmax(a, in[0]));
    case Op::kLayerNorm:
      return one(layer_norm(a, in));
    case Op::kBatchNorm:
      return one(batch_norm(a, in));
    case Op::kReduceMean:
      return one(reduce_mean(a, in[0]));
    case Op::kTranspose:
      return one(transpose(a, in[0]));
    case Op::kReshape:
    case Op::kFlatten: {
      absl::StatusOr<ValueType> t =
          infer_type(op, a, std::vector<ValueType>{ValueType::of(in[0].type())});
      if (!t.ok()) return t.status();
      return one(in[0].reshaped(t->tensor().dims));
    }
    case Op::kConcat:
      return one(concat(a, in));
    case Op::kSplit:
      return split(a, in[0]);
    case Op::kSlice:
      return one(slice(a, in[0]));
    case Op::kGather: {
      absl::StatusOr<Tensor> t = gather(a, in[0], in[1]);
      if (!t.ok()) return t.status();
      return one(std::move(*t));
    }
    case Op::kPad:
      return one(pad(a, in[0]));
    case Op::kMaxPool:
    case Op::kAveragePool:
      return one(pool(op, a, in[0]));
    case Op::kGlobalAveragePool: {
      const Dims& d = in[0].dims();
      Attributes p{{"kernel_shape", Ints{d[2], d[3]}},
                   {"strides", Ints{1, 1}},
                   {"pads", Ints{0, 0, 0, 0}},
                   {"count_include_pad", std::int64_t{0}}};
      return one(pool(Op::kAveragePool, p, in[0]));
    }
    case Op::kIdentity:
    case Op::kDropout:
      return one(in[0]);
    case Op::kEnlarge:
      return one(enlarge(a, in[0]));
    case Op::kMergeGroups:
      return one(merge_groups(a, in[0]));
    case Op::kOpaque: {
      const std::string* type = a.get_string("op_type");
      return absl::UnimplementedError(
          fmt::format("cannot evaluate opaque operator '{}'", type ? *type : "?"));
    }
    default:
      return absl::InvalidArgumentError(
          fmt::format("{} is not evaluated by a kernel", op_name(op)));
  }
}

}  // namespace saturn::tensor

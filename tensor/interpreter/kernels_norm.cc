// Reference kernels: the normalizations (Softmax, LayerNorm, InstanceNorm,
// BatchNorm) and the reductions (ReduceMean, ReduceSum, ...).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels_internal.h"

namespace saturn::tensor::kernels {

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

Tensor instance_norm(const Attributes& attrs, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const AxisView v = view_around(x.dims(), 1);  // samples, channels, spatial extent
  const double eps = *attrs.get_float("epsilon");
  Tensor out(x.type());
  const float* src = x.floats().data();
  const float* scale = in[1].floats().data();
  const float* bias = in[2].floats().data();
  float* o = out.mutable_floats().data();
  parallel(v.outer * v.extent, 4, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      const std::int64_t c = r % v.extent;
      const float* plane = src + r * v.inner;
      double mean = 0, var = 0;
      for (std::int64_t i = 0; i < v.inner; ++i) mean += plane[i];
      mean /= static_cast<double>(v.inner);
      for (std::int64_t i = 0; i < v.inner; ++i) var += (plane[i] - mean) * (plane[i] - mean);
      var /= static_cast<double>(v.inner);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (std::int64_t i = 0; i < v.inner; ++i)
        o[r * v.inner + i] = static_cast<float>((plane[i] - mean) * inv * scale[c] + bias[c]);
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

Tensor reduce(Op op, const Attributes& attrs, const Tensor& x) {
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
  const Ints out_strides = broadcast_strides(kept, x.dims());
  auto squeezed = [&](Tensor result) {
    if (*attrs.get_int("keepdims") != 0) return result;
    Dims dims;
    for (std::size_t i = 0; i < r; ++i) {
      if (!reduced[i]) dims.push_back(kept[i]);
    }
    return result.reshaped(dims);
  };
  if (is_integer(x.dtype())) return squeezed(reduce_integers(op, x, kept, out_strides));
  Tensor result(TensorType{DType::kFloat32, kept});
  const auto count = static_cast<std::size_t>(result.size());
  const float* in = x.floats().data();
  // Each output's elements, visited in order: fold(acc, x).
  auto over = [&](double start, auto fold) {
    std::vector<double> acc(count, start);
    for_each_index(x.dims(), out_strides, Ints(r, 0),
                   [&](std::int64_t i, std::int64_t o, std::int64_t) {
                     acc[o] = fold(acc[o], static_cast<double>(in[i]));
                   });
    return acc;
  };
  auto sum = [](double a, double v) { return a + v; };
  // Max and Min propagate a NaN, as onnxruntime's kernels do.
  auto max = [](double a, double v) { return std::isnan(a) || v > a || std::isnan(v) ? v : a; };
  auto min = [](double a, double v) { return std::isnan(a) || v < a || std::isnan(v) ? v : a; };
  std::vector<double> acc;
  switch (op) {
    case Op::kReduceMean:
      acc = over(0.0, sum);
      for (double& a : acc) a /= static_cast<double>(n);
      break;
    case Op::kReduceSum:
      acc = over(0.0, sum);
      break;
    case Op::kReduceMax:  // an empty reduction: the lowest value
      acc = over(-INFINITY, max);
      break;
    case Op::kReduceMin:
      acc = over(INFINITY, min);
      break;
    case Op::kReduceProd:
      acc = over(1.0, [](double a, double v) { return a * v; });
      break;
    case Op::kReduceL1:
      acc = over(0.0, [](double a, double v) { return a + std::abs(v); });
      break;
    case Op::kReduceL2:
      acc = over(0.0, [](double a, double v) { return a + v * v; });
      for (double& a : acc) a = std::sqrt(a);
      break;
    case Op::kReduceSumSquare:
      acc = over(0.0, [](double a, double v) { return a + v * v; });
      break;
    case Op::kReduceLogSum:
      acc = over(0.0, sum);
      for (double& a : acc) a = std::log(a);
      break;
    case Op::kReduceLogSumExp: {
      // log(sum(exp(x - m))) + m, m the largest: no overflow.
      const std::vector<double> top = over(-INFINITY, max);
      std::vector<double> total(count, 0.0);
      for_each_index(x.dims(), out_strides, Ints(r, 0),
                     [&](std::int64_t i, std::int64_t o, std::int64_t) {
                       total[o] += std::exp(static_cast<double>(in[i]) - top[o]);
                     });
      acc.resize(count);
      for (std::size_t o = 0; o < count; ++o)
        acc[o] = std::isinf(top[o]) ? top[o] : std::log(total[o]) + top[o];
      break;
    }
    default:
      assert(false && "not a reduction");
  }
  std::span<float> out = result.mutable_floats();
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(acc[i]);
  return squeezed(std::move(result));
}

}  // namespace saturn::tensor::kernels

// Reference kernels of onnxruntime's fused operators: SimplifiedLayerNormalization
// (RMSNorm), SkipLayerNormalization and SkipSimplifiedLayerNormalization,
// RotaryEmbedding and
// GroupQueryAttention (causal, without a cache), written from
// their definitions in onnxruntime's contrib operator documentation.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels_internal.h"

namespace saturn::tensor::kernels {

namespace {

// y = x / sqrt(mean(x^2) + eps) * scale over rows of `width` values.
void rms_rows(const float* x, const float* scale, float* y, std::int64_t rows, std::int64_t width,
              double eps) {
  parallel(rows, 16, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      const float* row = x + r * width;
      double squares = 0;
      for (std::int64_t i = 0; i < width; ++i) squares += static_cast<double>(row[i]) * row[i];
      const double inv = 1.0 / std::sqrt(squares / static_cast<double>(width) + eps);
      for (std::int64_t i = 0; i < width; ++i)
        y[r * width + i] = static_cast<float>(row[i] * inv * scale[i]);
    }
  });
}

}  // namespace

Tensor simplified_layer_norm(const Attributes& attrs, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const std::int64_t axis = *normalize_axis(*attrs.get_int("axis"), x.dims().size());
  std::int64_t width = 1;
  for (std::size_t i = static_cast<std::size_t>(axis); i < x.dims().size(); ++i)
    width *= x.dims()[i];
  Tensor out(x.type());
  rms_rows(x.floats().data(), in[1].floats().data(), out.mutable_floats().data(),
           x.size() / std::max<std::int64_t>(width, 1), width, *attrs.get_float("epsilon"));
  return out;
}

std::vector<Tensor> skip_layer_norm(const Attributes& attrs, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  Tensor sum(x.type());
  std::span<float> s = sum.mutable_floats();
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = x.floats()[i] + in[1].floats()[i];
  if (in.size() == 4) {
    const Attributes last_axis{{"axis", std::int64_t{-1}}, {"epsilon", *attrs.get_float("epsilon")}};
    Tensor out = layer_norm(last_axis, std::vector<Tensor>{sum, in[2], in[3]});
    return {std::move(out), std::move(sum)};
  }
  const std::int64_t width = x.dims().back();
  Tensor out(x.type());
  rms_rows(s.data(), in[2].floats().data(), out.mutable_floats().data(),
           x.size() / std::max<std::int64_t>(width, 1), width, *attrs.get_float("epsilon"));
  return {std::move(out), std::move(sum)};
}

// Half-split layout (interleaved = 0): the head's first and second halves
// (a, b) become (a cos - b sin, b cos + a sin). Interleaved: the pairs
// (x[2i], x[2i+1]) rotate the same way.
Tensor rotary_embedding(const Attributes& attrs, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const Dims& d = x.dims();
  const std::int64_t rows = d[0] * d[1], seq = d[2], head = d[3], half = head / 2;
  const bool interleaved = *attrs.get_int("interleaved") != 0;
  const float* src = x.floats().data();
  const float* cos = in[1].floats().data();
  const float* sin = in[2].floats().data();
  Tensor out(x.type());
  float* o = out.mutable_floats().data();
  parallel(rows * seq, 64, [&](std::int64_t s, std::int64_t e) {
    for (std::int64_t r = s; r < e; ++r) {
      const std::int64_t pos = r % seq;
      const float* v = src + r * head;
      float* w = o + r * head;
      for (std::int64_t i = 0; i < half; ++i) {
        const float c = cos[pos * half + i], sn = sin[pos * half + i];
        const std::int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
        w[a] = v[a] * c - v[b] * sn;
        w[b] = v[b] * c + v[a] * sn;
      }
    }
  });
  return out;
}

// Each query position i attends to key positions 0..i.
Tensor group_query_attention(const Attributes& attrs, std::span<const Tensor> in) {
  const Dims& d = in[0].dims();
  const std::int64_t batch = d[0], seq = d[1], heads = *attrs.get_int("num_heads");
  const std::int64_t kv_heads = *attrs.get_int("kv_num_heads"), head = d[2] / heads;
  const std::int64_t group = heads / kv_heads, kv_width = kv_heads * head;
  const double given = *attrs.get_float("scale");
  const double scale = given != 0 ? given : 1.0 / std::sqrt(static_cast<double>(head));
  const float* q = in[0].floats().data();
  const float* k = in[1].floats().data();
  const float* v = in[2].floats().data();
  Tensor out(in[0].type());
  float* o = out.mutable_floats().data();
  parallel(batch * heads * seq, 16, [&](std::int64_t s, std::int64_t e) {
    std::vector<double> p(static_cast<std::size_t>(seq));
    for (std::int64_t r = s; r < e; ++r) {
      const std::int64_t b = r / (heads * seq), h = r / seq % heads, i = r % seq;
      const float* qi = q + (b * seq + i) * d[2] + h * head;
      const std::int64_t kv_offset = (h / group) * head;
      double top = -INFINITY;
      for (std::int64_t j = 0; j <= i; ++j) {
        const float* kj = k + (b * seq + j) * kv_width + kv_offset;
        double dot = 0;
        for (std::int64_t c = 0; c < head; ++c) dot += static_cast<double>(qi[c]) * kj[c];
        p[j] = dot * scale;
        top = std::max(top, p[j]);
      }
      double sum = 0;
      for (std::int64_t j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - top));
      float* oi = o + (b * seq + i) * d[2] + h * head;
      for (std::int64_t c = 0; c < head; ++c) {
        double acc = 0;
        for (std::int64_t j = 0; j <= i; ++j) acc += p[j] * v[(b * seq + j) * kv_width + kv_offset + c];
        oi[c] = static_cast<float>(acc / sum);
      }
    }
  });
  return out;
}

}  // namespace saturn::tensor::kernels

// Reference kernels: QuantizeLinear and DequantizeLinear as ONNX defines
// them, bit for bit: y = saturate(round_half_to_even(x / scale) + zero
// point), the division in float32; x = (q - zero point) * scale, the
// difference in integers.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels_internal.h"

namespace saturn::tensor::kernels {

namespace {

// Saturated to [lo, hi] (by default T's range), stored as T.
template <typename T, auto kLow = std::numeric_limits<T>::min(),
          auto kHigh = std::numeric_limits<T>::max()>
void fill_saturated(std::span<const float> values, std::span<std::byte> out) {
  constexpr auto lo = static_cast<float>(kLow);
  constexpr auto hi = static_cast<float>(kHigh);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    const T x = std::isnan(v) ? T{0} : static_cast<T>(v < lo ? lo : v > hi ? hi : v);
    std::memcpy(out.data() + i * sizeof(T), &x, sizeof(T));
  }
}

// Which scale (and zero point) element `i` of x [outer, extent, inner]
// reads: the only one, the one of its index along the axis, or the one of
// its block along the axis (the scale [outer, blocks, inner]).
struct ScaleIndex {
  std::int64_t extent = 1, inner = 1, block = 0;
  bool per_axis = false;
  std::int64_t operator()(std::int64_t i) const {
    if (!per_axis) return 0;
    const std::int64_t along = (i / inner) % extent;
    if (block == 0) return along;
    const std::int64_t outer = i / inner / extent, blocks = (extent + block - 1) / block;
    return (outer * blocks + along / block) * inner + i % inner;
  }
};

ScaleIndex scale_index(const Attributes& a, const Tensor& x, const Tensor& scale) {
  ScaleIndex s;
  s.block = *a.get_int("block_size");
  if (scale.size() == 1 && s.block == 0) return s;
  const std::int64_t axis = *normalize_axis(*a.get_int("axis"), x.dims().size());
  s.per_axis = true;
  s.extent = x.dims()[axis];
  for (std::size_t d = axis + 1; d < x.dims().size(); ++d) s.inner *= x.dims()[d];
  return s;
}

}  // namespace

void write_saturated(std::span<const float> values, DType dtype, std::span<std::byte> out) {
  switch (dtype) {
    case DType::kInt8: fill_saturated<std::int8_t>(values, out); break;
    case DType::kUInt8: fill_saturated<std::uint8_t>(values, out); break;
    case DType::kInt16: fill_saturated<std::int16_t>(values, out); break;
    case DType::kUInt16: fill_saturated<std::uint16_t>(values, out); break;
    case DType::kInt4: fill_saturated<std::int8_t, -8, 7>(values, out); break;
    case DType::kUInt4: fill_saturated<std::uint8_t, 0, 15>(values, out); break;
    default: break;  // inference admits no other
  }
}

Tensor quantization(Op op, const Attributes& a, std::span<const Tensor> in,
                    const TensorType& out_type) {
  const Tensor& x = in[0];
  const std::span<const float> scale = in[1].floats();
  const ScaleIndex at = scale_index(a, x, in[1]);
  auto zero_point = [&](std::int64_t k) { return in.size() == 3 ? read_integer(in[2], k) : 0; };
  Tensor out(out_type);
  if (op == Op::kDequantizeLinear) {
    std::span<float> y = out.mutable_floats();
    for (std::int64_t i = 0; i < x.size(); ++i) {
      const std::int64_t k = at(i);
      y[i] = static_cast<float>(read_integer(x, i) - zero_point(k)) * scale[k];
    }
    return out;
  }
  // Rounded to the nearest integer, ties to even (the default rounding
  // mode), plus the zero point, in float: every int16 sum is exact there.
  // NaN, whose integer ONNX leaves undefined, quantizes as 0 does (to the
  // zero point), so that a zero point moved by 128 moves it too, as it
  // moves every other value (quantization.rules).
  const std::span<const float> v = x.floats();
  std::vector<float> rounded(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::int64_t k = at(static_cast<std::int64_t>(i));
    const float quotient = v[i] / scale[k];
    rounded[i] = (std::isnan(quotient) ? 0.0f : std::nearbyint(quotient)) +
                 static_cast<float>(zero_point(k));
  }
  write_saturated(rounded, out_type.dtype, out.mutable_data());
  return out;
}

}  // namespace saturn::tensor::kernels

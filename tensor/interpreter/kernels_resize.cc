// The reference kernel of Resize, as ONNX defines it (opsets 11-19, without
// tf_crop_and_resize and antialias): each output coordinate is mapped to a
// coordinate of the input by the coordinate transformation, per axis, and
// the output is the sum of the input's values at a few taps around it,
// weighted: one tap for nearest, two for linear, four for cubic. A tap
// past the input's edge reads the edge value (or, for cubic with
// exclude_outside, is left out and the others renormalized). Coordinates
// are computed in float32 as onnxruntime computes them, so that nearest
// picks the same element where a coordinate falls on a half, and through
// the output's whole length as onnxruntime does (ONNX's reference maps
// align_corners through input * scale unfloored: the two differ where a
// scale does not give a whole length; the values folded into a written
// model must be the runtime's).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels_internal.h"
#include "saturn/tensor/interpreter/numbers.h"

namespace saturn::tensor::kernels {

namespace {

struct Tap {
  std::int64_t index;
  double weight;
};

struct ResizeModes {
  std::string mode, transform, nearest;
  float cubic_a;
  bool exclude_outside;
};

// The input coordinate output coordinate `x` maps to along an axis of
// `in` elements resized to `out` by `scale`.
float original_coordinate(const std::string& transform, std::int64_t x, float scale,
                          std::int64_t in, std::int64_t out) {
  const auto xf = static_cast<float>(x);
  if (transform == "asymmetric") return xf / scale;
  if (transform == "align_corners")
    return out == 1 ? 0.0f : xf * static_cast<float>(in - 1) / static_cast<float>(out - 1);
  if (transform == "pytorch_half_pixel" && out == 1) return 0.0f;
  const float centred = (xf + 0.5f) / scale - 0.5f;
  if (transform != "half_pixel_symmetric") return centred;  // half_pixel, pytorch_half_pixel
  // The output's extent as the scale gives it, centred on the input's.
  const float adjustment = static_cast<float>(out) / (scale * static_cast<float>(in));
  const float center = static_cast<float>(in) / 2.0f;
  return center * (1.0f - adjustment) + centred;
}

// The nearest input index to `x` by ONNX's nearest_mode.
std::int64_t nearest_index(const std::string& nearest_mode, float x) {
  const float below = std::floor(x);
  const bool half = x == below + 0.5f;
  if (nearest_mode == "floor") return static_cast<std::int64_t>(below);
  if (nearest_mode == "ceil") return static_cast<std::int64_t>(std::ceil(x));
  if (nearest_mode == "round_prefer_ceil")
    return static_cast<std::int64_t>(half ? below + 1.0f : std::round(x));
  return static_cast<std::int64_t>(half ? below : std::round(x));  // round_prefer_floor
}

// The cubic convolution's four weights at fraction t past the tap at floor
// (for the taps floor - 1 .. floor + 2), with ONNX's coefficient `a`.
std::array<double, 4> cubic_weights(double t, double a) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };        // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// The taps of output coordinate `x` along an axis of `in` elements.
std::vector<Tap> axis_taps(const ResizeModes& m, std::int64_t x, float scale, std::int64_t in,
                           std::int64_t out) {
  const float at = original_coordinate(m.transform, x, scale, in, out);
  auto edge = [in](std::int64_t i) { return std::clamp<std::int64_t>(i, 0, in - 1); };
  if (m.mode == "nearest") return {{edge(nearest_index(m.nearest, at)), 1.0}};
  const auto below = static_cast<std::int64_t>(std::floor(at));
  const double t = static_cast<double>(at) - static_cast<double>(below);
  std::vector<Tap> taps;
  if (m.mode == "linear") {
    taps = {{edge(below), 1 - t}, {edge(below + 1), t}};
  } else {
    const std::array<double, 4> w = cubic_weights(t, m.cubic_a);
    double kept = 0;
    for (std::int64_t k = 0; k < 4; ++k) {
      const std::int64_t i = below - 1 + k;
      if (m.exclude_outside && (i < 0 || i >= in)) continue;
      taps.push_back({edge(i), w[static_cast<std::size_t>(k)]});
      kept += w[static_cast<std::size_t>(k)];
    }
    if (m.exclude_outside && kept != 0) {
      for (Tap& tap : taps) tap.weight /= kept;
    }
  }
  std::erase_if(taps, [](const Tap& tap) { return tap.weight == 0; });
  return taps;
}

}  // namespace

std::optional<Dims> resize_dims(const Dims& in, const Tensor& by) {
  if ((by.dtype() != DType::kFloat32 && by.dtype() != DType::kInt64) ||
      by.dims() != Dims{static_cast<std::int64_t>(in.size())})
    return std::nullopt;
  const std::vector<Number> v = numbers(by);
  Dims out(in.size());
  for (std::size_t k = 0; k < in.size(); ++k) {
    const Number size = by.dtype() == DType::kInt64
                            ? v[k]
                            : std::floor(static_cast<Number>(in[k]) * static_cast<float>(v[k]));
    if (!(size >= 0 && size < static_cast<Number>(kMaxElements)) ||
        (by.dtype() == DType::kFloat32 && !(v[k] > 0)))
      return std::nullopt;
    out[k] = static_cast<std::int64_t>(size);
  }
  return out;
}

absl::StatusOr<Tensor> resize(const Attributes& a, std::span<const Tensor> in,
                              const TensorType& out) {
  const Dims& dims = in[0].dims();
  const std::size_t rank = dims.size();
  // The output's size and each axis's scale: given, or the sizes' ratio.
  const std::optional<Dims> given = resize_dims(dims, in[1]);
  if (!given)
    return absl::InvalidArgumentError(fmt::format(
        "Resize: {} has a negative size or a scale not above 0", to_string(in[1].type())));
  const Dims& size = *given;
  std::vector<float> scale(rank);
  const std::vector<Number> by = numbers(in[1]);
  for (std::size_t k = 0; k < rank; ++k) {
    scale[k] = in[1].dtype() == DType::kInt64
                   ? static_cast<float>(size[k]) / static_cast<float>(dims[k])
                   : static_cast<float>(by[k]);
  }
  if (size != out.dims)
    return absl::InvalidArgumentError(fmt::format(
        "Resize: its {} give {}, where its type is {}",
        in[1].dtype() == DType::kInt64 ? "sizes" : "scales", to_string(size), to_string(out)));
  const ResizeModes m{*a.get_string("mode"), *a.get_string("coordinate_transformation_mode"),
                      *a.get_string("nearest_mode"),
                      static_cast<float>(*a.get_float("cubic_coeff_a")),
                      *a.get_int("exclude_outside") != 0};
  std::vector<std::vector<std::vector<Tap>>> taps(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    for (std::int64_t x = 0; x < size[k]; ++x)
      taps[k].push_back(axis_taps(m, x, scale[k], dims[k], size[k]));
  }
  const std::vector<Number> x = numbers(in[0]);
  const Dims strides = strides_of(dims);
  std::vector<Number> y(static_cast<std::size_t>(out.num_elements()));
  Dims index(rank, 0);
  // The weighted sum over the taps of axes k.. of output `index`, from the
  // input offset and weight the axes before k give.
  auto sum = [&](auto& self, std::size_t k, std::int64_t offset, double weight) -> Number {
    if (k == rank) return weight * x[static_cast<std::size_t>(offset)];
    Number total = 0;
    for (const Tap& tap : taps[k][static_cast<std::size_t>(index[k])])
      total += self(self, k + 1, offset + tap.index * strides[k], weight * tap.weight);
    return total;
  };
  for (std::size_t i = 0; i < y.size(); ++i) {
    y[i] = sum(sum, 0, 0, 1.0);
    next_index(index, size);
  }
  // Integers (nearest only) are picked, not summed: from_numbers keeps them.
  return from_numbers(out, y);
}

// GridSample as onnxruntime computes it: a grid point's coordinates are
// mapped into the input in float32 ([-1, 1] to the pixel centres' span
// with align_corners, else to the pixels' edges), the taps around it
// (nearest rounds half to even; bilinear two by two; bicubic four by four,
// a = -0.75) each read through the padding (zeros past the edge, the edge
// value for border, reflected off the span for reflection), and weighted.
absl::StatusOr<Tensor> grid_sample(const Attributes& a, std::span<const Tensor> in,
                                   const TensorType& out) {
  // The modes, read once rather than compared at every tap.
  enum class Mode { kNearest, kBilinear, kBicubic };
  enum class Padding { kZeros, kBorder, kReflection };
  const std::string& mode_name = *a.get_string("mode");
  const Mode mode = mode_name == "nearest"    ? Mode::kNearest
                    : mode_name == "bilinear" ? Mode::kBilinear
                                              : Mode::kBicubic;
  const std::string& padding_name = *a.get_string("padding_mode");
  const Padding padding = padding_name == "zeros"    ? Padding::kZeros
                          : padding_name == "border" ? Padding::kBorder
                                                     : Padding::kReflection;
  const bool corners = *a.get_int("align_corners") != 0;
  const Dims& dims = in[0].dims();
  const std::int64_t channels = dims[1], height = dims[2], width = dims[3];
  const std::int64_t out_h = out.dims[2], out_w = out.dims[3];
  const std::vector<Number> x = numbers(in[0]), grid = numbers(in[1]);
  std::vector<Number> y(static_cast<std::size_t>(out.num_elements()));
  // The span reflection folds a tap back into, per axis.
  const float lo = corners ? 0.0f : -0.5f;
  const float hi_x = static_cast<float>(width) - (corners ? 1.0f : 0.5f);
  const float hi_y = static_cast<float>(height) - (corners ? 1.0f : 0.5f);
  auto reflect = [](float v, float low, float high) {
    const float range = high - low;
    if (v < low || v > high) {
      const float past = v < low ? low - v : v - high;
      const auto folds = static_cast<int>(past / range);
      const float rest = past - static_cast<float>(folds) * range;
      const bool from_low = (v < low) == (folds % 2 == 0);
      return from_low ? low + rest : high - rest;
    }
    return v;
  };
  auto denormalize = [corners](Number n, std::int64_t length) {
    const auto f = static_cast<float>(n);
    return corners ? (f + 1) / 2.0f * static_cast<float>(length - 1)
                   : ((f + 1) * static_cast<float>(length) - 1) / 2.0f;
  };
  auto cubic = [](float t) {  // the four weights at fraction t, as onnxruntime's float32
    constexpr float kA = -0.75f;
    auto near = [](float d) { return ((kA + 2) * d - (kA + 3)) * d * d + 1; };
    auto far = [](float d) { return ((kA * d - 5 * kA) * d + 8 * kA) * d - 4 * kA; };
    t = std::abs(t);
    return std::array<float, 4>{far(t + 1), near(t), near(1 - t), far(2 - t)};
  };
  for (std::int64_t n = 0; n < dims[0]; ++n) {
    for (std::int64_t c = 0; c < channels; ++c) {
      const Number* image = x.data() + (n * channels + c) * height * width;
      auto pixel = [&](std::int64_t r, std::int64_t col) -> Number {
        if (padding == Padding::kZeros)
          return r >= 0 && r < height && col >= 0 && col < width ? image[r * width + col] : 0;
        if (padding == Padding::kBorder) {
          r = std::clamp<std::int64_t>(r, 0, height - 1);
          col = std::clamp<std::int64_t>(col, 0, width - 1);
        } else {
          r = static_cast<std::int64_t>(reflect(static_cast<float>(r), lo, hi_y));
          col = static_cast<std::int64_t>(reflect(static_cast<float>(col), lo, hi_x));
        }
        return image[r * width + col];
      };
      for (std::int64_t oy = 0; oy < out_h; ++oy) {
        for (std::int64_t ox = 0; ox < out_w; ++ox) {
          const auto g = static_cast<std::size_t>(((n * out_h + oy) * out_w + ox) * 2);
          const float px = denormalize(grid[g], width), py = denormalize(grid[g + 1], height);
          Number v = 0;
          if (mode == Mode::kNearest) {
            v = pixel(static_cast<std::int64_t>(std::nearbyint(py)),
                      static_cast<std::int64_t>(std::nearbyint(px)));
          } else if (mode == Mode::kBilinear) {
            const auto x1 = static_cast<std::int64_t>(std::floor(px));
            const auto y1 = static_cast<std::int64_t>(std::floor(py));
            const float dx1 = px - static_cast<float>(x1), dx2 = static_cast<float>(x1 + 1) - px;
            const float dy1 = py - static_cast<float>(y1), dy2 = static_cast<float>(y1 + 1) - py;
            v = dy2 * (dx2 * pixel(y1, x1) + dx1 * pixel(y1, x1 + 1)) +
                dy1 * (dx2 * pixel(y1 + 1, x1) + dx1 * pixel(y1 + 1, x1 + 1));
          } else {  // bicubic
            const auto x0 = static_cast<std::int64_t>(std::floor(px)) - 1;
            const auto y0 = static_cast<std::int64_t>(std::floor(py)) - 1;
            const std::array<float, 4> wx = cubic(px - static_cast<float>(x0) - 1);
            const std::array<float, 4> wy = cubic(py - static_cast<float>(y0) - 1);
            for (std::int64_t i = 0; i < 4; ++i) {
              Number row = 0;
              for (std::int64_t j = 0; j < 4; ++j) row += wx[j] * pixel(y0 + i, x0 + j);
              v += wy[i] * row;
            }
          }
          y[static_cast<std::size_t>(((n * channels + c) * out_h + oy) * out_w + ox)] = v;
        }
      }
    }
  }
  return from_numbers(out, y);
}

}  // namespace saturn::tensor::kernels

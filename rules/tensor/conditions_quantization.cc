// The tensor rule set's conditions on quantized values: the element types
// QuantizeLinear writes, zero points and scales whose values the model gives,
// and when a convolution of integers sums exactly in float32. The others are
// in conditions.cc.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>

#include "saturn/rules/tensor/conditions_internal.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/tensor.h"

namespace saturn::rule_conditions {

namespace {

bool is_quantized(tensor::DType dtype) {
  return std::ranges::find(kQuantizedDTypes, dtype) != std::end(kQuantizedDTypes);
}

// Byte `k` of a quantized type's lowest value: a signed type's is 0x80 in
// its most significant byte and zeros below, an unsigned one's all zeros
// (little-endian, two's complement).
std::byte lowest_byte(tensor::DType dtype, std::size_t k) {
  const bool top = k + 1 == tensor::dtype_bytes(dtype);
  return top && !tensor::is_unsigned_integer(dtype) ? std::byte{0x80} : std::byte{0};
}

// Whether every element of a quantized tensor is its type's lowest value
// (a zero point below which QuantizeLinear saturates everything negative).
bool all_lowest(const tensor::Tensor& t) {
  if (!is_quantized(t.type().dtype)) return false;
  std::span<const std::byte> b = t.data();
  const std::size_t width = tensor::dtype_bytes(t.type().dtype);
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b[i] != lowest_byte(t.type().dtype, i % width)) return false;
  }
  return true;
}

bool all_positive(const tensor::Tensor& t) {
  return t.type().dtype == tensor::DType::kFloat32 &&
         std::ranges::all_of(t.floats(), [](float x) { return x > 0; });
}

// The high base-16 digit of a kernel element less its zero point, d =
// 16 * high + low with low in [-8, 7]: what the rule
// conv-integer-in-float-digits spells as Floor((d + 8) / 16).
std::int64_t high_digit(std::int64_t d) {
  return (d + 8 >= 0 ? d + 8 : d + 8 - 15) / 16;
}

// Whether a convolution of integers less their zero points sums exactly in
// float32, given the kernel `w` and its zero point `z` (one value, or one
// per output channel) and an input `x` of an integer type: each product
// (x - x's zero point) * (w - z) and each partial sum is a whole number,
// in any order of summing at most the widest x - x's zero point (its type's
// range) times one output channel's sum of |w - z|. Up to 2^24 float32
// holds every such number, so a float convolution that multiplies and adds
// (directly, through im2col or with fused multiply-adds; no transform such
// as Winograd's) computes the int32 sum exactly, and converting it is the
// rounding Cast makes of the int32 one. With `digits`, each of the two
// convolutions by the kernel's base-16 digits (high_digit and the low
// one) sums exactly instead; their one float sum then rounds as Cast does.
bool sums_exact_in_float32(const tensor::ValueType& x, const tensor::Tensor& w,
                           const tensor::Tensor& z, bool digits) {
  constexpr std::int64_t kExactInFloat32 = std::int64_t{1} << 24;
  if (x.is_tuple || !tensor::is_integer(x.tensor().dtype) || tensor::dtype_bytes(x.tensor().dtype) > 2 ||
      !tensor::is_integer(w.dtype()) || !tensor::is_integer(z.dtype()) || w.dims().size() < 2)
    return false;
  const std::int64_t widest = (std::int64_t{1} << (8 * tensor::dtype_bytes(x.tensor().dtype))) - 1;
  const std::int64_t channels = w.dims()[0];
  if (channels <= 0 || (z.size() != 1 && z.size() != channels)) return false;
  const std::int64_t per_channel = w.size() / channels;
  for (std::int64_t m = 0; m < channels; ++m) {
    const std::int64_t zero = tensor::read_integer(z, z.size() == 1 ? 0 : m);
    std::int64_t whole = 0, high = 0, low = 0;
    for (std::int64_t k = 0; k < per_channel; ++k) {
      const std::int64_t d = tensor::read_integer(w, m * per_channel + k) - zero;
      const std::int64_t h = high_digit(d);
      whole += std::abs(d);
      high += std::abs(h);
      low += std::abs(d - 16 * h);
    }
    if (digits ? std::max(high, low) * widest > kExactInFloat32 : whole * widest > kExactInFloat32)
      return false;
  }
  return true;
}

}  // namespace

bool make_all_lowest(tensor::Tensor& t) {
  if (!is_quantized(t.type().dtype)) return false;
  std::span<std::byte> b = t.mutable_data();
  const std::size_t width = tensor::dtype_bytes(t.type().dtype);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = lowest_byte(t.type().dtype, i % width);
  return true;
}

bool make_all_positive(tensor::Tensor& t) {
  if (t.type().dtype != tensor::DType::kFloat32) return false;
  for (float& x : t.mutable_floats()) x = std::abs(x) + 0.01f;
  return true;
}

void add_quantization_conditions(ConditionRegistry& r) {
  r.add(
      std::string(kQuantizedCondition), 1,
      [](const EGraph& g, std::span<const Id> a) {
        const tensor::ValueType& t = type_of(g, a[0]);
        return !t.is_tuple && is_quantized(t.tensor().dtype);
      },
      "the class holds int8, uint8, int16 or uint16 elements (what QuantizeLinear writes); the "
      "verifier draws each of them");
  r.add(
      "lowest-values", 1, of_weight_values<all_lowest>,
      "(lowest-values ?z): ?z is a quantized weight whose values the model gives, each its "
      "type's lowest (a zero point that saturates every negative value to it)");
  r.add(
      "positive-values", 1, of_weight_values<all_positive>,
      "(positive-values ?s): ?s is a float weight or constant whose values the model gives, each above 0 "
      "(a scale under which quantizing keeps the order of values)");
  auto exact_sums = [](bool digits) {
    return [digits](const EGraph& g, std::span<const Id> a) {
      const tensor::Tensor* w = shapes_of(g).weight_values(g, a[1]);
      const tensor::Tensor* z = shapes_of(g).weight_values(g, a[2]);
      return w != nullptr && z != nullptr && sums_exact_in_float32(type_of(g, a[0]), *w, *z, digits);
    };
  };
  r.add("sums-exact-in-float32", 3, exact_sums(false),
        "(sums-exact-in-float32 ?x ?w ?z): ?w is a convolution kernel of integer weights whose "
        "values the model gives, ?z its zero point, and the input ?x of an 8- or 16-bit integer "
        "type: every partial sum of (x - x's zero point) * (w - z) is a whole number float32 "
        "holds exactly (at most 2^24)");
  r.add("digit-sums-exact-in-float32", 3, exact_sums(true),
        "(digit-sums-exact-in-float32 ?x ?w ?z): as sums-exact-in-float32 for each base-16 digit "
        "of w - z (w - z = 16 * high + low, low in [-8, 7]) in place of w - z");
}

}  // namespace saturn::rule_conditions

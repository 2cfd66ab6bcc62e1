#include "saturn/tensor/tensor.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

namespace saturn::tensor {

struct Tensor::Buffer {
  std::vector<float> f;
  std::vector<std::int64_t> i;
  std::vector<std::byte> raw;
  std::vector<std::string> s;
  // Bytes read in place instead of f, i or raw, and what keeps them alive.
  std::span<const std::byte> borrowed;
  std::shared_ptr<const void> owner;
  // Borrowed bytes not aligned for their element type: copied into f or i
  // on the first read, once, whichever thread reads first.
  bool misaligned = false;
  std::once_flag aligned;

  // The borrowed values as `T`, in place or aligned in `copy`.
  template <typename T>
  std::span<const T> read(std::vector<T>& copy) {
    if (misaligned) {
      std::call_once(aligned, [&] {
        copy.resize(borrowed.size() / sizeof(T));
        if (!copy.empty()) std::memcpy(copy.data(), borrowed.data(), borrowed.size());
      });
      return copy;
    }
    return {reinterpret_cast<const T*>(borrowed.data()), borrowed.size() / sizeof(T)};
  }
};

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

namespace {

template <typename T>
std::int64_t read_as(std::span<const std::byte> bytes, std::int64_t i) {
  T x;
  std::memcpy(&x, bytes.data() + i * sizeof(T), sizeof(T));
  return x;
}

}  // namespace

std::int64_t read_integer(const Tensor& t, std::int64_t i) {
  const std::span<const std::byte> b = t.data();
  switch (t.dtype()) {
    case DType::kInt8:
    case DType::kInt4: return read_as<std::int8_t>(b, i);  // one 4-bit element per byte
    case DType::kUInt8:
    case DType::kUInt4: return read_as<std::uint8_t>(b, i);
    case DType::kInt16: return read_as<std::int16_t>(b, i);
    case DType::kUInt16: return read_as<std::uint16_t>(b, i);
    case DType::kInt32: return read_as<std::int32_t>(b, i);
    default: return 0;
  }
}

Tensor::Tensor(TensorType type) : type_(std::move(type)), buffer_(std::make_shared<Buffer>()) {
  const auto n = static_cast<std::size_t>(type_.num_elements());
  switch (type_.dtype) {
    case DType::kFloat32:
      buffer_->f.assign(n, 0.0f);
      break;
    case DType::kInt64:
      buffer_->i.assign(n, 0);
      break;
    case DType::kString:
      buffer_->s.assign(n, std::string());
      break;
    default:
      buffer_->raw.assign(static_cast<std::size_t>(type_.num_bytes()), std::byte{0});
  }
}

Tensor::Tensor(TensorType type, std::vector<float> values)
    : type_(std::move(type)), buffer_(std::make_shared<Buffer>()) {
  assert(type_.dtype == DType::kFloat32 &&
         static_cast<std::int64_t>(values.size()) == type_.num_elements());
  buffer_->f = std::move(values);
}

Tensor::Tensor(TensorType type, std::vector<std::int64_t> values)
    : type_(std::move(type)), buffer_(std::make_shared<Buffer>()) {
  assert(type_.dtype == DType::kInt64 &&
         static_cast<std::int64_t>(values.size()) == type_.num_elements());
  buffer_->i = std::move(values);
}

Tensor::Tensor(TensorType type, std::vector<std::byte> bytes)
    : type_(std::move(type)), buffer_(std::make_shared<Buffer>()) {
  assert(!is_computable(type_.dtype) && type_.dtype != DType::kString &&
         static_cast<std::int64_t>(bytes.size()) == type_.num_bytes());
  buffer_->raw = std::move(bytes);
}

Tensor::Tensor(TensorType type, std::vector<std::string> strings)
    : type_(std::move(type)), buffer_(std::make_shared<Buffer>()) {
  assert(type_.dtype == DType::kString &&
         static_cast<std::int64_t>(strings.size()) == type_.num_elements());
  buffer_->s = std::move(strings);
}

Tensor Tensor::borrowing(TensorType type, std::span<const std::byte> bytes,
                         std::shared_ptr<const void> owner) {
  assert(type.dtype != DType::kString && static_cast<std::int64_t>(bytes.size()) == type.num_bytes());
  const std::size_t align = type.dtype == DType::kInt64 ? alignof(std::int64_t)
                            : type.dtype == DType::kFloat32 ? alignof(float)
                                                            : 1;
  Tensor t;
  t.type_ = std::move(type);
  t.buffer_ = std::make_shared<Buffer>();
  t.buffer_->borrowed = bytes;
  assert(owner);
  t.buffer_->owner = std::move(owner);
  t.buffer_->misaligned = reinterpret_cast<std::uintptr_t>(bytes.data()) % align != 0;
  return t;
}

void Tensor::own() {
  Buffer& b = *buffer_;
  if (!b.owner) return;
  const std::size_t n = static_cast<std::size_t>(type_.num_elements());
  if (type_.dtype == DType::kFloat32) {
    b.f.resize(n);
    if (n > 0) std::memcpy(b.f.data(), b.borrowed.data(), b.borrowed.size());
  } else if (type_.dtype == DType::kInt64) {
    b.i.resize(n);
    if (n > 0) std::memcpy(b.i.data(), b.borrowed.data(), b.borrowed.size());
  } else {
    b.raw.assign(b.borrowed.begin(), b.borrowed.end());
  }
  b.borrowed = {};
  b.owner.reset();
  b.misaligned = false;
}

std::span<const std::byte> Tensor::bytes() const {
  assert(!is_computable(type_.dtype) && type_.dtype != DType::kString && buffer_);
  if (buffer_->owner) return buffer_->borrowed;
  return buffer_->raw;
}
std::span<const std::string> Tensor::strings() const {
  assert(type_.dtype == DType::kString && buffer_);
  return buffer_->s;
}

std::span<const float> Tensor::floats() const {
  assert(type_.dtype == DType::kFloat32 && buffer_);
  if (buffer_->owner) return buffer_->read(buffer_->f);
  return buffer_->f;
}
std::span<const std::int64_t> Tensor::ints() const {
  assert(type_.dtype == DType::kInt64 && buffer_);
  if (buffer_->owner) return buffer_->read(buffer_->i);
  return buffer_->i;
}
std::span<const std::byte> Tensor::data() const {
  // Borrowed bytes are read as they lie: bytes need no alignment.
  if (buffer_ && buffer_->owner) return buffer_->borrowed;
  switch (type_.dtype) {
    case DType::kFloat32: return std::as_bytes(floats());
    case DType::kInt64: return std::as_bytes(ints());
    default: return bytes();
  }
}

std::span<float> Tensor::mutable_floats() {
  assert(type_.dtype == DType::kFloat32 && buffer_.use_count() == 1);
  own();
  return buffer_->f;
}
std::span<std::int64_t> Tensor::mutable_ints() {
  assert(type_.dtype == DType::kInt64 && buffer_.use_count() == 1);
  own();
  return buffer_->i;
}
std::span<std::byte> Tensor::mutable_data() {
  switch (type_.dtype) {
    case DType::kFloat32: return std::as_writable_bytes(mutable_floats());
    case DType::kInt64: return std::as_writable_bytes(mutable_ints());
    default:
      assert(type_.dtype != DType::kString && buffer_.use_count() == 1);
      own();
      return buffer_->raw;
  }
}

Tensor Tensor::reshaped(Dims dims) const {
  Tensor out = *this;
  out.type_.dims = std::move(dims);
  assert(out.type_.num_elements() == type_.num_elements());
  return out;
}

Tensor random_tensor(const TensorType& type, std::uint64_t seed, float low, float high) {
  Tensor t(type);
  std::uint64_t state = seed;
  if (type.dtype == DType::kFloat32) {
    for (float& x : t.mutable_floats()) {
      double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
      x = static_cast<float>(low + (high - low) * u);
    }
  } else if (type.dtype == DType::kInt64) {
    std::int64_t lo = static_cast<std::int64_t>(std::ceil(low));
    std::int64_t span = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(high)) - lo);
    for (std::int64_t& x : t.mutable_ints())
      x = lo + static_cast<std::int64_t>(splitmix64(state) % span);
  } else if (type.dtype == DType::kFloat16) {
    return narrowed(random_tensor(TensorType{DType::kFloat32, type.dims}, seed, low, high),
                    type.dtype);
  } else if (type.dtype != DType::kString) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(type.num_bytes()));
    for (std::byte& b : bytes) {
      auto r = static_cast<unsigned>(splitmix64(state));
      b = type.dtype == DType::kBool   ? static_cast<std::byte>(r & 1u)
          : is_4bit(type.dtype)        ? four_bit_byte(type.dtype, r)
                                       : static_cast<std::byte>(r & 0xffu);
    }
    return Tensor(type, std::move(bytes));
  }
  return t;
}

namespace {

// IEEE half precision by its bits (clang 14 has no _Float16 on x86): exact
// both ways for every half; float to half rounds to nearest, ties to even.
float half_to_float(std::uint16_t h) {
  const bool negative = (h & 0x8000u) != 0;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return negative ? -v : v;
  }
  const std::uint32_t sign = negative ? 0x80000000u : 0u;
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

std::uint16_t float_to_half(float f) {
  const auto b = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (b >> 16) & 0x8000u, biased = (b >> 23) & 0xffu;
  std::uint32_t mant = b & 0x7fffffu;
  if (biased == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant != 0 ? 0x200u : 0u));
  const int exp = static_cast<int>(biased) - 112;  // the half's biased exponent
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  int shift = 13;
  std::uint32_t h;
  if (exp <= 0) {  // a subnormal half, or zero
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    shift = 14 - exp;
    h = mant >> shift;
  } else {
    h = (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  }
  const std::uint32_t rest = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (h & 1u) != 0)) ++h;  // a carry rounds the exponent up
  return static_cast<std::uint16_t>(sign | h);
}

}  // namespace

Tensor widened(const Tensor& t) {
  if (t.dtype() != DType::kFloat16) return t;
  std::span<const std::byte> raw = t.bytes();
  std::vector<float> values(static_cast<std::size_t>(t.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint16_t h;
    std::memcpy(&h, raw.data() + i * sizeof h, sizeof h);
    values[i] = half_to_float(h);
  }
  return Tensor(TensorType{DType::kFloat32, t.dims()}, std::move(values));
}

Tensor narrowed(const Tensor& t, DType dtype) {
  if (t.dtype() != DType::kFloat32 || dtype != DType::kFloat16) return t;
  std::span<const float> values = t.floats();
  std::vector<std::byte> raw(values.size() * sizeof(std::uint16_t));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t h = float_to_half(values[i]);
    std::memcpy(raw.data() + i * sizeof h, &h, sizeof h);
  }
  return Tensor(TensorType{dtype, t.dims()}, std::move(raw));
}

std::uint64_t stable_hash(std::string_view text) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

double max_error_ratio(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.type() != b.type()) return std::numeric_limits<double>::infinity();
  if (a.dtype() == DType::kFloat16) return max_error_ratio(widened(a), widened(b), rtol, atol);
  double worst = 0;
  if (a.dtype() != DType::kFloat32) {
    bool same = a.dtype() == DType::kInt64    ? std::ranges::equal(a.ints(), b.ints())
                : a.dtype() == DType::kString ? std::ranges::equal(a.strings(), b.strings())
                                              : std::ranges::equal(a.bytes(), b.bytes());
    return same ? 0 : std::numeric_limits<double>::infinity();
  }
  std::span<const float> x = a.floats(), y = b.floats();
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return std::numeric_limits<double>::infinity();
    if (std::isnan(x[i])) continue;
    double r = std::abs(static_cast<double>(x[i]) - y[i]) /
               (atol + rtol * std::abs(static_cast<double>(y[i])));
    worst = std::max(worst, r);
  }
  return worst;
}

}  // namespace saturn::tensor

#include "saturn/tensor/types.h"

#include <algorithm>
#include <array>
#include <limits>

#include "fmt/format.h"
#include "fmt/ranges.h"

namespace saturn::tensor {

namespace {

struct DTypeRow {
  std::string_view name;
  std::size_t bytes;
};

constexpr std::array<DTypeRow, kNumDTypes> kDTypes = {{
    {"float32", 4},
    {"int64", 8},
    {"bool", 1},
    {"int8", 1},
    {"uint8", 1},
    {"int16", 2},
    {"uint16", 2},
    {"int32", 4},
    {"uint32", 4},
    {"uint64", 8},
    {"float16", 2},
    {"bfloat16", 2},
    {"float64", 8},
    {"complex64", 8},
    {"complex128", 16},
    {"string", 0},
    {"other", 0},
    {"int4", 1},
    {"uint4", 1},
}};

}  // namespace

std::string_view dtype_name(DType dtype) { return kDTypes[static_cast<std::size_t>(dtype)].name; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (std::size_t i = 0; i < kDTypes.size(); ++i) {
    if (kDTypes[i].name == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

std::size_t dtype_bytes(DType dtype) { return kDTypes[static_cast<std::size_t>(dtype)].bytes; }

std::int64_t TensorType::num_elements() const {
  // Saturates rather than overflowing (types can come from files; readers
  // refuse those beyond within_size_limit).
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (__builtin_mul_overflow(n, d < 0 ? 1 : d, &n))
      return std::numeric_limits<std::int64_t>::max();
  }
  return n;
}

bool within_size_limit(const TensorType& type) {
  // At least one byte an element, so that the element count is checked too.
  std::int64_t bytes =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(dtype_bytes(type.dtype)));
  // A zero (or unknown) dimension counts as 1 here: the other dimensions are
  // bounded all the same, since shape arithmetic (Flatten, Concat) combines
  // them whatever the element count.
  for (std::int64_t d : type.dims) {
    const std::int64_t factor = d > 0 ? d : 1;
    if (bytes > kMaxTensorBytes / factor) return false;
    bytes *= factor;
  }
  return bytes <= kMaxTensorBytes;
}

std::string to_string(const Dims& dims) { return fmt::format("[{}]", fmt::join(dims, ",")); }

std::string to_string(const TensorType& type) {
  return fmt::format("{}{}", dtype_name(type.dtype), to_string(type.dims));
}

std::string to_string(const ValueType& type) {
  if (!type.is_tuple) return to_string(type.tensor());
  std::string out = "(";
  for (std::size_t i = 0; i < type.parts.size(); ++i) {
    if (i > 0) out += ", ";
    out += to_string(type.parts[i]);
  }
  out.push_back(')');
  return out;
}

}  // namespace saturn::tensor

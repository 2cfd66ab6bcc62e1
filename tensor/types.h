// Value types of the tensor IR: a tensor (element type and static shape), or
// a tuple of tensors (what Split and multi-output opaque operators yield).
//
//   TensorType t{DType::kFloat32, {1, 3, 224, 224}};
//   t.num_elements();       // 150528
//   ValueType v = ValueType::of(t);
//   to_string(v);           // "float32[1,3,224,224]"
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace saturn::tensor {

enum class DType : std::uint8_t { kFloat32, kInt64 };

std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_bytes(DType dtype);

using Dims = std::vector<std::int64_t>;

struct TensorType {
  DType dtype = DType::kFloat32;
  Dims dims;

  std::size_t rank() const { return dims.size(); }
  std::int64_t num_elements() const;
  std::int64_t num_bytes() const {
    return num_elements() * static_cast<std::int64_t>(dtype_bytes(dtype));
  }
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

struct ValueType {
  std::vector<TensorType> parts;  // one part for a tensor
  bool is_tuple = false;

  static ValueType of(TensorType t) { return ValueType{{std::move(t)}, false}; }
  static ValueType tuple(std::vector<TensorType> parts) {
    return ValueType{std::move(parts), true};
  }
  const TensorType& tensor() const {
    assert(!is_tuple && parts.size() == 1);
    return parts[0];
  }
  friend bool operator==(const ValueType&, const ValueType&) = default;
};

std::string to_string(const Dims& dims);  // "[1,3,224,224]"
std::string to_string(const TensorType& type);
std::string to_string(const ValueType& type);

}  // namespace saturn::tensor

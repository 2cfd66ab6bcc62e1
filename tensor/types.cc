#include "tensor/types.h"

#include "fmt/format.h"
#include "fmt/ranges.h"

namespace saturn::tensor {

std::string_view dtype_name(DType dtype) { return dtype == DType::kFloat32 ? "float32" : "int64"; }

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "float32") return DType::kFloat32;
  if (name == "int64") return DType::kInt64;
  return std::nullopt;
}

std::size_t dtype_bytes(DType dtype) { return dtype == DType::kFloat32 ? 4 : 8; }

std::int64_t TensorType::num_elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
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

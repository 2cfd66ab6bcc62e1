// Value types of the tensor IR: a tensor (element type and static shape), or
// a tuple of tensors (what Split and multi-output opaque operators yield).
//
//   TensorType t{DType::kFloat32, {1, 3, 224, 224}};
//   t.num_elements();       // 150528
//   ValueType v = ValueType::of(t);
//   to_string(v);           // "float32[1,3,224,224]"
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace saturn::tensor {

// The element types of ONNX tensors. The interpreter computes with float32
// and int64; the others are carried through (opaque operators, weights) so a
// model round-trips without loss. kOther is a value that is not a tensor (an
// ONNX sequence, optional or map), typed only by the operators that use it.
// kInt4 and kUInt4 (IR 10's packed 4-bit integers, the blocked weights of
// QuantizeLinear/DequantizeLinear) hold one element per byte here, int4
// sign-extended; ONNX files pack two per byte (onnx/proto.cc).
// The enumerators' order is part of saved files (Opaque `out_dtypes`):
// new types come last.
enum class DType : std::uint8_t {
  kFloat32,
  kInt64,
  kBool,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kUInt64,
  kFloat16,
  kBFloat16,
  kFloat64,
  kComplex64,
  kComplex128,
  kString,
  kOther,
  kInt4,
  kUInt4,
};
inline constexpr int kNumDTypes = static_cast<int>(DType::kUInt4) + 1;

std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
// Bytes per element in memory (strings and kOther count as 0: their size is
// unknown; the 4-bit integers 1, unpacked).
std::size_t dtype_bytes(DType dtype);
// Whether the interpreter computes with this element type.
inline bool is_computable(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kInt64;
}
// The floating-point element types of the IR's arithmetic: float32, and
// float16, which the interpreter computes in float32 and rounds back after
// each operator (as a runtime without float16 kernels does).
inline bool is_float(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat16; }
// Every floating-point element type (bfloat16 and float64 too).
inline bool is_floating(DType dtype) {
  return is_float(dtype) || dtype == DType::kBFloat16 || dtype == DType::kFloat64;
}
// The 4-bit integers, which only quantization reads and writes.
inline bool is_4bit(DType dtype) { return dtype == DType::kInt4 || dtype == DType::kUInt4; }
// The byte that holds a 4-bit integer given by its low 4 bits (int4
// sign-extended). A byte holds a valid 4-bit integer where it is its own.
inline std::byte four_bit_byte(DType dtype, unsigned bits) {
  bits &= 0xFu;
  return static_cast<std::byte>(dtype == DType::kInt4 && bits >= 8 ? bits | 0xF0u : bits);
}
inline bool is_unsigned_integer(DType dtype) {
  return dtype == DType::kUInt8 || dtype == DType::kUInt16 || dtype == DType::kUInt32 ||
         dtype == DType::kUInt64;
}
// The integer element types the value operators compute on (bool is not
// one, nor are the 4-bit integers).
inline bool is_integer(DType dtype) {
  switch (dtype) {
    case DType::kInt8: case DType::kUInt8: case DType::kInt16: case DType::kUInt16:
    case DType::kInt32: case DType::kUInt32: case DType::kInt64: case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

// The element types the IR's value operators (Shape, Cast, Where, the
// comparisons and logic) read and write: integers, bool and real floats.
inline bool is_plain_number(DType dtype) {
  return dtype != DType::kBFloat16 && dtype != DType::kComplex64 &&
         dtype != DType::kComplex128 && dtype != DType::kString && dtype != DType::kOther &&
         !is_4bit(dtype);
}

using Dims = std::vector<std::int64_t>;

// A dimension only an opaque operator's output may have: its size depends on
// the data (ONNX NonZero, Range, Loop outputs). Known operators never take
// such a value.
inline constexpr std::int64_t kUnknownDim = -1;

struct TensorType {
  DType dtype = DType::kFloat32;
  Dims dims;

  std::size_t rank() const { return dims.size(); }
  // Unknown dimensions count as 1, so a cost estimate stays finite.
  std::int64_t num_elements() const;
  bool is_static() const {
    for (std::int64_t d : dims) {
      if (d < 0) return false;
    }
    return true;
  }
  std::int64_t num_bytes() const {  // saturates, as num_elements does
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(num_elements(), static_cast<std::int64_t>(dtype_bytes(dtype)),
                               &bytes))
      return std::numeric_limits<std::int64_t>::max();
    return bytes;
  }
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

// The most bytes one value may hold (16 TiB): far above any real tensor, and
// low enough that sizes and their sums stay exact in 64-bit integers.
inline constexpr std::int64_t kMaxTensorBytes = std::int64_t{1} << 44;
// Whether `type` holds at most kMaxTensorBytes (checked without overflow).
bool within_size_limit(const TensorType& type);

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
  std::int64_t num_bytes() const {  // over all parts
    std::int64_t total = 0;
    for (const TensorType& t : parts) {
      if (__builtin_add_overflow(total, t.num_bytes(), &total))
        return std::numeric_limits<std::int64_t>::max();
    }
    return total;
  }
  friend bool operator==(const ValueType&, const ValueType&) = default;
};

std::string to_string(const Dims& dims);  // "[1,3,224,224]"
std::string to_string(const TensorType& type);
std::string to_string(const ValueType& type);

}  // namespace saturn::tensor

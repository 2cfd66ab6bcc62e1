// Tensor values for the reference interpreter and for weights: a type and a
// shared, immutable buffer. Copying a Tensor shares its buffer; kernels write
// only into tensors they just created.
//
//   Tensor t(TensorType{DType::kFloat32, {2, 3}});   // zeros
//   t.mutable_floats()[0] = 1.5f;
//   Tensor r = random_tensor(t.type(), /*seed=*/7, -1.0f, 1.0f);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "saturn/tensor/types.h"

namespace saturn::tensor {

class Tensor {
 public:
  Tensor() = default;
  // A zero-filled tensor.
  explicit Tensor(TensorType type);
  Tensor(TensorType type, std::vector<float> values);
  Tensor(TensorType type, std::vector<std::int64_t> values);
  // Any other element type, as little-endian bytes (num_bytes() of them).
  Tensor(TensorType type, std::vector<std::byte> bytes);
  Tensor(TensorType type, std::vector<std::string> strings);
  // A tensor that reads `bytes` (little-endian, num_bytes() of them) in
  // place, kept alive by `owner` (the parsed model file that holds them):
  // a model's weights are not copied at import. Bytes not aligned for the
  // element type are copied when first read as floats or ints.
  static Tensor borrowing(TensorType type, std::span<const std::byte> bytes,
                          std::shared_ptr<const void> owner);
  static Tensor scalar(float value) {
    return Tensor(TensorType{DType::kFloat32, {}}, std::vector<float>{value});
  }

  const TensorType& type() const { return type_; }
  const Dims& dims() const { return type_.dims; }
  DType dtype() const { return type_.dtype; }
  std::int64_t size() const { return type_.num_elements(); }

  std::span<const float> floats() const;
  std::span<const std::int64_t> ints() const;
  std::span<const std::byte> bytes() const;  // not float32, int64 or string
  std::span<const std::string> strings() const;
  // The elements' bytes (dtype_bytes each, little-endian) for any element
  // type but string: what data movement copies without reading values.
  std::span<const std::byte> data() const;
  // Writable views; only for a tensor whose buffer is not shared yet (a
  // borrowing tensor copies its bytes first).
  std::span<float> mutable_floats();
  std::span<std::int64_t> mutable_ints();
  std::span<std::byte> mutable_data();

  // The same data seen with another shape of the same element count.
  Tensor reshaped(Dims dims) const;

 private:
  // The values (tensor.cc): typed vectors, or bytes read in place.
  struct Buffer;
  // Copies borrowed bytes into the typed buffer (before a write).
  void own();
  TensorType type_;
  std::shared_ptr<Buffer> buffer_;
};

// Deterministic uniform values in [low, high) (integers in [low, high) for
// int64), the same on every platform for a given seed. Other element types
// get seeded random bytes (bools 0 or 1; strings are empty).
Tensor random_tensor(const TensorType& type, std::uint64_t seed, float low, float high);

// Element `i` of an int8, uint8, int16, uint16 or int32 tensor (int4 and
// uint4 hold one element per byte); 0 for the other element types.
std::int64_t read_integer(const Tensor& t, std::int64_t i);

// A float16 tensor's values as float32 (exactly), and float32 values
// rounded to float16 (to nearest, ties to even). Other tensors pass as they are.
Tensor widened(const Tensor& t);
Tensor narrowed(const Tensor& t, DType dtype);

// A 64-bit hash of a string, stable across runs (weight seeds from names).
std::uint64_t stable_hash(std::string_view text);

// Largest |a-b| / (atol + rtol*|b|) over elements; <= 1 means "close".
// Shapes must agree (otherwise +infinity). float16 compares as float32; other
// element types compare exactly (0 or +infinity).
double max_error_ratio(const Tensor& a, const Tensor& b, double rtol, double atol);

}  // namespace saturn::tensor

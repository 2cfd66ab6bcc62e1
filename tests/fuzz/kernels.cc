// The interpreter's kernels: an operator, its attributes and its inputs
// (element types, shapes and values, indices and bounds past their axis or
// negative among them) drawn from the bytes and evaluated; the result is a
// value of the inferred type or an error, and nothing may crash or read
// outside a tensor. Sizes stay small or far past what the interpreter
// computes (refused), so a run allocates little.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels.h"
#include "saturn/tensor/ops.h"
#include "saturn/tests/fuzz/harness.h"

namespace {

using namespace saturn;
using namespace saturn::tensor;
using Ints = std::vector<std::int64_t>;

// Reads the fuzzer's bytes as draws; past the end every draw is 0.
class Draw {
 public:
  Draw(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  // One of n choices.
  std::size_t pick(std::size_t n) { return n == 0 ? 0 : byte() % n; }
  bool coin() { return (byte() & 1) != 0; }
  // Mostly small, sometimes an extreme that no size may reach.
  std::int64_t integer() {
    static constexpr std::array<std::int64_t, 8> kExtremes{
        std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
        std::numeric_limits<std::int64_t>::min() + 1, std::numeric_limits<std::int64_t>::max() - 1,
        std::int64_t{1} << 40, -(std::int64_t{1} << 40), std::int64_t{1} << 62, -(std::int64_t{1} << 62)};
    const std::uint8_t b = byte();
    if (b >= 240) return kExtremes[b % kExtremes.size()];
    return static_cast<std::int64_t>(b % 15) - 7;
  }
  Ints integers(std::size_t max_length) {
    Ints out(pick(max_length + 1));
    for (std::int64_t& x : out) x = integer();
    return out;
  }
  double number() {
    static constexpr std::array<double, 8> kNumbers{
        0.0, 1.0, -1.0, 0.5, 3.0, std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity(), 1e-30};
    return kNumbers[pick(kNumbers.size())];
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

constexpr std::array<DType, 11> kDTypes{
    DType::kFloat32, DType::kInt64,  DType::kFloat16, DType::kInt32, DType::kInt8,  DType::kUInt8,
    DType::kBool,    DType::kFloat64, DType::kBFloat16, DType::kString, DType::kUInt64};

TensorType draw_type(Draw& d) {
  TensorType t{kDTypes[d.pick(kDTypes.size())], Dims(d.pick(5))};
  for (std::int64_t& x : t.dims) x = static_cast<std::int64_t>(d.pick(5));
  return t;
}

Tensor draw_tensor(Draw& d) {
  const TensorType type = draw_type(d);
  const auto n = static_cast<std::size_t>(type.num_elements());
  switch (type.dtype) {
    case DType::kFloat32: {
      std::vector<float> v(n);
      for (float& x : v) x = static_cast<float>(d.number());
      return Tensor(type, std::move(v));
    }
    case DType::kInt64: {  // indices, bounds and shapes
      Ints v(n);
      for (std::int64_t& x : v) x = d.integer();
      return Tensor(type, std::move(v));
    }
    case DType::kString:
      return Tensor(type, std::vector<std::string>(n, "s"));
    default: {  // little-endian bytes of drawn integers (floats: their bits)
      const std::size_t size = dtype_bytes(type.dtype);
      std::vector<std::byte> v(static_cast<std::size_t>(type.num_bytes()));
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t x = d.integer();
        std::memcpy(v.data() + i * size, &x, std::min(size, sizeof x));
      }
      return Tensor(type, std::move(v));
    }
  }
}

// Every attribute key of the IR's schemas, with a drawn value of its kind;
// a key the operator does not know is left out.
Attributes draw_attributes(Draw& d, Op op) {
  static const std::vector<std::string> kIntKeys{"axis", "group", "count", "keepdims", "start",
                                                 "end", "transA", "transB", "interleaved",
                                                 "num_heads", "kv_num_heads", "index",
                                                 "count_include_pad", "detect_negative",
                                                 "detect_positive", "exclusive", "reverse",
                                                 "batch_dims", "exclude_outside", "k", "upper",
                                                 "largest", "sorted", "align_corners"};
  static const std::vector<std::string> kIntsKeys{"perm", "shape", "starts", "ends", "axes",
                                                  "steps", "split", "pads", "kernel_shape",
                                                  "strides", "dilations", "repeats",
                                                  "probe_shapes"};
  static const std::vector<std::string> kFloatKeys{"value", "alpha", "beta", "epsilon", "min",
                                                   "max", "scale", "cubic_coeff_a"};
  static const std::vector<std::string> kTypeNames{"float32", "int64", "bool", "int8",
                                                   "float16", "bfloat16", "string", "nonsense"};
  std::vector<std::string> every_key = kIntKeys;
  every_key.insert(every_key.end(), kIntsKeys.begin(), kIntsKeys.end());
  every_key.insert(every_key.end(), kFloatKeys.begin(), kFloatKeys.end());
  every_key.insert(every_key.end(), {"to", "dtype", "activation", "reduction", "mode",
                                     "coordinate_transformation_mode", "nearest_mode", "padding_mode"});
  Attributes a;
  auto add = [&](const std::string& key, AttrValue value) {
    if (!d.coin()) return;
    if (normalize_attributes(op, Attributes{{key, value}}, every_key).ok()) a.set(key, std::move(value));
  };
  for (const std::string& k : kIntKeys) add(k, d.integer());
  for (const std::string& k : kIntsKeys) add(k, d.integers(5));
  for (const std::string& k : kFloatKeys) add(k, d.number());
  add("to", kTypeNames[d.pick(kTypeNames.size())]);
  add("dtype", kTypeNames[d.pick(kTypeNames.size())]);
  add("activation", std::string(d.coin() ? "relu" : "gelu"));
  static const std::vector<std::string> kReductions{"none", "add", "mul", "max", "min", "mean"};
  add("reduction", kReductions[d.pick(kReductions.size())]);
  static const std::vector<std::string> kModes{"nearest", "linear", "cubic", "area", "bilinear",
                                               "bicubic"};
  static const std::vector<std::string> kTransforms{
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
      "tf_crop_and_resize"};
  static const std::vector<std::string> kNearest{"round_prefer_floor", "round_prefer_ceil",
                                                 "floor", "ceil", "up"};
  add("mode", kModes[d.pick(kModes.size())]);
  add("coordinate_transformation_mode", kTransforms[d.pick(kTransforms.size())]);
  add("nearest_mode", kNearest[d.pick(kNearest.size())]);
  static const std::vector<std::string> kPadding{"zeros", "border", "reflection", "edge"};
  add("padding_mode", kPadding[d.pick(kPadding.size())]);
  return a;
}

// An opaque node of one of the ONNX operators the interpreter computes (or
// not), its declared outputs drawn too.
Attributes draw_opaque(Draw& d) {
  static constexpr std::array<const char*, 9> kTypes{
      "Range", "Expand", "Slice", "ConstantOfShape", "Add", "Sub", "Mul", "NonZero", "Tile"};
  Attributes a{{"op_type", std::string(kTypes[d.pick(kTypes.size())])}};
  std::vector<TensorType> outputs(1 + d.pick(2));
  for (TensorType& t : outputs) {
    t = draw_type(d);
    for (std::int64_t& x : t.dims) x = d.coin() ? kUnknownDim : x;
  }
  set_opaque_outputs(a, outputs);
  if (d.coin()) a.set("absent_inputs", d.integers(3));
  if (d.coin()) a.set("fill_value", d.number());
  return a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Draw d(data, size);
  std::span<const Op> ops = all_ops();
  const Op op = ops[d.pick(ops.size())];
  // The interpreter evaluates these itself (graph leaves and tuples).
  if (op == Op::kInput || op == Op::kWeight || op == Op::kTuple || op == Op::kTupleGet) return 0;
  absl::StatusOr<Attributes> attributes =
      normalize_attributes(op, op == Op::kOpaque ? draw_opaque(d) : draw_attributes(d, op));
  if (!attributes.ok()) return 0;
  const auto [min_inputs, max_inputs] = input_count(op);
  const int most = std::min(max_inputs, 4);
  const int count = min_inputs + static_cast<int>(d.pick(static_cast<std::size_t>(std::max(0, most - min_inputs)) + 1));
  std::vector<Tensor> inputs;
  for (int i = 0; i < count; ++i) inputs.push_back(draw_tensor(d));
  (void)evaluate_op(op, *attributes, inputs);
  return 0;
}

// Reference kernels: the value operators (Shape, Cast, Where, the
// comparisons and the logic operators) on any plain element type, integer
// arithmetic as ONNX defines it, and the ONNX operators an opaque node may
// hold that exporters use on sizes and positions (Range, Expand, Slice,
// ConstantOfShape, and integer Add, Sub and Mul). The operators that move
// or make values are kernels_made.cc's.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels.h"
#include "saturn/tensor/interpreter/kernels_internal.h"
#include "saturn/tensor/interpreter/numbers.h"

namespace saturn::tensor::kernels {

namespace {

template <typename T>
void read_bytes(std::span<const std::byte> bytes, std::vector<Number>& out) {
  for (std::size_t i = 0; i + sizeof(T) <= bytes.size(); i += sizeof(T)) {
    T x;
    std::memcpy(&x, bytes.data() + i, sizeof(T));
    out.push_back(static_cast<Number>(x));
  }
}

}  // namespace

std::vector<Number> numbers(const Tensor& t) {
  std::vector<Number> out;
  out.reserve(static_cast<std::size_t>(t.size()));
  switch (t.dtype()) {
    case DType::kFloat32:
      for (float x : t.floats()) out.push_back(x);
      break;
    case DType::kFloat16: {
      const Tensor wide = widened(t);  // kept alive while its floats are read
      for (float x : wide.floats()) out.push_back(x);
      break;
    }
    case DType::kInt64:
      for (std::int64_t x : t.ints()) out.push_back(static_cast<Number>(x));
      break;
    case DType::kFloat64: read_bytes<double>(t.bytes(), out); break;
    case DType::kInt32: read_bytes<std::int32_t>(t.bytes(), out); break;
    case DType::kUInt32: read_bytes<std::uint32_t>(t.bytes(), out); break;
    case DType::kInt16: read_bytes<std::int16_t>(t.bytes(), out); break;
    case DType::kUInt16: read_bytes<std::uint16_t>(t.bytes(), out); break;
    case DType::kInt8: read_bytes<std::int8_t>(t.bytes(), out); break;
    case DType::kUInt64: read_bytes<std::uint64_t>(t.bytes(), out); break;
    case DType::kUInt8:
    case DType::kBool:
      read_bytes<std::uint8_t>(t.bytes(), out);
      break;
    default:  // not a plain number: inference refuses these
      break;
  }
  return out;
}

namespace {

// `x` as integer type T: truncated toward zero and saturated at T's range
// (ONNX leaves out-of-range casts undefined; saturating keeps them defined).
template <typename T>
T to_integer(Number x) {
  if (std::isnan(x)) return 0;
  x = std::trunc(x);
  if (x <= static_cast<Number>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (x >= static_cast<Number>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(x);
}

template <typename T>
std::vector<std::byte> write_bytes(std::span<const Number> v, T (*convert)(Number)) {
  std::vector<std::byte> bytes(v.size() * sizeof(T));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const T x = convert(v[i]);
    std::memcpy(bytes.data() + i * sizeof(T), &x, sizeof(T));
  }
  return bytes;
}

template <typename T>
T to_float(Number x) {
  return static_cast<T>(x);
}

std::uint8_t to_bool(Number x) { return x != 0 ? 1 : 0; }

}  // namespace

Tensor from_numbers(TensorType type, std::span<const Number> v) {
  switch (type.dtype) {
    case DType::kFloat32:
      return Tensor(type, std::vector<float>(v.begin(), v.end()));
    case DType::kFloat16: {
      TensorType wide{DType::kFloat32, type.dims};
      return narrowed(Tensor(wide, std::vector<float>(v.begin(), v.end())), DType::kFloat16);
    }
    case DType::kInt64: {
      std::vector<std::int64_t> ints(v.size());
      std::ranges::transform(v, ints.begin(), to_integer<std::int64_t>);
      return Tensor(type, std::move(ints));
    }
    case DType::kFloat64: return Tensor(type, write_bytes<double>(v, to_float<double>));
    case DType::kInt32: return Tensor(type, write_bytes<std::int32_t>(v, to_integer<std::int32_t>));
    case DType::kUInt32: return Tensor(type, write_bytes<std::uint32_t>(v, to_integer<std::uint32_t>));
    case DType::kInt16: return Tensor(type, write_bytes<std::int16_t>(v, to_integer<std::int16_t>));
    case DType::kUInt16: return Tensor(type, write_bytes<std::uint16_t>(v, to_integer<std::uint16_t>));
    case DType::kInt8: return Tensor(type, write_bytes<std::int8_t>(v, to_integer<std::int8_t>));
    case DType::kUInt8: return Tensor(type, write_bytes<std::uint8_t>(v, to_integer<std::uint8_t>));
    case DType::kUInt64: return Tensor(type, write_bytes<std::uint64_t>(v, to_integer<std::uint64_t>));
    default:  // kBool
      return Tensor(type, write_bytes<std::uint8_t>(v, to_bool));
  }
}

namespace {

// A comparison or a logic operator of two elements.
bool binary_value(Op op, Number x, Number y) {
  switch (op) {
    case Op::kEqual: return x == y;
    case Op::kLess: return x < y;
    case Op::kLessOrEqual: return x <= y;
    case Op::kGreater: return x > y;
    case Op::kGreaterOrEqual: return x >= y;
    case Op::kAnd: return x != 0 && y != 0;
    default: return x != 0 || y != 0;  // kOr
  }
}

}  // namespace

Number integer_op(Op op, DType dtype, Number x, Number y, bool& by_zero) {
  const bool is_unsigned = is_unsigned_integer(dtype);
  auto bits_of = [&](Number v) {
    return is_unsigned ? static_cast<std::uint64_t>(v)
                       : static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
  };
  const std::uint64_t a = bits_of(x), b = bits_of(y);
  const auto sa = static_cast<std::int64_t>(a), sb = static_cast<std::int64_t>(b);
  std::uint64_t r = 0;
  switch (op) {
    case Op::kAdd: r = a + b; break;
    case Op::kSub: r = a - b; break;
    case Op::kMul: r = a * b; break;
    case Op::kNeg: r = 0 - a; break;
    case Op::kAbs: r = !is_unsigned && sa < 0 ? 0 - a : a; break;
    case Op::kSign:
      r = (is_unsigned ? a == 0 : sa == 0) ? 0 : !is_unsigned && sa < 0 ? ~std::uint64_t{0} : 1;
      break;
    default:  // kDiv
      if (b == 0) {
        by_zero = true;
        break;
      }
      if (is_unsigned)
        r = a / b;
      else
        r = sa == std::numeric_limits<std::int64_t>::min() && sb == -1 ? a
                                                                        : static_cast<std::uint64_t>(sa / sb);
  }
  const std::size_t width = 8 * dtype_bytes(dtype);
  if (width < 64) {
    const std::uint64_t mask = (std::uint64_t{1} << width) - 1;
    r &= mask;
    if (!is_unsigned && (r >> (width - 1)) != 0) r |= ~mask;  // the sign, extended
  }
  return is_unsigned ? static_cast<Number>(r) : static_cast<Number>(static_cast<std::int64_t>(r));
}


absl::StatusOr<Tensor> integer_arithmetic(Op op, std::span<const Tensor> in, const TensorType& out) {
  bool by_zero = false;
  const DType dtype = out.dtype;
  Tensor t = broadcast_map(in, out, [&](std::span<const Number> v) {
    return integer_op(op, dtype, v[0], v.size() > 1 ? v[1] : 0, by_zero);
  });
  if (by_zero)
    return absl::InvalidArgumentError(
        fmt::format("{} of {}: a division by zero (ONNX leaves its result undefined)", op_name(op),
                    to_string(out)));
  return t;
}

Tensor filled(const TensorType& type, double value) {
  return from_numbers(type, std::vector<Number>(static_cast<std::size_t>(type.num_elements()), value));
}

absl::StatusOr<Tensor> value_op(Op op, const Attributes& a, std::span<const Tensor> in,
                                const TensorType& out) {
  if (moves_or_makes_values(op)) return made_value(op, a, in, out);
  switch (op) {  // inference checked that every input holds plain numbers
    case Op::kShape: {
      const auto [start, end] = shape_range(a, in[0].dims().size());
      return Tensor(out, std::vector<std::int64_t>(in[0].dims().begin() + start,
                                                   in[0].dims().begin() + end));
    }
    case Op::kCast:
      return from_numbers(out, numbers(in[0]));
    case Op::kWhere:
      return broadcast_map(in, out, [](std::span<const Number> v) { return v[0] != 0 ? v[1] : v[2]; });
    case Op::kNot:
      return broadcast_map(in, out, [](std::span<const Number> v) { return Number(v[0] == 0); });
    case Op::kIsNaN:
      return broadcast_map(in, out, [](std::span<const Number> v) { return Number(std::isnan(v[0])); });
    case Op::kIsInf: {
      const bool negative = *a.get_int("detect_negative") != 0;
      const bool positive = *a.get_int("detect_positive") != 0;
      return broadcast_map(in, out, [=](std::span<const Number> v) {
        return Number(std::isinf(v[0]) && (v[0] < 0 ? negative : positive));
      });
    }
    default:
      return broadcast_map(
          in, out, [op](std::span<const Number> v) { return Number(binary_value(op, v[0], v[1])); });
  }
}

namespace {

// ONNX's Add, Sub and Mul on any plain element type, for an opaque node
// (exporters compute positions and sizes in int64; integers as the IR's
// integer arithmetic computes them).
absl::StatusOr<Tensor> arithmetic(const std::string& type, std::span<const Tensor> in) {
  if (in.size() != 2 || in[0].dtype() != in[1].dtype() || !is_plain_number(in[0].dtype()))
    return absl::InvalidArgumentError(fmt::format("{} takes two tensors of numbers of one type", type));
  std::optional<Dims> dims = broadcast_dims(in[0].dims(), in[1].dims());
  if (!dims) return absl::InvalidArgumentError(fmt::format("{}'s inputs do not broadcast", type));
  const TensorType out{in[0].dtype(), *dims};
  if (is_integer(out.dtype))
    return integer_arithmetic(type == "Add" ? Op::kAdd : type == "Sub" ? Op::kSub : Op::kMul, in, out);
  if (type == "Add") return broadcast_map(in, out, [](std::span<const Number> v) { return v[0] + v[1]; });
  if (type == "Sub") return broadcast_map(in, out, [](std::span<const Number> v) { return v[0] - v[1]; });
  return broadcast_map(in, out, [](std::span<const Number> v) { return v[0] * v[1]; });
}

// ONNX's Slice, its bounds given as inputs (data, starts, ends, and axes
// and steps where given: the opaque node lists absent inputs by position).
absl::StatusOr<Tensor> slice_op(const Attributes& a, std::span<const Tensor> in) {
  std::vector<const Tensor*> args(5, nullptr);
  std::size_t next = 0;
  const Ints* absent = a.get_ints("absent_inputs");
  for (std::size_t pos = 0; pos < args.size() && next < in.size(); ++pos) {
    if (absent != nullptr && std::ranges::find(*absent, static_cast<std::int64_t>(pos)) != absent->end())
      continue;
    args[pos] = &in[next++];
  }
  if (next != in.size() || args[0] == nullptr || args[1] == nullptr || args[2] == nullptr)
    return absl::InvalidArgumentError("Slice takes data, starts and ends, and axes and steps");
  auto ints = [](const Tensor& t) -> std::optional<Ints> {
    if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) return std::nullopt;
    Ints out;
    for (Number v : numbers(t)) out.push_back(static_cast<std::int64_t>(v));
    return out;
  };
  std::optional<Ints> starts = ints(*args[1]), ends = ints(*args[2]);
  std::optional<Ints> axes = args[3] ? ints(*args[3]) : std::nullopt;
  std::optional<Ints> steps = args[4] ? ints(*args[4]) : std::nullopt;
  if (!starts || !ends || (args[3] && !axes) || (args[4] && !steps))
    return absl::InvalidArgumentError("Slice's bounds are not integers");
  if (!axes) {
    axes.emplace(starts->size());
    for (std::size_t i = 0; i < axes->size(); ++i) (*axes)[i] = static_cast<std::int64_t>(i);
  }
  if (!steps) steps = Ints(starts->size(), 1);
  absl::StatusOr<Attributes> attrs = normalize_attributes(
      Op::kSlice, {{"starts", *starts}, {"ends", *ends}, {"axes", *axes}, {"steps", *steps}});
  if (!attrs.ok()) return attrs.status();
  const ValueType x = ValueType::of(args[0]->type());
  if (absl::StatusOr<ValueType> t = infer_type(Op::kSlice, *attrs, std::span(&x, 1)); !t.ok())
    return t.status();
  if (absl::Status s = movable(Op::kSlice, *args[0]); !s.ok()) return s;
  return slice(*attrs, *args[0]);
}

}  // namespace

absl::StatusOr<Tensor> onnx_op(const Attributes& a, std::span<const Tensor> in) {
  const std::string* type = a.get_string("op_type");
  const std::string* domain = a.get_string("domain");
  const bool standard = domain == nullptr || domain->empty() || *domain == "ai.onnx";
  if (type != nullptr && standard) {
    if (*type == "Range") return range_of(in);
    if (*type == "Expand") return expand_by(in);
    if (*type == "Slice") return slice_op(a, in);
    if (*type == "ConstantOfShape") {
      absl::StatusOr<std::vector<TensorType>> out = opaque_outputs(a);
      const std::optional<double> fill = a.get_float("fill_value");
      if (!out.ok() || out->size() != 1 || !fill || in.size() != 1)
        return absl::InvalidArgumentError("ConstantOfShape takes a shape and a known fill");
      return constant_of_shape((*out)[0].dtype, *fill, in[0]);
    }
    if (*type == "Add" || *type == "Sub" || *type == "Mul") return arithmetic(*type, in);
  }
  return absl::UnimplementedError(
      fmt::format("cannot evaluate opaque operator '{}'", type ? *type : "?"));
}

}  // namespace saturn::tensor::kernels

namespace saturn::tensor {

std::optional<double> scalar_number(const Tensor& t) {
  if (t.size() != 1 || !is_plain_number(t.dtype())) return std::nullopt;
  return static_cast<double>(kernels::numbers(t)[0]);
}

}  // namespace saturn::tensor

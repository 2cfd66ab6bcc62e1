// Reference kernels: the value operators (Shape, Cast, Where, the
// comparisons and the logic operators) on any plain element type, and the
// ONNX operators the IR keeps opaque that exporters use on sizes and
// positions: Range and Expand, whose output shape is a value, and integer
// Add, Sub and Mul.
//
// Elements are read as long double, whose 64-bit significand (x86-64's
// extended format; binary128 elsewhere) holds every int64, uint64, float32
// and float64 exactly, so one code path serves every type without loss.
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

namespace saturn::tensor::kernels {

namespace {

using Number = long double;

template <typename T>
void read_bytes(std::span<const std::byte> bytes, std::vector<Number>& out) {
  for (std::size_t i = 0; i + sizeof(T) <= bytes.size(); i += sizeof(T)) {
    T x;
    std::memcpy(&x, bytes.data() + i, sizeof(T));
    out.push_back(static_cast<Number>(x));
  }
}

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

// f(args) at every element of the broadcast of `in`, as a tensor of `type`
// (whose dimensions are that broadcast).
template <typename F>
Tensor broadcast_map(std::span<const Tensor> in, const TensorType& type, F f) {
  std::vector<std::vector<Number>> values;
  std::vector<Ints> steps;
  for (const Tensor& t : in) {
    values.push_back(numbers(t));
    steps.push_back(broadcast_strides(t.dims(), type.dims));
  }
  const std::int64_t total = type.num_elements();
  std::vector<Number> out(static_cast<std::size_t>(total));
  const std::size_t rank = type.dims.size();
  Ints index(rank, 0);
  std::vector<std::int64_t> offset(in.size(), 0);
  std::vector<Number> args(in.size());
  for (std::int64_t i = 0; i < total; ++i) {
    for (std::size_t k = 0; k < in.size(); ++k) args[k] = values[k][offset[k]];
    out[static_cast<std::size_t>(i)] = f(args);
    for (std::size_t axis = rank; axis-- > 0;) {  // the next index, odometer-wise
      const bool carry = ++index[axis] == type.dims[axis];
      for (std::size_t k = 0; k < in.size(); ++k)
        offset[k] += carry ? -steps[k][axis] * (type.dims[axis] - 1) : steps[k][axis];
      if (!carry) break;
      index[axis] = 0;
    }
  }
  return from_numbers(type, out);
}

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

// x op y (or op x, for Neg and Abs) on integers of `dtype` as ONNX
// computes them: in the type's width, wrapping on overflow (two's
// complement), Div truncating toward zero. Every value of every integer
// type is exact as a Number; `by_zero` is set on a division by zero.
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

}  // namespace

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
    case Op::kExpand:
      return broadcast_map(in, out, [](std::span<const Number> v) { return v[0]; });
    default:
      return broadcast_map(
          in, out, [op](std::span<const Number> v) { return Number(binary_value(op, v[0], v[1])); });
  }
}

namespace {

// The elements a computed value may have: each is a Number while computed.
constexpr std::int64_t kMaxElements = kMaxEvaluatedBytes / kValueOpElementBytes;
static_assert(sizeof(Number) <= kValueOpElementBytes);

// A shape given as a value (Expand's, ConstantOfShape's): its dimensions,
// none negative, and at most kMaxElements elements in all.
absl::StatusOr<Dims> shape_value(const std::string& type, const Tensor& shape) {
  if (shape.dtype() != DType::kInt64 || shape.dims().size() != 1)
    return absl::InvalidArgumentError(
        fmt::format("{}'s shape must be a 1-D int64 tensor, is {}", type, to_string(shape.type())));
  const Dims dims(shape.ints().begin(), shape.ints().end());
  std::int64_t total = 1;
  for (std::int64_t d : dims) {
    if (d < 0)
      return absl::InvalidArgumentError(fmt::format("{}'s shape {} has a negative dimension", type,
                                                    to_string(dims)));
    if (d > 0 && total > kMaxElements / d)
      return absl::ResourceExhaustedError(
          fmt::format("{}'s shape {} holds more than the interpreter computes ({} bytes)", type,
                      to_string(dims), kMaxEvaluatedBytes));
    total *= d;
  }
  return dims;
}

// ONNX's Range: start, start + delta, ... short of limit (scalars of one type).
absl::StatusOr<Tensor> range(std::span<const Tensor> in) {
  if (in.size() != 3 || in[0].size() != 1 || in[1].size() != 1 || in[2].size() != 1 ||
      in[1].dtype() != in[0].dtype() || in[2].dtype() != in[0].dtype() ||
      !is_plain_number(in[0].dtype()) || in[0].dtype() == DType::kBool)
    return absl::InvalidArgumentError("Range takes three numeric scalars of one type");
  const Number start = numbers(in[0])[0], limit = numbers(in[1])[0], delta = numbers(in[2])[0];
  if (delta == 0) return absl::InvalidArgumentError("Range's delta is 0");
  const Number steps = std::max<Number>(0, std::ceil((limit - start) / delta));
  if (!std::isfinite(steps) || steps > static_cast<Number>(kMaxElements))
    return absl::ResourceExhaustedError(fmt::format(
        "Range from {} to {} by {} has more elements than the interpreter computes",
        static_cast<double>(start), static_cast<double>(limit), static_cast<double>(delta)));
  const auto count = static_cast<std::int64_t>(steps);
  std::vector<Number> out(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) out[static_cast<std::size_t>(i)] = start + delta * i;
  return from_numbers(TensorType{in[0].dtype(), {count}}, out);
}

// ONNX's Expand: x broadcast with the shape its second input gives.
absl::StatusOr<Tensor> expand(std::span<const Tensor> in) {
  if (in.size() != 2 || !is_plain_number(in[0].dtype()))
    return absl::InvalidArgumentError("Expand takes a tensor of numbers and a shape");
  absl::StatusOr<Dims> shape = shape_value("Expand", in[1]);
  if (!shape.ok()) return shape.status();
  std::optional<Dims> dims = broadcast_dims(in[0].dims(), *shape);
  if (!dims) return absl::InvalidArgumentError("Expand's shape does not broadcast with its input");
  if (TensorType out{in[0].dtype(), *dims}; out.num_elements() > kMaxElements)
    return absl::ResourceExhaustedError(fmt::format(
        "Expand to {} holds more than the interpreter computes", to_string(out)));
  return broadcast_map(in.first(1), TensorType{in[0].dtype(), *dims},
                       [](std::span<const Number> v) { return v[0]; });
}

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

// ONNX's ConstantOfShape: its fill (the importer's fill_value) in the
// shape its input gives, of the type the node's output has.
absl::StatusOr<Tensor> constant_of_shape(const Attributes& a, std::span<const Tensor> in) {
  absl::StatusOr<std::vector<TensorType>> out = opaque_outputs(a);
  const std::optional<double> fill = a.get_float("fill_value");
  if (!out.ok() || out->size() != 1 || !fill || in.size() != 1)
    return absl::InvalidArgumentError("ConstantOfShape takes a shape and a known fill");
  const DType dtype = (*out)[0].dtype;
  if (!is_plain_number(dtype))
    return absl::UnimplementedError("ConstantOfShape of this element type is not computed");
  absl::StatusOr<Dims> dims = shape_value("ConstantOfShape", in[0]);
  if (!dims.ok()) return dims.status();
  return filled(TensorType{dtype, *std::move(dims)}, *fill);
}

}  // namespace

absl::StatusOr<Tensor> onnx_op(const Attributes& a, std::span<const Tensor> in) {
  const std::string* type = a.get_string("op_type");
  const std::string* domain = a.get_string("domain");
  const bool standard = domain == nullptr || domain->empty() || *domain == "ai.onnx";
  if (type != nullptr && standard) {
    if (*type == "Range") return range(in);
    if (*type == "Expand") return expand(in);
    if (*type == "Slice") return slice_op(a, in);
    if (*type == "ConstantOfShape") return constant_of_shape(a, in);
    if (*type == "Add" || *type == "Sub" || *type == "Mul") return arithmetic(*type, in);
  }
  return absl::UnimplementedError(
      fmt::format("cannot evaluate opaque operator '{}'", type ? *type : "?"));
}

}  // namespace saturn::tensor::kernels

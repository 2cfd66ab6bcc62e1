// Reference kernels of the value operators that move or make values, on
// any plain element type, as ONNX defines them: Expand, Tile, Range,
// ConstantOfShape, Min, Max, CumSum, GatherElements, GatherND, ScatterND,
// ScatterElements and EyeLike (Resize: kernels_resize.cc). Indices
// may be negative (counted from the end of their axis); one out of range
// is an error, where ONNX leaves the result undefined.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels_internal.h"
#include "saturn/tensor/interpreter/numbers.h"

namespace saturn::tensor::kernels {

namespace {

// A shape given as a value (Expand's, ConstantOfShape's, Tile's repeats):
// its values, none negative, and at most kMaxElements elements in all.
absl::StatusOr<Dims> shape_value(std::string_view what, const Tensor& shape) {
  if (shape.dtype() != DType::kInt64 || shape.dims().size() != 1)
    return absl::InvalidArgumentError(
        fmt::format("{} must be a 1-D int64 tensor, is {}", what, to_string(shape.type())));
  const Dims dims(shape.ints().begin(), shape.ints().end());
  std::int64_t total = 1;
  for (std::int64_t d : dims) {
    if (d < 0)
      return absl::InvalidArgumentError(
          fmt::format("{} {} has a negative value", what, to_string(dims)));
    if (d > 0 && total > kMaxElements / d)
      return absl::ResourceExhaustedError(
          fmt::format("{} {} holds more than the interpreter computes ({} bytes)", what,
                      to_string(dims), kMaxEvaluatedBytes));
    total *= d;
  }
  return dims;
}

absl::Status within_limit(std::string_view op, const TensorType& out) {
  if (out.num_elements() > kMaxElements)
    return absl::ResourceExhaustedError(
        fmt::format("{} to {} holds more than the interpreter computes", op, to_string(out)));
  return absl::OkStatus();
}

// The flat offset of each element of a tensor of `dims`, by its index.
std::int64_t offset_of(const Dims& index, const Dims& strides) {
  std::int64_t at = 0;
  for (std::size_t k = 0; k < index.size(); ++k) at += index[k] * strides[k];
  return at;
}

// `i` as an index into an axis of `extent`: negative counts from the end.
std::optional<std::int64_t> index_into(Number i, std::int64_t extent) {
  auto at = static_cast<std::int64_t>(i);
  if (at < 0) at += extent;
  if (at < 0 || at >= extent) return std::nullopt;
  return at;
}

absl::Status out_of_range(std::string_view op, Number i, std::int64_t extent) {
  return absl::InvalidArgumentError(fmt::format(
      "{}: index {} is out of range for an axis of {}", op, static_cast<double>(i), extent));
}

absl::StatusOr<Tensor> tile(const Attributes& a, std::span<const Tensor> in) {
  Dims repeats(a.get_ints("repeats")->begin(), a.get_ints("repeats")->end());
  if (in.size() == 2) {
    absl::StatusOr<Dims> given = shape_value("Tile's repeats", in[1]);
    if (!given.ok()) return given.status();
    repeats = *std::move(given);
  }
  const Dims& dims = in[0].dims();
  if (repeats.size() != dims.size())
    return absl::InvalidArgumentError(fmt::format(
        "Tile: repeats {} must have one value per axis of {}", to_string(repeats), to_string(dims)));
  TensorType out{in[0].dtype(), dims};
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (__builtin_mul_overflow(dims[k], repeats[k], &out.dims[k]))
      return absl::ResourceExhaustedError(fmt::format(
          "Tile: {} repeated {} holds more than the interpreter computes", to_string(dims),
          to_string(repeats)));
  }
  if (auto s = within_limit("Tile", out); !s.ok()) return s;
  const std::vector<Number> x = numbers(in[0]);
  std::vector<Number> y(static_cast<std::size_t>(out.num_elements()));
  const Dims strides = strides_of(dims);
  Dims index(dims.size(), 0), source(dims.size(), 0);
  for (std::size_t i = 0; i < y.size(); ++i, next_index(index, out.dims)) {
    for (std::size_t k = 0; k < dims.size(); ++k) source[k] = index[k] % dims[k];
    y[i] = x[static_cast<std::size_t>(offset_of(source, strides))];
  }
  return from_numbers(out, y);
}

// x op y (Add, Mul) in `dtype`'s own arithmetic: integers wrap in their
// width (ONNX's Add and Mul), float32 rounds at each step.
Number arithmetic(Op op, DType dtype, Number x, Number y) {
  bool by_zero = false;  // never set by Add or Mul
  if (is_integer(dtype)) return integer_op(op, dtype, x, y, by_zero);
  if (dtype == DType::kFloat32) {
    const float a = static_cast<float>(x), b = static_cast<float>(y);
    return op == Op::kAdd ? a + b : a * b;
  }
  return op == Op::kAdd ? x + y : x * y;
}

// Where Min and Max meet a NaN, they give it (onnxruntime's kernels do).
Number least_or_most(bool least, Number x, Number y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) ? x : y;
  return least ? std::min(x, y) : std::max(x, y);
}

Tensor cumsum(const Attributes& a, const Tensor& x) {
  const DType dtype = x.dtype();
  const AxisView v = view_around(x.dims(), *normalize_axis(*a.get_int("axis"), x.dims().size()));
  const bool exclusive = *a.get_int("exclusive") != 0, reverse = *a.get_int("reverse") != 0;
  const std::vector<Number> in = numbers(x);
  std::vector<Number> out(in.size());
  for (std::int64_t o = 0; o < v.outer; ++o) {
    for (std::int64_t i = 0; i < v.inner; ++i) {
      Number sum = 0;
      for (std::int64_t step = 0; step < v.extent; ++step) {
        const std::int64_t e = reverse ? v.extent - 1 - step : step;
        const auto at = static_cast<std::size_t>((o * v.extent + e) * v.inner + i);
        if (exclusive) out[at] = sum;
        sum = arithmetic(Op::kAdd, dtype, sum, in[at]);
        if (!exclusive) out[at] = sum;
      }
    }
  }
  return from_numbers(x.type(), out);
}

absl::StatusOr<Tensor> gather_elements(const Attributes& a, const Tensor& data,
                                       const Tensor& indices, const TensorType& out) {
  const Dims& dims = data.dims();
  const auto axis = static_cast<std::size_t>(*normalize_axis(*a.get_int("axis"), dims.size()));
  const std::vector<Number> x = numbers(data), at = numbers(indices);
  const Dims strides = strides_of(dims);
  std::vector<Number> y(at.size());
  Dims index(out.dims.size(), 0);
  for (std::size_t i = 0; i < y.size(); ++i, next_index(index, out.dims)) {
    Dims source = index;
    for (std::size_t k = 0; k < dims.size(); ++k) {
      if (k != axis && source[k] >= dims[k])
        return absl::InvalidArgumentError(fmt::format(
            "GatherElements: indices {} exceed data {} off the axis", to_string(out.dims),
            to_string(dims)));
    }
    std::optional<std::int64_t> j = index_into(at[i], dims[axis]);
    if (!j) return out_of_range("GatherElements", at[i], dims[axis]);
    source[axis] = *j;
    y[i] = x[static_cast<std::size_t>(offset_of(source, strides))];
  }
  return from_numbers(out, y);
}

absl::StatusOr<Tensor> gather_nd(const Attributes& a, const Tensor& data, const Tensor& indices,
                                 const TensorType& out) {
  const Dims& dims = data.dims();
  const auto b = static_cast<std::size_t>(*a.get_int("batch_dims"));
  const auto k = static_cast<std::size_t>(indices.dims().back());
  const std::vector<Number> x = numbers(data), at = numbers(indices);
  const Dims strides = strides_of(dims);
  // Each index tuple picks a block of the trailing axes.
  std::int64_t block = 1;
  for (std::size_t r = b + k; r < dims.size(); ++r) block *= dims[r];
  const std::size_t tuples = at.size() / k;
  std::int64_t per_batch = 1;  // index tuples per batch position
  for (std::size_t r = b; r + 1 < indices.dims().size(); ++r) per_batch *= indices.dims()[r];
  std::vector<Number> y;
  y.reserve(static_cast<std::size_t>(out.num_elements()));
  for (std::size_t t = 0; t < tuples; ++t) {
    // The batch position of tuple t, as an offset into data.
    std::int64_t from = 0, batch = static_cast<std::int64_t>(t) / std::max<std::int64_t>(per_batch, 1);
    for (std::size_t r = b; r-- > 0;) {
      from += (batch % dims[r]) * strides[r];
      batch /= dims[r];
    }
    for (std::size_t r = 0; r < k; ++r) {
      const Number i = at[t * k + r];
      std::optional<std::int64_t> j = index_into(i, dims[b + r]);
      if (!j) return out_of_range("GatherND", i, dims[b + r]);
      from += *j * strides[b + r];
    }
    for (std::int64_t e = 0; e < block; ++e) y.push_back(x[static_cast<std::size_t>(from + e)]);
  }
  return from_numbers(out, y);
}

// How a scatter's `reduction` combines an element already there with its
// update (none: replaced), chosen once per node.
std::function<Number(Number, Number)> combiner(const std::string& reduction, DType dtype) {
  if (reduction == "add" || reduction == "mul") {
    const Op op = reduction == "add" ? Op::kAdd : Op::kMul;
    return [op, dtype](Number x, Number u) { return arithmetic(op, dtype, x, u); };
  }
  if (reduction == "max" || reduction == "min") {
    const bool least = reduction == "min";
    return [least](Number x, Number u) { return least_or_most(least, x, u); };
  }
  return [](Number, Number u) { return u; };
}

// ScatterND: each index tuple of `indices` [..., k] addresses a block of
// data's trailing axes past k, which its updates replace or combine with.
absl::StatusOr<Tensor> scatter_nd(const Attributes& a, std::span<const Tensor> in) {
  const Dims& dims = in[0].dims();
  const auto combine = combiner(*a.get_string("reduction"), in[0].dtype());
  const auto k = static_cast<std::size_t>(in[1].dims().back());
  std::vector<Number> y = numbers(in[0]);
  const std::vector<Number> at = numbers(in[1]), update = numbers(in[2]);
  const Dims strides = strides_of(dims);
  std::int64_t block = 1;
  for (std::size_t r = k; r < dims.size(); ++r) block *= dims[r];
  for (std::size_t t = 0; t < at.size() / k; ++t) {
    std::int64_t to = 0;
    for (std::size_t r = 0; r < k; ++r) {
      std::optional<std::int64_t> j = index_into(at[t * k + r], dims[r]);
      if (!j) return out_of_range("ScatterND", at[t * k + r], dims[r]);
      to += *j * strides[r];
    }
    for (std::int64_t e = 0; e < block; ++e) {
      Number& element = y[static_cast<std::size_t>(to + e)];
      element = combine(element, update[static_cast<std::size_t>(t) * block + e]);
    }
  }
  return from_numbers(in[0].type(), y);
}

// ScatterElements: the update at each index of `indices` goes to the same
// index of data with its `axis` coordinate replaced by the index's value.
absl::StatusOr<Tensor> scatter_elements(const Attributes& a, std::span<const Tensor> in) {
  const Dims& dims = in[0].dims();
  const auto combine = combiner(*a.get_string("reduction"), in[0].dtype());
  const auto axis = static_cast<std::size_t>(*normalize_axis(*a.get_int("axis"), dims.size()));
  std::vector<Number> y = numbers(in[0]);
  const std::vector<Number> at = numbers(in[1]), update = numbers(in[2]);
  const Dims strides = strides_of(dims);
  Dims index(dims.size(), 0);
  for (std::size_t i = 0; i < at.size(); ++i, next_index(index, in[1].dims())) {
    std::optional<std::int64_t> j = index_into(at[i], dims[axis]);
    if (!j) return out_of_range("ScatterElements", at[i], dims[axis]);
    Dims target = index;
    target[axis] = *j;
    Number& element = y[static_cast<std::size_t>(offset_of(target, strides))];
    element = combine(element, update[i]);
  }
  return from_numbers(in[0].type(), y);
}

}  // namespace

bool next_index(Dims& index, const Dims& dims) {
  for (std::size_t k = index.size(); k-- > 0;) {
    if (++index[k] < dims[k]) return true;
    index[k] = 0;
  }
  return false;
}

Tensor reduce_integers(Op op, const Tensor& x, const Dims& kept, const Ints& out_strides) {
  const DType dtype = x.dtype();
  const TensorType out{dtype, kept};
  // The empty Max and Min: infinities, which from_numbers saturates to the
  // type's ends.
  Number start = 0;
  if (op == Op::kReduceProd) start = 1;
  if (op == Op::kReduceMax) start = -INFINITY;
  if (op == Op::kReduceMin) start = INFINITY;
  std::vector<Number> acc(static_cast<std::size_t>(out.num_elements()), start);
  const std::vector<Number> in = numbers(x);
  for_each_index(x.dims(), out_strides, Ints(x.dims().size(), 0),
                 [&](std::int64_t i, std::int64_t o, std::int64_t) {
                   Number& a = acc[static_cast<std::size_t>(o)];
                   const Number v = in[static_cast<std::size_t>(i)];
                   switch (op) {
                     case Op::kReduceSum:
                       a = arithmetic(Op::kAdd, dtype, a, v);
                       break;
                     case Op::kReduceProd:
                       a = arithmetic(Op::kMul, dtype, a, v);
                       break;
                     default:
                       a = least_or_most(op == Op::kReduceMin, a, v);
                   }
                 });
  return from_numbers(out, acc);
}

absl::StatusOr<Tensor> range_of(std::span<const Tensor> in) {
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

absl::StatusOr<Tensor> expand_by(std::span<const Tensor> in) {
  if (in.size() != 2 || !is_plain_number(in[0].dtype()))
    return absl::InvalidArgumentError("Expand takes a tensor of numbers and a shape");
  absl::StatusOr<Dims> shape = shape_value("Expand's shape", in[1]);
  if (!shape.ok()) return shape.status();
  std::optional<Dims> dims = broadcast_dims(in[0].dims(), *shape);
  if (!dims) return absl::InvalidArgumentError("Expand's shape does not broadcast with its input");
  const TensorType out{in[0].dtype(), *dims};
  if (auto s = within_limit("Expand", out); !s.ok()) return s;
  return broadcast_map(in.first(1), out, [](std::span<const Number> v) { return v[0]; });
}

absl::StatusOr<Tensor> constant_of_shape(DType dtype, double fill, const Tensor& shape) {
  if (!is_plain_number(dtype))
    return absl::UnimplementedError("ConstantOfShape of this element type is not computed");
  absl::StatusOr<Dims> dims = shape_value("ConstantOfShape's shape", shape);
  if (!dims.ok()) return dims.status();
  return filled(TensorType{dtype, *std::move(dims)}, fill);
}

absl::StatusOr<Tensor> made_value(Op op, const Attributes& a, std::span<const Tensor> in,
                                  const TensorType& out) {
  switch (op) {
    case Op::kExpand:
      if (in.size() == 2) return expand_by(in);
      return broadcast_map(in, out, [](std::span<const Number> v) { return v[0]; });
    case Op::kTile:
      return tile(a, in);
    case Op::kRange:
      return range_of(in);
    case Op::kConstantOfShape:
      return constant_of_shape(out.dtype, *a.get_float("value"), in[0]);
    case Op::kMin:
    case Op::kMax: {
      const bool least = op == Op::kMin;
      return broadcast_map(in, out, [least](std::span<const Number> v) {
        return least_or_most(least, v[0], v[1]);
      });
    }
    case Op::kCumSum:
      return cumsum(a, in[0]);
    case Op::kGatherElements:
      return gather_elements(a, in[0], in[1], out);
    case Op::kGatherND:
      return gather_nd(a, in[0], in[1], out);
    case Op::kScatterND:
      return scatter_nd(a, in);
    case Op::kScatterElements:
      return scatter_elements(a, in);
    case Op::kResize:
      return resize(a, in, out);
    case Op::kGridSample:
      return grid_sample(a, in, out);
    case Op::kTrilu: {  // zero outside the triangle: column - row >= k (upper) or <= k
      std::vector<Number> y = numbers(in[0]);
      const std::size_t rank = out.dims.size();
      const std::int64_t rows = out.dims[rank - 2], cols = out.dims[rank - 1], k = *a.get_int("k");
      const bool upper = *a.get_int("upper") != 0;
      for (std::size_t e = 0; e < y.size(); ++e) {
        const auto at = static_cast<std::int64_t>(e) % (rows * cols);
        const std::int64_t diagonal = at % cols - at / cols;
        if (upper ? diagonal < k : diagonal > k) y[e] = 0;
      }
      return from_numbers(out, y);
    }
    case Op::kEyeLike: {  // ones where column = row + k
      std::vector<Number> y(static_cast<std::size_t>(out.num_elements()), 0);
      const std::int64_t rows = out.dims[0], cols = out.dims[1], k = *a.get_int("k");
      for (std::int64_t r = 0; r < rows; ++r) {
        if (r + k >= 0 && r + k < cols) y[static_cast<std::size_t>(r * cols + r + k)] = 1;
      }
      return from_numbers(out, y);
    }
    default:
      return absl::InvalidArgumentError(fmt::format("{} is not a value operator", op_name(op)));
  }
}

std::vector<Tensor> top_k(const Attributes& a, const Tensor& x, const ValueType& type) {
  const AxisView v = view_around(x.dims(), *normalize_axis(*a.get_int("axis"), x.dims().size()));
  const std::int64_t k = *a.get_int("k");
  const bool largest = *a.get_int("largest") != 0;
  const std::vector<Number> in = numbers(x);
  std::vector<Number> values(static_cast<std::size_t>(v.outer * k * v.inner));
  std::vector<Number> indices(values.size());
  std::vector<std::int64_t> order(static_cast<std::size_t>(v.extent));
  for (std::int64_t o = 0; o < v.outer; ++o) {
    for (std::int64_t i = 0; i < v.inner; ++i) {
      auto at = [&](std::int64_t e) { return in[static_cast<std::size_t>((o * v.extent + e) * v.inner + i)]; };
      // Largest (or smallest) first, NaN above every number, equal values
      // by their index: a total order, so the result does not depend on
      // the sort.
      auto before = [&](std::int64_t p, std::int64_t q) {
        const Number x = at(p), y = at(q);
        if (std::isnan(x) || std::isnan(y)) {
          if (std::isnan(x) != std::isnan(y)) return std::isnan(x) == largest;
        } else if (x != y) {
          return largest ? x > y : x < y;
        }
        return p < q;
      };
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (std::int64_t r = 0; r < k; ++r) {
        const auto to = static_cast<std::size_t>((o * k + r) * v.inner + i);
        values[to] = at(order[static_cast<std::size_t>(r)]);
        indices[to] = static_cast<Number>(order[static_cast<std::size_t>(r)]);
      }
    }
  }
  return {from_numbers(type.parts[0], values), from_numbers(type.parts[1], indices)};
}

}  // namespace saturn::tensor::kernels

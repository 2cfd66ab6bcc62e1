// Types of the value operators that move or make values: Expand, Tile,
// Range, ConstantOfShape, CumSum, GatherElements, GatherND, ScatterND,
// ScatterElements and Resize, and Min and Max. Each follows its ONNX definition; Range and ConstantOfShape, and
// Expand and Tile given their shape or repeats as a value, take their
// output's size from their attributes (sized_by_values, ops.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/inference.h"

namespace saturn::tensor::inference {

absl::Status Inference::need_index(std::size_t i) const {
  if (t(i).dtype != DType::kInt64 && t(i).dtype != DType::kInt32)
    return fail(op_, "input {} must hold int64 or int32 indices, is {}", i, to_string(t(i)));
  return absl::OkStatus();
}

// A shape or repeats given as a value: a 1-D int64 tensor of `length`.
absl::Status Inference::need_shape_value(std::size_t i, std::size_t length) const {
  if (t(i).dtype != DType::kInt64 || d(i).size() != 1 ||
      d(i)[0] != static_cast<std::int64_t>(length))
    return fail(op_, "input {} must be an int64[{}], is {}", i, length, to_string(t(i)));
  return absl::OkStatus();
}

namespace {

// A scatter's reduction: ONNX's none, add, mul, max or min; only none on bool.
absl::Status need_reduction(Op op, const std::string& reduction, DType dtype) {
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    return fail(op, "reduction '{}' is none of none, add, mul, max and min", reduction);
  if (reduction != "none" && dtype == DType::kBool)
    return fail(op, "reduction '{}' needs numbers, the data is bool", reduction);
  return absl::OkStatus();
}

absl::Status need_sizes(Op op, const Ints& dims, std::string_view what) {
  for (std::int64_t x : dims) {
    if (x < 0) return fail(op, "{} {} has a negative value", what, to_string(dims));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ValueType> Inference::made_value() {
  const DType dtype = t(0).dtype;
  if (dtype == DType::kBool && op_ != Op::kExpand && op_ != Op::kTile && op_ != Op::kEyeLike &&
      op_ != Op::kTrilu &&
      op_ != Op::kGatherElements && op_ != Op::kGatherND && op_ != Op::kScatterND &&
      op_ != Op::kScatterElements)
    return fail(op_, "input 0 must hold numbers, is {}", to_string(t(0)));
  switch (op_) {
    case Op::kExpand: {
      const Ints& shape = ints(a_, "shape");
      if (in_.size() == 2 && (t(1).dtype != DType::kInt64 || d(1).size() != 1))
        return fail(op_, "input 1 must be a 1-D int64 shape, is {}", to_string(t(1)));
      if (auto s = need_sizes(op_, shape, "shape"); !s.ok()) return s;
      std::optional<Dims> out = broadcast_dims(d(0), shape);
      if (!out) return fail(op_, "{} does not broadcast to {}", to_string(t(0)), to_string(shape));
      return like(0, *std::move(out));
    }
    case Op::kTile: {
      const Ints& repeats = ints(a_, "repeats");
      if (repeats.size() != d(0).size())
        return fail(op_, "repeats {} must have one value per axis of {}", to_string(repeats),
                    to_string(t(0)));
      if (auto s = need_sizes(op_, repeats, "repeats"); !s.ok()) return s;
      if (in_.size() == 2) {
        if (auto s = need_shape_value(1, repeats.size()); !s.ok()) return s;
      }
      Dims out = d(0);
      for (std::size_t k = 0; k < out.size(); ++k) {
        if (__builtin_mul_overflow(out[k], repeats[k], &out[k]))
          return fail(op_, "{} repeated {} overflows", to_string(t(0)), to_string(repeats));
      }
      return like(0, std::move(out));
    }
    case Op::kRange: {
      for (std::size_t i = 0; i < 3; ++i) {
        if (!d(i).empty() || t(i).dtype != dtype)
          return fail(op_, "input {} must be a scalar of input 0's type {}, is {}", i,
                      dtype_name(dtype), to_string(t(i)));
      }
      const Ints& shape = ints(a_, "shape");
      if (shape.size() != 1) return fail(op_, "its shape {} must have one value", to_string(shape));
      if (auto s = need_sizes(op_, shape, "shape"); !s.ok()) return s;
      return ValueType::of(TensorType{dtype, shape});
    }
    case Op::kConstantOfShape: {
      const Ints& shape = ints(a_, "shape");
      std::optional<DType> filled = parse_dtype(*a_.get_string("dtype"));
      if (!filled || !is_plain_number(*filled))
        return fail(op_, "cannot fill with '{}'", *a_.get_string("dtype"));
      if (auto s = need_shape_value(0, shape.size()); !s.ok()) return s;
      if (auto s = need_sizes(op_, shape, "shape"); !s.ok()) return s;
      return ValueType::of(TensorType{*filled, shape});
    }
    case Op::kMin:
    case Op::kMax: {
      if (t(1).dtype != dtype)
        return fail(op_, "input 1 must have input 0's element type {}, is {}", dtype_name(dtype),
                    to_string(t(1)));
      std::optional<Dims> out = broadcast_dims(d(0), d(1));
      if (!out) return fail(op_, "shapes {} and {} do not broadcast", to_string(d(0)), to_string(d(1)));
      return like(0, *std::move(out));
    }
    case Op::kCumSum:
      if (!normalize_axis(int_attr(a_, "axis"), d(0).size()))
        return fail(op_, "axis {} is out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
      return in_[0];
    case Op::kGatherElements: {
      if (auto s = need_index(1); !s.ok()) return s;
      if (d(0).empty() || d(1).size() != d(0).size())
        return fail(op_, "indices {} must have the rank of data {}", to_string(t(1)), to_string(t(0)));
      if (!normalize_axis(int_attr(a_, "axis"), d(0).size()))
        return fail(op_, "axis {} is out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
      return like(0, d(1));
    }
    case Op::kGatherND: {
      if (t(1).dtype != DType::kInt64)
        return fail(op_, "input 1 must hold int64 indices, is {}", to_string(t(1)));
      const auto r = static_cast<std::int64_t>(d(0).size()), q = static_cast<std::int64_t>(d(1).size());
      const std::int64_t b = int_attr(a_, "batch_dims");
      if (r < 1 || q < 1 || b < 0 || b >= std::min(r, q))
        return fail(op_, "batch_dims {} must be below the ranks of {} and {}", b, to_string(t(0)),
                    to_string(t(1)));
      const std::int64_t k = d(1).back();
      if (k < 1 || k > r - b)
        return fail(op_, "indices {} index {} axes of {} after {} batch axes", to_string(t(1)), k,
                    to_string(t(0)), b);
      for (std::int64_t i = 0; i < b; ++i) {
        if (d(0)[i] != d(1)[i])
          return fail(op_, "the batch axes of {} and {} differ", to_string(t(0)), to_string(t(1)));
      }
      Dims out(d(1).begin(), d(1).end() - 1);
      out.insert(out.end(), d(0).begin() + b + k, d(0).end());
      return like(0, std::move(out));
    }
    case Op::kScatterND:
    case Op::kScatterElements:
      return scatter();
    case Op::kResize:
      return resize();
    case Op::kGridSample:
      return grid_sample();
    case Op::kTrilu:  // input 0's type: a batch of matrices
      if (d(0).size() < 2) return fail(op_, "input 0 must be a matrix or a batch of them, is {}", to_string(t(0)));
      return like(0, d(0));
    case Op::kEyeLike: {  // a matrix like input 0, of `dtype` (input 0's when empty)
      const std::string& name = *a_.get_string("dtype");
      const std::optional<DType> filled = name.empty() ? std::optional(dtype) : parse_dtype(name);
      if (!filled || !is_plain_number(*filled))
        return fail(op_, "cannot fill with '{}'", name);
      if (d(0).size() != 2) return fail(op_, "input 0 must be a matrix, is {}", to_string(t(0)));
      return ValueType::of(TensorType{*filled, d(0)});
    }
    default:
      return fail(op_, "not a value operator");
  }
}

// TopK: the k largest (or smallest) along `axis`, and their int64 indices.
absl::StatusOr<ValueType> Inference::top_k() {
  if (!is_plain_number(t(0).dtype))
    return fail(op_, "input 0 must hold numbers, is {}", to_string(t(0)));
  const std::optional<std::int64_t> axis = normalize_axis(*a_.get_int("axis"), d(0).size());
  if (!axis) return fail(op_, "axis {} is outside {}", *a_.get_int("axis"), to_string(t(0)));
  const std::int64_t k = *a_.get_int("k");
  if (k < 0 || k > d(0)[static_cast<std::size_t>(*axis)])
    return fail(op_, "k {} is outside [0, {}] along axis {} of {}", k,
                d(0)[static_cast<std::size_t>(*axis)], *axis, to_string(t(0)));
  Dims out = d(0);
  out[static_cast<std::size_t>(*axis)] = k;
  return ValueType::tuple({TensorType{t(0).dtype, out}, TensorType{DType::kInt64, out}});
}

// ScatterND (data, int64 indices [..., k], updates [...indices' lead, data
// past k]) and ScatterElements (data, indices and updates of one rank,
// indices no larger than data off `axis`, updates indices' shape): data's
// type, its addressed elements replaced or combined by `reduction`.
absl::StatusOr<ValueType> Inference::scatter() {
  const DType dtype = t(0).dtype;
  if (t(2).dtype != dtype)
    return fail(op_, "updates {} must have data's element type {}", to_string(t(2)),
                dtype_name(dtype));
  if (auto s = need_reduction(op_, *a_.get_string("reduction"), dtype); !s.ok()) return s;
  if (op_ == Op::kScatterND) {
    if (t(1).dtype != DType::kInt64)
      return fail(op_, "input 1 must hold int64 indices, is {}", to_string(t(1)));
    const std::size_t r = d(0).size();
    const std::int64_t k = d(1).empty() ? 0 : d(1).back();
    if (r < 1 || k < 1 || k > static_cast<std::int64_t>(r))
      return fail(op_, "indices {} must index 1 to {} axes of {}", to_string(t(1)), r,
                  to_string(t(0)));
    Dims expected(d(1).begin(), d(1).end() - 1);
    expected.insert(expected.end(), d(0).begin() + k, d(0).end());
    if (d(2) != expected)
      return fail(op_, "updates {} must be {} for indices {} into {}", to_string(t(2)),
                  to_string(expected), to_string(t(1)), to_string(t(0)));
    return in_[0];
  }
  if (auto s = need_index(1); !s.ok()) return s;
  const std::optional<std::int64_t> axis = normalize_axis(int_attr(a_, "axis"), d(0).size());
  if (!axis) return fail(op_, "axis {} is out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
  if (d(1).size() != d(0).size() || d(2) != d(1))
    return fail(op_, "indices {} and updates {} must have one shape, of data {}'s rank",
                to_string(t(1)), to_string(t(2)), to_string(t(0)));
  for (std::size_t k = 0; k < d(0).size(); ++k) {
    if (static_cast<std::int64_t>(k) != *axis && d(1)[k] > d(0)[k])
      return fail(op_, "indices {} exceed data {} off axis {}", to_string(t(1)), to_string(t(0)),
                  *axis);
  }
  return in_[0];
}

namespace {

bool one_of(const std::string& s, std::initializer_list<std::string_view> names) {
  return std::ranges::find(names, s) != names.end();
}

}  // namespace

// Resize (X, its scales or sizes as a value: float32 or int64, one per axis
// of X): X's type at the output's dimensions `shape`. Nearest picks values
// of any number type; linear and cubic interpolate floats.
absl::StatusOr<ValueType> Inference::resize() {
  const std::string& mode = *a_.get_string("mode");
  const std::string& transform = *a_.get_string("coordinate_transformation_mode");
  const std::string& nearest = *a_.get_string("nearest_mode");
  if (!one_of(mode, {"nearest", "linear", "cubic"}))
    return fail(op_, "mode '{}' is none of nearest, linear and cubic", mode);
  if (!one_of(transform, {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                          "align_corners", "asymmetric"}))
    return fail(op_, "coordinate_transformation_mode '{}' is not computed", transform);
  if (!one_of(nearest, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}))
    return fail(op_, "nearest_mode '{}' is not one of ONNX's", nearest);
  if (mode != "nearest") {
    if (auto s = need_float(0); !s.ok()) return s;
  }
  const std::size_t rank = d(0).size();
  if (rank == 0 || (t(1).dtype != DType::kFloat32 && t(1).dtype != DType::kInt64) ||
      d(1) != Dims{static_cast<std::int64_t>(rank)})
    return fail(op_, "input 1 must be float32 scales or int64 sizes, one per axis of {}, is {}",
                to_string(t(0)), to_string(t(1)));
  const Ints& shape = ints(a_, "shape");
  if (shape.size() != rank)
    return fail(op_, "its shape {} must have one value per axis of {}", to_string(shape),
                to_string(t(0)));
  if (auto s = need_sizes(op_, shape, "shape"); !s.ok()) return s;
  return like(0, shape);
}

// GridSample: X [N, C, H, W] sampled at grid [N, H', W', 2] (x and y in
// [-1, 1]), both of one float type, into [N, C, H', W'].
absl::StatusOr<ValueType> Inference::grid_sample() {
  if (!one_of(*a_.get_string("mode"), {"bilinear", "nearest", "bicubic"}))
    return fail(op_, "mode '{}' is none of bilinear, nearest and bicubic", *a_.get_string("mode"));
  if (!one_of(*a_.get_string("padding_mode"), {"zeros", "border", "reflection"}))
    return fail(op_, "padding_mode '{}' is none of zeros, border and reflection",
                *a_.get_string("padding_mode"));
  if (auto s = need_float(0); !s.ok()) return s;
  if (t(1).dtype != t(0).dtype || d(0).size() != 4 || d(1).size() != 4 || d(1)[0] != d(0)[0] ||
      d(1)[3] != 2)
    return fail(op_, "needs X [N, C, H, W] and a grid [N, H', W', 2] of its type, has {} and {}",
                to_string(t(0)), to_string(t(1)));
  return like(0, Dims{d(0)[0], d(0)[1], d(1)[1], d(1)[2]});
}

}  // namespace saturn::tensor::inference

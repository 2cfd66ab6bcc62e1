#include "saturn/tensor/infer.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/tensor/inference.h"

namespace saturn::tensor {

namespace inference {

absl::StatusOr<ValueType> Inference::run() {
  auto [lo, hi] = input_count(op_);
  if (static_cast<int>(in_.size()) < lo || static_cast<int>(in_.size()) > hi) {
    return fail(op_, "takes {} inputs, got {}",
                lo == hi ? fmt::format("{}", lo) : fmt::format("{} to {}", lo, hi), in_.size());
  }
  if (op_ != Op::kTupleGet) {
    for (std::size_t i = 0; i < in_.size(); ++i) {
      if (in_[i].is_tuple) return fail(op_, "input {} is a tuple, not a tensor", i);
    }
  }
  absl::StatusOr<ValueType> out = infer();
  if (!out.ok()) return out;
  for (const TensorType& part : out->parts) {
    if (!within_size_limit(part))
      return fail(op_, "its output {} would hold more than {} TiB", to_string(part),
                  kMaxTensorBytes >> 40);
  }
  return out;
}

absl::StatusOr<ValueType> Inference::infer() {
  if (is_unary_elementwise(op_)) return unary();
  if (is_value_op(op_)) return value_op();
  if (is_reduction(op_)) return reduce();
  if (is_quantization(op_)) return quantization();
  if (is_integer_operator(op_)) return integer_operator();
  switch (op_) {
    case Op::kInput:
    case Op::kWeight:
    case Op::kConstant:
      return leaf();
    case Op::kMatMul:
      return matmul();
    case Op::kGemm:
      return gemm();
    case Op::kConv:
      return conv();
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kDiv:
    case Op::kPow:
      return broadcast();
    case Op::kSoftmax:
      return softmax();
    case Op::kLayerNorm:
      return layer_norm();
    case Op::kSimplifiedLayerNorm:
      return simplified_layer_norm();
    case Op::kSkipSimplifiedLayerNorm:
    case Op::kSkipLayerNorm:
      return skip_layer_norm();
    case Op::kRotaryEmbedding:
      return rotary_embedding();
    case Op::kGroupQueryAttention:
      return group_query_attention();
    case Op::kBatchNorm:
      return batch_norm();
    case Op::kInstanceNorm:
      return instance_norm();
    case Op::kTranspose:
      return transpose();
    case Op::kReshape:
      return reshape();
    case Op::kFlatten:
      return flatten();
    case Op::kConcat:
      return concat();
    case Op::kSplit:
      return split();
    case Op::kTopK:
      return top_k();
    case Op::kSlice:
      return slice();
    case Op::kGather:
      return gather();
    case Op::kPad:
      return pad();
    case Op::kMaxPool:
    case Op::kAveragePool:
      return pool();
    case Op::kGlobalAveragePool:
      return global_average_pool();
    case Op::kIdentity:
    case Op::kDropout:
      return in_[0];
    case Op::kEnlarge:
      return enlarge();
    case Op::kMergeGroups:
      return merge_groups();
    case Op::kTuple:
      return tuple();
    case Op::kTupleGet:
      return tuple_get();
    case Op::kOpaque:
      return opaque();
    default:  // the unary elementwise operators, typed above
      break;
  }
  return fail(op_, "unknown operator");
}

absl::Status Inference::need_float(std::size_t i) const {
  if (!is_float(t(i).dtype))
    return fail(op_, "input {} must be float32 or float16, is {}", i, to_string(t(i)));
  if (i > 0 && is_float(t(0).dtype) && t(i).dtype != t(0).dtype)
    return fail(op_, "input {} must have input 0's element type {}, is {}", i,
                dtype_name(t(0).dtype), to_string(t(i)));
  return absl::OkStatus();
}

absl::Status Inference::need_rank(std::size_t i, std::size_t rank) const {
  if (t(i).rank() != rank)
    return fail(op_, "input {} must have rank {}, is {}", i, rank, to_string(t(i)));
  return absl::OkStatus();
}

absl::Status Inference::need_positive(const Ints& v, std::string_view what, std::size_t n) const {
  if (v.size() != n) return fail(op_, "{} needs {} values, has {}", what, n, v.size());
  for (std::int64_t x : v) {
    if (x <= 0) return fail(op_, "{} must be positive, is {}", what, to_string(v));
  }
  return absl::OkStatus();
}

absl::Status Inference::need_pads(const Ints& pads, std::size_t n) const {
  if (pads.size() != n) return fail(op_, "pads needs {} values, has {}", n, pads.size());
  for (std::int64_t x : pads) {
    if (x < 0) return fail(op_, "pads must not be negative, is {}", to_string(pads));
  }
  return absl::OkStatus();
}

absl::StatusOr<ValueType> Inference::leaf() {
  const std::string* dtype_name = a_.get_string("dtype");
  std::optional<DType> dtype = parse_dtype(*dtype_name);
  if (!dtype) return fail(op_, "unknown dtype '{}'", *dtype_name);
  const Ints& shape = ints(a_, "shape");
  for (std::int64_t x : shape) {
    if (x < 0) return fail(op_, "shape {} has a negative dimension", to_string(shape));
  }
  return ValueType::of(TensorType{*dtype, shape});
}

absl::StatusOr<ValueType> Inference::broadcast() {
  // Add, Sub, Mul and Div compute on integers too, as ONNX defines them
  // (wrapping; Div truncates toward zero): position ids and sizes.
  if (op_ != Op::kPow && is_integer(t(0).dtype)) {
    if (t(1).dtype != t(0).dtype)
      return fail(op_, "input 1 must have input 0's element type {}, is {}",
                  dtype_name(t(0).dtype), to_string(t(1)));
  } else {
    for (std::size_t i = 0; i < 2; ++i) {
      if (auto s = need_float(i); !s.ok()) return s;
    }
  }
  std::optional<Dims> out = broadcast_dims(d(0), d(1));
  if (!out) return fail(op_, "shapes {} and {} do not broadcast", to_string(d(0)), to_string(d(1)));
  return like(0, *out);
}

absl::StatusOr<ValueType> Inference::unary() {
  // Neg (of signed integers), Abs and Sign compute on integers too.
  const DType dtype = t(0).dtype;
  if (((op_ == Op::kAbs || op_ == Op::kSign) && is_integer(dtype)) ||
      (op_ == Op::kNeg && is_integer(dtype) && !is_unsigned_integer(dtype)))
    return in_[0];
  if (auto s = need_float(0); !s.ok()) return s;
  if (op_ == Op::kClip && *a_.get_float("min") > *a_.get_float("max"))
    return fail(op_, "min exceeds max");
  return in_[0];
}

absl::StatusOr<ValueType> Inference::value_op() {
  for (std::size_t i = 0; i < in_.size(); ++i) {
    if (!is_plain_number(t(i).dtype))
      return fail(op_, "input {} must hold numbers or bools, is {}", i, to_string(t(i)));
  }
  auto need_bool = [&](std::size_t i) {
    return t(i).dtype == DType::kBool
               ? absl::OkStatus()
               : fail(op_, "input {} must be bool, is {}", i, to_string(t(i)));
  };
  // The broadcast of inputs [first, in_.size()), in element type `dtype`.
  auto broadcast_from = [&](std::size_t first, DType dtype) -> absl::StatusOr<ValueType> {
    Dims out = d(first);
    for (std::size_t i = first + 1; i < in_.size(); ++i) {
      if (t(i).dtype != t(first).dtype)
        return fail(op_, "input {} must have input {}'s element type {}, is {}", i, first,
                    dtype_name(t(first).dtype), to_string(t(i)));
      std::optional<Dims> b = broadcast_dims(out, d(i));
      if (!b) return fail(op_, "shapes {} and {} do not broadcast", to_string(out), to_string(d(i)));
      out = *std::move(b);
    }
    return ValueType::of(TensorType{dtype, std::move(out)});
  };
  if (moves_or_makes_values(op_)) return made_value();
  switch (op_) {
    case Op::kShape: {
      const auto [start, end] = shape_range(a_, t(0).rank());
      return ValueType::of(TensorType{DType::kInt64, {end - start}});
    }
    case Op::kCast: {
      std::optional<DType> to = parse_dtype(*a_.get_string("to"));
      if (!to || !is_plain_number(*to)) return fail(op_, "cannot cast to '{}'", *a_.get_string("to"));
      return ValueType::of(TensorType{*to, d(0)});
    }
    case Op::kWhere: {
      if (auto s = need_bool(0); !s.ok()) return s;
      absl::StatusOr<ValueType> values = broadcast_from(1, t(1).dtype);
      if (!values.ok()) return values;
      std::optional<Dims> out = broadcast_dims(d(0), values->tensor().dims);
      if (!out) return fail(op_, "the condition {} does not broadcast to {}", to_string(d(0)),
                            to_string(values->tensor().dims));
      return like(1, *std::move(out));
    }
    case Op::kAnd:
    case Op::kOr:
    case Op::kNot:
      if (auto s = need_bool(0); !s.ok()) return s;
      return broadcast_from(0, DType::kBool);
    case Op::kIsNaN:
    case Op::kIsInf:
      if (!is_float(t(0).dtype) && t(0).dtype != DType::kFloat64)
        return fail(op_, "input 0 must be float16, float32 or float64, is {}", to_string(t(0)));
      return ValueType::of(TensorType{DType::kBool, d(0)});
    default:  // the comparisons
      return broadcast_from(0, DType::kBool);
  }
}

absl::StatusOr<ValueType> Inference::tuple() {
  std::vector<TensorType> parts;
  for (const ValueType& v : in_) parts.push_back(v.tensor());
  return ValueType::tuple(std::move(parts));
}

absl::StatusOr<ValueType> Inference::tuple_get() {
  std::int64_t index = int_attr(a_, "index");
  if (!in_[0].is_tuple) return fail(op_, "input is {}, not a tuple", to_string(in_[0]));
  if (index < 0 || index >= static_cast<std::int64_t>(in_[0].parts.size())) {
    return fail(op_, "index {} out of range for {}", index, to_string(in_[0]));
  }
  return ValueType::of(in_[0].parts[index]);
}

absl::StatusOr<ValueType> Inference::opaque() {
  absl::StatusOr<std::vector<TensorType>> outs = opaque_outputs(a_);
  if (!outs.ok()) return outs.status();
  if (outs->size() == 1) return ValueType::of((*outs)[0]);
  return ValueType::tuple(std::move(*outs));
}

}  // namespace inference

using inference::Ints;

std::optional<Dims> broadcast_dims(const Dims& a, const Dims& b) {
  Dims out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    std::int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

Dims strides_of(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

Dims broadcast_strides(const Dims& in, const Dims& out) {
  Dims s(out.size(), 0);
  const Dims own = strides_of(in);
  const std::size_t shift = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) s[shift + i] = in[i] == 1 ? 0 : own[i];
  return s;
}

std::optional<std::int64_t> normalize_axis(std::int64_t axis, std::size_t rank) {
  std::int64_t r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

std::pair<std::int64_t, std::int64_t> shape_range(const Attributes& shape, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  auto clamp = [&](std::int64_t x) { return std::clamp(x < 0 ? x + r : x, std::int64_t{0}, r); };
  const std::int64_t start = clamp(shape.get_int("start").value_or(0));
  return {start, std::max(start, clamp(shape.get_int("end").value_or(r)))};
}

SliceRange slice_range(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) {
  assert(dim >= 0 && step != 0);
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  // A step beyond the dimension takes one element, as one of dim + 1 does;
  // clamped so that the arithmetic below cannot overflow.
  step = std::clamp<std::int64_t>(step, -(dim + 1), dim + 1);
  SliceRange r;
  r.step = step;
  if (step > 0) {
    start = std::clamp<std::int64_t>(start, 0, dim);
    end = std::clamp<std::int64_t>(end, 0, dim);
    r.count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<std::int64_t>(start, -1, dim - 1);
    end = std::clamp<std::int64_t>(end, -1, dim - 1);
    r.count = start > end ? (start - end - step - 1) / -step : 0;
  }
  r.start = start;
  return r;
}

std::int64_t window_output(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                           std::int64_t pad_begin, std::int64_t pad_end, std::int64_t dilation) {
  // The attributes come from files: a product or sum that overflows is a
  // kernel that fits nowhere (0) or an output no size limit allows.
  std::int64_t span = 0, padded = 0;
  if (__builtin_mul_overflow(dilation, kernel - 1, &span) || __builtin_add_overflow(span, 1, &span))
    return 0;
  if (__builtin_add_overflow(in, pad_begin, &padded) ||
      __builtin_add_overflow(padded, pad_end, &padded))
    return std::numeric_limits<std::int64_t>::max();
  if (padded < span) return 0;
  return (padded - span) / stride + 1;
}

absl::StatusOr<std::vector<TensorType>> opaque_outputs(const Attributes& attributes) {
  const Ints* shapes = attributes.get_ints("out_shapes");
  const Ints* dtypes = attributes.get_ints("out_dtypes");
  auto bad = [] { return absl::InvalidArgumentError("Opaque: malformed out_shapes/out_dtypes"); };
  if (shapes == nullptr || dtypes == nullptr) return bad();
  std::vector<TensorType> out;
  std::size_t i = 0;
  while (i < shapes->size()) {
    std::int64_t rank = (*shapes)[i++];
    if (rank < 0 || i + rank > shapes->size() || out.size() >= dtypes->size()) return bad();
    TensorType t;
    std::int64_t code = (*dtypes)[out.size()];
    if (code < 0 || code >= kNumDTypes) return bad();
    t.dtype = static_cast<DType>(code);
    t.dims.assign(shapes->begin() + i, shapes->begin() + i + rank);
    i += rank;
    out.push_back(std::move(t));
  }
  if (out.empty() || out.size() != dtypes->size()) return bad();
  return out;
}

void set_opaque_outputs(Attributes& attributes, std::span<const TensorType> outputs) {
  Ints shapes, dtypes;
  for (const TensorType& t : outputs) {
    shapes.push_back(static_cast<std::int64_t>(t.rank()));
    shapes.insert(shapes.end(), t.dims.begin(), t.dims.end());
    dtypes.push_back(static_cast<std::int64_t>(t.dtype));
  }
  attributes.set("out_shapes", shapes);
  attributes.set("out_dtypes", dtypes);
}

absl::StatusOr<ValueType> infer_type(Op op, const Attributes& attributes,
                                     std::span<const ValueType> inputs) {
  return inference::Inference(op, attributes, inputs).run();
}

}  // namespace saturn::tensor

#include "tensor/infer.h"

#include <algorithm>
#include <numeric>

#include "fmt/format.h"

namespace saturn::tensor {

namespace {

using Ints = std::vector<std::int64_t>;

template <typename... Args>
absl::Status fail(Op op, fmt::format_string<Args...> f, Args&&... args) {
  return absl::InvalidArgumentError(
      fmt::format("{}: {}", op_name(op), fmt::format(f, std::forward<Args>(args)...)));
}

const Ints& ints(const Attributes& a, std::string_view key) {
  static const Ints kEmpty;
  const Ints* v = a.get_ints(key);
  return v ? *v : kEmpty;
}
std::int64_t int_attr(const Attributes& a, std::string_view key) {
  return a.get_int(key).value_or(0);
}

class Inference {
 public:
  Inference(Op op, const Attributes& a, std::span<const ValueType> in) : op_(op), a_(a), in_(in) {}

  absl::StatusOr<ValueType> run() {
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

 private:
  const TensorType& t(std::size_t i) const { return in_[i].tensor(); }
  const Dims& d(std::size_t i) const { return in_[i].tensor().dims; }

  absl::Status need_float(std::size_t i) const {
    if (t(i).dtype != DType::kFloat32)
      return fail(op_, "input {} must be float32, is {}", i, to_string(t(i)));
    return absl::OkStatus();
  }
  absl::Status need_rank(std::size_t i, std::size_t rank) const {
    if (t(i).rank() != rank)
      return fail(op_, "input {} must have rank {}, is {}", i, rank, to_string(t(i)));
    return absl::OkStatus();
  }
  absl::Status need_positive(const Ints& v, std::string_view what, std::size_t n) const {
    if (v.size() != n) return fail(op_, "{} needs {} values, has {}", what, n, v.size());
    for (std::int64_t x : v) {
      if (x <= 0) return fail(op_, "{} must be positive, is {}", what, to_string(v));
    }
    return absl::OkStatus();
  }
  absl::Status need_pads(const Ints& pads, std::size_t n) const {
    if (pads.size() != n) return fail(op_, "pads needs {} values, has {}", n, pads.size());
    for (std::int64_t x : pads) {
      if (x < 0) return fail(op_, "pads must not be negative, is {}", to_string(pads));
    }
    return absl::OkStatus();
  }

  static ValueType f32(Dims dims) {
    return ValueType::of(TensorType{DType::kFloat32, std::move(dims)});
  }
  ValueType like(std::size_t i, Dims dims) const {
    return ValueType::of(TensorType{t(i).dtype, std::move(dims)});
  }

  absl::StatusOr<ValueType> leaf() {
    const std::string* dtype_name = a_.get_string("dtype");
    std::optional<DType> dtype = parse_dtype(*dtype_name);
    if (!dtype) return fail(op_, "unknown dtype '{}'", *dtype_name);
    const Ints& shape = ints(a_, "shape");
    for (std::int64_t x : shape) {
      if (x < 0) return fail(op_, "shape {} has a negative dimension", to_string(shape));
    }
    return ValueType::of(TensorType{*dtype, shape});
  }

  absl::StatusOr<ValueType> broadcast() {
    for (std::size_t i = 0; i < 2; ++i) {
      if (auto s = need_float(i); !s.ok()) return s;
    }
    std::optional<Dims> out = broadcast_dims(d(0), d(1));
    if (!out)
      return fail(op_, "shapes {} and {} do not broadcast", to_string(d(0)), to_string(d(1)));
    return f32(*out);
  }

  absl::StatusOr<ValueType> matmul() {
    for (std::size_t i = 0; i < 2; ++i) {
      if (auto s = need_float(i); !s.ok()) return s;
      if (t(i).rank() < 2)
        return fail(op_, "input {} must have rank 2 or more, is {}", i, to_string(t(i)));
    }
    const Dims& a = d(0);
    const Dims& b = d(1);
    if (a.back() != b[b.size() - 2]) {
      return fail(op_, "inner dimensions differ: {} x {}", to_string(t(0)), to_string(t(1)));
    }
    std::optional<Dims> batch =
        broadcast_dims(Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2));
    if (!batch)
      return fail(op_, "batch dimensions of {} and {} do not broadcast", to_string(a),
                  to_string(b));
    batch->push_back(a[a.size() - 2]);
    batch->push_back(b.back());
    return f32(*batch);
  }

  absl::StatusOr<ValueType> gemm() {
    for (std::size_t i = 0; i < in_.size(); ++i) {
      if (auto s = need_float(i); !s.ok()) return s;
    }
    for (std::size_t i = 0; i < 2; ++i) {
      if (auto s = need_rank(i, 2); !s.ok()) return s;
    }
    bool ta = int_attr(a_, "transA") != 0, tb = int_attr(a_, "transB") != 0;
    std::int64_t m = d(0)[ta ? 1 : 0], k = d(0)[ta ? 0 : 1];
    std::int64_t kb = d(1)[tb ? 1 : 0], n = d(1)[tb ? 0 : 1];
    if (k != kb)
      return fail(op_, "inner dimensions differ: {} x {}", to_string(t(0)), to_string(t(1)));
    if (in_.size() == 3) {
      std::optional<Dims> c = broadcast_dims(d(2), Dims{m, n});
      if (!c || *c != Dims{m, n})
        return fail(op_, "bias {} does not broadcast to [{},{}]", to_string(d(2)), m, n);
    }
    return f32(Dims{m, n});
  }

  absl::StatusOr<ValueType> conv() {
    for (std::size_t i = 0; i < in_.size(); ++i) {
      if (auto s = need_float(i); !s.ok()) return s;
    }
    if (auto s = need_rank(0, 4); !s.ok()) return s;
    if (auto s = need_rank(1, 4); !s.ok()) return s;
    const Ints& strides = ints(a_, "strides");
    const Ints& dil = ints(a_, "dilations");
    const Ints& pads = ints(a_, "pads");
    std::int64_t group = int_attr(a_, "group");
    if (auto s = need_positive(strides, "strides", 2); !s.ok()) return s;
    if (auto s = need_positive(dil, "dilations", 2); !s.ok()) return s;
    if (auto s = need_pads(pads, 4); !s.ok()) return s;
    const std::string& act = *a_.get_string("activation");
    if (act != "none" && act != "relu" && act != "sigmoid" && act != "tanh") {
      return fail(op_, "unknown activation '{}' (none, relu, sigmoid or tanh)", act);
    }
    const Dims& x = d(0);
    const Dims& w = d(1);
    if (group <= 0 || x[1] % group != 0 || w[0] % group != 0) {
      return fail(op_, "group {} does not divide input channels {} and output channels {}", group,
                  x[1], w[0]);
    }
    if (w[1] * group != x[1]) {
      return fail(op_, "weight {} expects {} input channels (group {}), input {} has {}",
                  to_string(w), w[1] * group, group, to_string(x), x[1]);
    }
    if (in_.size() == 3 && d(2) != Dims{w[0]}) {
      return fail(op_, "bias must be [{}], is {}", w[0], to_string(d(2)));
    }
    Dims out{x[0], w[0], 0, 0};
    for (int i = 0; i < 2; ++i) {
      out[2 + i] = window_output(x[2 + i], w[2 + i], strides[i], pads[i], pads[2 + i], dil[i]);
      if (out[2 + i] <= 0) {
        return fail(op_, "kernel {} does not fit input {} with pads {}", to_string(w), to_string(x),
                    to_string(pads));
      }
    }
    return f32(out);
  }

  absl::StatusOr<ValueType> pool() {
    if (auto s = need_float(0); !s.ok()) return s;
    if (auto s = need_rank(0, 4); !s.ok()) return s;
    const Ints& kernel = ints(a_, "kernel_shape");
    const Ints& strides = ints(a_, "strides");
    const Ints& pads = ints(a_, "pads");
    if (auto s = need_positive(kernel, "kernel_shape", 2); !s.ok()) return s;
    if (auto s = need_positive(strides, "strides", 2); !s.ok()) return s;
    if (auto s = need_pads(pads, 4); !s.ok()) return s;
    Dims out = d(0);
    for (int i = 0; i < 2; ++i) {
      if (pads[i] >= kernel[i] || pads[2 + i] >= kernel[i])
        return fail(op_, "pads must be smaller than the kernel");
      out[2 + i] = window_output(out[2 + i], kernel[i], strides[i], pads[i], pads[2 + i], 1);
      if (out[2 + i] <= 0)
        return fail(op_, "kernel {} does not fit input {}", to_string(kernel), to_string(d(0)));
    }
    return f32(out);
  }

  absl::StatusOr<ValueType> layer_norm() {
    for (std::size_t i = 0; i < 3; ++i) {
      if (auto s = need_float(i); !s.ok()) return s;
    }
    std::optional<std::int64_t> axis = normalize_axis(int_attr(a_, "axis"), t(0).rank());
    if (!axis)
      return fail(op_, "axis {} out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
    Dims normalized(d(0).begin() + *axis, d(0).end());
    for (std::size_t i = 1; i < 3; ++i) {
      if (d(i) != normalized)
        return fail(op_, "input {} must be {}, is {}", i, to_string(normalized), to_string(d(i)));
    }
    return in_[0];
  }

  absl::StatusOr<ValueType> batch_norm() {
    for (std::size_t i = 0; i < 5; ++i) {
      if (auto s = need_float(i); !s.ok()) return s;
    }
    if (t(0).rank() < 2) return fail(op_, "input must have rank 2 or more, is {}", to_string(t(0)));
    for (std::size_t i = 1; i < 5; ++i) {
      if (d(i) != Dims{d(0)[1]})
        return fail(op_, "input {} must be [{}], is {}", i, d(0)[1], to_string(d(i)));
    }
    return in_[0];
  }

  absl::StatusOr<ValueType> reduce_mean() {
    if (auto s = need_float(0); !s.ok()) return s;
    const Ints& axes = ints(a_, "axes");
    std::vector<bool> reduced(t(0).rank(), axes.empty());
    for (std::int64_t ax : axes) {
      std::optional<std::int64_t> n = normalize_axis(ax, t(0).rank());
      if (!n || reduced[*n])
        return fail(op_, "axes {} invalid for {}", to_string(axes), to_string(t(0)));
      reduced[*n] = true;
    }
    Dims out;
    for (std::size_t i = 0; i < reduced.size(); ++i) {
      if (!reduced[i])
        out.push_back(d(0)[i]);
      else if (int_attr(a_, "keepdims") != 0)
        out.push_back(1);
    }
    return f32(out);
  }

  absl::StatusOr<ValueType> transpose() {
    Ints perm = ints(a_, "perm");
    std::size_t r = t(0).rank();
    if (perm.empty()) {
      for (std::size_t i = 0; i < r; ++i) perm.push_back(static_cast<std::int64_t>(r - 1 - i));
    }
    std::vector<bool> seen(r, false);
    if (perm.size() != r) return fail(op_, "perm {} does not match rank {}", to_string(perm), r);
    Dims out;
    for (std::int64_t p : perm) {
      if (p < 0 || p >= static_cast<std::int64_t>(r) || seen[p])
        return fail(op_, "perm {} is not a permutation", to_string(perm));
      seen[p] = true;
      out.push_back(d(0)[p]);
    }
    return like(0, out);
  }

  absl::StatusOr<ValueType> reshape() {
    const Ints& shape = ints(a_, "shape");
    Dims out;
    std::int64_t known = 1;
    int infer_at = -1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      std::int64_t s = shape[i];
      if (s == 0) {
        if (i >= t(0).rank())
          return fail(op_, "shape {} copies dimension {} that {} lacks", to_string(shape), i,
                      to_string(t(0)));
        s = d(0)[i];
      } else if (s == -1) {
        if (infer_at >= 0) return fail(op_, "shape {} has more than one -1", to_string(shape));
        infer_at = static_cast<int>(i);
        out.push_back(1);
        continue;
      } else if (s < 0) {
        return fail(op_, "shape {} has a negative dimension", to_string(shape));
      }
      known *= s;
      out.push_back(s);
    }
    std::int64_t total = t(0).num_elements();
    if (infer_at >= 0) {
      if (known == 0 || total % known != 0)
        return fail(op_, "cannot reshape {} to {}", to_string(t(0)), to_string(shape));
      out[infer_at] = total / known;
    } else if (known != total) {
      return fail(op_, "cannot reshape {} ({} elements) to {}", to_string(t(0)), total,
                  to_string(shape));
    }
    return like(0, out);
  }

  absl::StatusOr<ValueType> flatten() {
    std::int64_t axis = int_attr(a_, "axis");
    std::size_t r = t(0).rank();
    if (axis < 0) axis += static_cast<std::int64_t>(r);
    if (axis < 0 || axis > static_cast<std::int64_t>(r))
      return fail(op_, "axis {} out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < r; ++i)
      (static_cast<std::int64_t>(i) < axis ? outer : inner) *= d(0)[i];
    return like(0, Dims{outer, inner});
  }

  absl::StatusOr<ValueType> concat() {
    std::optional<std::int64_t> axis = normalize_axis(int_attr(a_, "axis"), t(0).rank());
    if (!axis)
      return fail(op_, "axis {} out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
    Dims out = d(0);
    for (std::size_t i = 1; i < in_.size(); ++i) {
      bool fits = t(i).dtype == t(0).dtype && t(i).rank() == t(0).rank();
      for (std::size_t k = 0; fits && k < out.size(); ++k)
        fits = k == static_cast<std::size_t>(*axis) || d(i)[k] == out[k];
      if (!fits)
        return fail(op_, "input {} {} does not fit {} on axis {}", i, to_string(t(i)),
                    to_string(t(0)), *axis);
      out[*axis] += d(i)[*axis];
    }
    return like(0, out);
  }

  absl::StatusOr<ValueType> split() {
    std::optional<std::int64_t> axis = normalize_axis(int_attr(a_, "axis"), t(0).rank());
    if (!axis)
      return fail(op_, "axis {} out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
    const Ints& sizes = ints(a_, "split");
    if (sizes.empty()) return fail(op_, "split sizes are empty");
    std::int64_t sum = 0;
    std::vector<TensorType> parts;
    for (std::int64_t s : sizes) {
      if (s <= 0) return fail(op_, "split sizes {} must be positive", to_string(sizes));
      sum += s;
      TensorType p = t(0);
      p.dims[*axis] = s;
      parts.push_back(std::move(p));
    }
    if (sum != d(0)[*axis])
      return fail(op_, "split sizes {} do not add up to {} (axis {} of {})", to_string(sizes),
                  d(0)[*axis], *axis, to_string(t(0)));
    return ValueType::tuple(std::move(parts));
  }

  absl::StatusOr<ValueType> slice() {
    const Ints& starts = ints(a_, "starts");
    const Ints& ends = ints(a_, "ends");
    Ints axes = ints(a_, "axes");
    Ints steps = ints(a_, "steps");
    if (axes.empty()) {
      for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size()) {
      return fail(op_, "starts, ends, axes and steps differ in length");
    }
    Dims out = d(0);
    std::vector<bool> seen(out.size(), false);
    for (std::size_t i = 0; i < starts.size(); ++i) {
      std::optional<std::int64_t> ax = normalize_axis(axes[i], out.size());
      if (!ax || seen[*ax])
        return fail(op_, "axes {} invalid for {}", to_string(axes), to_string(t(0)));
      if (steps[i] == 0) return fail(op_, "step must not be 0");
      seen[*ax] = true;
      out[*ax] = slice_range(out[*ax], starts[i], ends[i], steps[i]).count;
    }
    return like(0, out);
  }

  absl::StatusOr<ValueType> gather() {
    if (t(1).dtype != DType::kInt64)
      return fail(op_, "indices must be int64, are {}", to_string(t(1)));
    std::optional<std::int64_t> axis = normalize_axis(int_attr(a_, "axis"), t(0).rank());
    if (!axis)
      return fail(op_, "axis {} out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
    Dims out(d(0).begin(), d(0).begin() + *axis);
    out.insert(out.end(), d(1).begin(), d(1).end());
    out.insert(out.end(), d(0).begin() + *axis + 1, d(0).end());
    return like(0, out);
  }

  absl::StatusOr<ValueType> pad() {
    const Ints& pads = ints(a_, "pads");
    std::size_t r = t(0).rank();
    if (auto s = need_pads(pads, 2 * r); !s.ok()) return s;
    Dims out = d(0);
    for (std::size_t i = 0; i < r; ++i) out[i] += pads[i] + pads[r + i];
    return like(0, out);
  }

  absl::StatusOr<ValueType> enlarge() {
    if (auto s = need_rank(0, 4); !s.ok()) return s;
    const Ints& k = ints(a_, "kernel_shape");
    if (auto s = need_positive(k, "kernel_shape", 2); !s.ok()) return s;
    Dims out = d(0);
    for (int i = 0; i < 2; ++i) {
      std::int64_t grow = k[i] - out[2 + i];
      if (grow < 0 || grow % 2 != 0) {
        return fail(op_, "cannot center kernel {} in {}", to_string(d(0)), to_string(k));
      }
      out[2 + i] = k[i];
    }
    return like(0, out);
  }

  absl::StatusOr<ValueType> merge_groups() {
    if (auto s = need_rank(0, 4); !s.ok()) return s;
    std::int64_t group = int_attr(a_, "group"), count = int_attr(a_, "count");
    if (group <= 0 || count <= 0 || group % count != 0 || d(0)[0] % group != 0) {
      return fail(op_, "cannot merge {} of {} groups of weight {}", count, group, to_string(d(0)));
    }
    Dims out = d(0);
    out[1] *= count;
    return like(0, out);
  }

  absl::StatusOr<ValueType> tuple_get() {
    std::int64_t index = int_attr(a_, "index");
    if (!in_[0].is_tuple) return fail(op_, "input is {}, not a tuple", to_string(in_[0]));
    if (index < 0 || index >= static_cast<std::int64_t>(in_[0].parts.size())) {
      return fail(op_, "index {} out of range for {}", index, to_string(in_[0]));
    }
    return ValueType::of(in_[0].parts[index]);
  }

  absl::StatusOr<ValueType> unary() {
    if (auto s = need_float(0); !s.ok()) return s;
    if (op_ == Op::kClip && *a_.get_float("min") > *a_.get_float("max"))
      return fail(op_, "min exceeds max");
    return in_[0];
  }

  absl::StatusOr<ValueType> infer() {
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
      case Op::kSqrt:
      case Op::kErf:
      case Op::kRelu:
      case Op::kSigmoid:
      case Op::kTanh:
      case Op::kGelu:
      case Op::kClip:
        return unary();
      case Op::kSoftmax:
        if (auto s = need_float(0); !s.ok()) return s;
        if (!normalize_axis(int_attr(a_, "axis"), t(0).rank()))
          return fail(op_, "axis out of range for {}", to_string(t(0)));
        return in_[0];
      case Op::kLayerNorm:
        return layer_norm();
      case Op::kBatchNorm:
        return batch_norm();
      case Op::kReduceMean:
        return reduce_mean();
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
      case Op::kSlice:
        return slice();
      case Op::kGather:
        return gather();
      case Op::kPad:
        return pad();
      case Op::kMaxPool:
      case Op::kAveragePool:
        return pool();
      case Op::kGlobalAveragePool: {
        if (auto s = need_float(0); !s.ok()) return s;
        if (auto s = need_rank(0, 4); !s.ok()) return s;
        return f32(Dims{d(0)[0], d(0)[1], 1, 1});
      }
      case Op::kIdentity:
      case Op::kDropout:
        return in_[0];
      case Op::kEnlarge:
        return enlarge();
      case Op::kMergeGroups:
        return merge_groups();
      case Op::kTuple: {
        std::vector<TensorType> parts;
        for (const ValueType& v : in_) parts.push_back(v.tensor());
        return ValueType::tuple(std::move(parts));
      }
      case Op::kTupleGet:
        return tuple_get();
      case Op::kOpaque: {
        absl::StatusOr<std::vector<TensorType>> outs = opaque_outputs(a_);
        if (!outs.ok()) return outs.status();
        if (outs->size() == 1) return ValueType::of((*outs)[0]);
        return ValueType::tuple(std::move(*outs));
      }
    }
    return fail(op_, "unknown operator");
  }

  Op op_;
  const Attributes& a_;
  std::span<const ValueType> in_;
};

}  // namespace

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

std::optional<std::int64_t> normalize_axis(std::int64_t axis, std::size_t rank) {
  std::int64_t r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

SliceRange slice_range(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
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
  std::int64_t span = dilation * (kernel - 1) + 1;
  std::int64_t padded = in + pad_begin + pad_end;
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
  return Inference(op, attributes, inputs).run();
}

}  // namespace saturn::tensor

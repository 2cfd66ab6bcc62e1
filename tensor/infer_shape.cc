// Shape inference rules: the shape operators (Transpose, Reshape, Flatten,
// Concat, Split, Slice, Gather, Pad) and the rewrites of convolution kernels
// (Enlarge, MergeGroups).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/inference.h"

namespace saturn::tensor::inference {

absl::StatusOr<ValueType> Inference::transpose() {
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

absl::StatusOr<ValueType> Inference::reshape() {
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
    // Checked before multiplying: the shape may come from a file.
    if (s > 0 && known > kMaxTensorBytes / s)
      return fail(op_, "shape {} holds more than {} elements", to_string(shape), kMaxTensorBytes);
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

absl::StatusOr<ValueType> Inference::flatten() {
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

absl::StatusOr<ValueType> Inference::concat() {
  std::optional<std::int64_t> axis = normalize_axis(int_attr(a_, "axis"), t(0).rank());
  if (!axis) return fail(op_, "axis {} out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
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

absl::StatusOr<ValueType> Inference::split() {
  std::optional<std::int64_t> axis = normalize_axis(int_attr(a_, "axis"), t(0).rank());
  if (!axis) return fail(op_, "axis {} out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
  const Ints& sizes = ints(a_, "split");
  if (sizes.empty()) return fail(op_, "split sizes are empty");
  std::int64_t sum = 0;
  std::vector<TensorType> parts;
  for (std::int64_t s : sizes) {
    if (s <= 0) return fail(op_, "split sizes {} must be positive", to_string(sizes));
    if (s > d(0)[*axis] - sum)
      return fail(op_, "split sizes {} add up to more than {} (axis {} of {})", to_string(sizes),
                  d(0)[*axis], *axis, to_string(t(0)));
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

absl::StatusOr<ValueType> Inference::slice() {
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
    // An unknown extent (an opaque operator's output) stays unknown.
    if (out[*ax] >= 0) out[*ax] = slice_range(out[*ax], starts[i], ends[i], steps[i]).count;
  }
  return like(0, out);
}

absl::StatusOr<ValueType> Inference::gather() {
  if (t(1).dtype != DType::kInt64)
    return fail(op_, "indices must be int64, are {}", to_string(t(1)));
  std::optional<std::int64_t> axis = normalize_axis(int_attr(a_, "axis"), t(0).rank());
  if (!axis) return fail(op_, "axis {} out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
  Dims out(d(0).begin(), d(0).begin() + *axis);
  out.insert(out.end(), d(1).begin(), d(1).end());
  out.insert(out.end(), d(0).begin() + *axis + 1, d(0).end());
  return like(0, out);
}

absl::StatusOr<ValueType> Inference::pad() {
  const Ints& pads = ints(a_, "pads");
  std::size_t r = t(0).rank();
  if (auto s = need_pads(pads, 2 * r); !s.ok()) return s;
  Dims out = d(0);
  for (std::size_t i = 0; i < r; ++i) {
    if (__builtin_add_overflow(out[i], pads[i], &out[i]) ||
        __builtin_add_overflow(out[i], pads[r + i], &out[i]))
      return fail(op_, "pads {} overflow {}", to_string(pads), to_string(t(0)));
  }
  return like(0, out);
}

absl::StatusOr<ValueType> Inference::enlarge() {
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

absl::StatusOr<ValueType> Inference::merge_groups() {
  if (auto s = need_rank(0, 4); !s.ok()) return s;
  std::int64_t group = int_attr(a_, "group"), count = int_attr(a_, "count");
  if (group <= 0 || count <= 0 || group % count != 0 || d(0)[0] % group != 0) {
    return fail(op_, "cannot merge {} of {} groups of weight {}", count, group, to_string(d(0)));
  }
  Dims out = d(0);
  if (__builtin_mul_overflow(out[1], count, &out[1]))
    return fail(op_, "merging {} groups of weight {} overflows", count, to_string(d(0)));
  return like(0, out);
}

}  // namespace saturn::tensor::inference

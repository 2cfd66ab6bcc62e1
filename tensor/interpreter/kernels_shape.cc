// Reference kernels: data movement (Transpose, Slice, Concat, Split,
// Gather, Pad) and the rewrites of convolution kernels (Enlarge,
// MergeGroups), on any element type but string: they copy elements by
// their size and never read their values (but Gather's indices).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels_internal.h"

namespace saturn::tensor::kernels {

namespace {

// Calls fn(std::integral_constant<std::size_t, N>{}) for an element of
// `bytes` bytes, so that data movement copies each element with a copy of
// a size the compiler knows (one load and one store), whatever its type.
template <typename Fn>
void by_element_size(std::size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1: return fn(std::integral_constant<std::size_t, 1>{});
    case 2: return fn(std::integral_constant<std::size_t, 2>{});
    case 4: return fn(std::integral_constant<std::size_t, 4>{});
    case 8: return fn(std::integral_constant<std::size_t, 8>{});
    default: return fn(std::integral_constant<std::size_t, 16>{});  // complex128
  }
}

// Copies the elements of `x` laid out as `out_dims` with source strides
// `src_strides` starting at `offset` (transpose, slice).
Tensor gather_strided(const Tensor& x, const Dims& out_dims, const Ints& src_strides,
                      std::int64_t offset) {
  Tensor out(TensorType{x.dtype(), out_dims});
  if (out.size() == 0) return out;
  const Ints zero(out_dims.size(), 0);
  by_element_size(dtype_bytes(x.dtype()), [&](auto size) {
    const std::byte* in = x.data().data() + offset * size;
    std::byte* o = out.mutable_data().data();
    for_each_index(out_dims, src_strides, zero, [&](std::int64_t i, std::int64_t ia, std::int64_t) {
      std::memcpy(o + i * size, in + ia * size, size);
    });
  });
  return out;
}

// Concatenation and its inverse work on [outer, extent, inner] views.
void copy_block(std::span<const std::byte> from, std::span<std::byte> to, const AxisView& src,
                const AxisView& dst, std::int64_t at, std::size_t element) {
  const auto run = static_cast<std::size_t>(src.extent * src.inner) * element;
  for (std::int64_t o = 0; o < src.outer; ++o) {
    std::memcpy(to.data() + static_cast<std::size_t>((o * dst.extent + at) * dst.inner) * element,
                from.data() + static_cast<std::size_t>(o) * run, run);
  }
}

// Places `x` inside a larger tensor filled with `fill` (one element of x's
// type) at offset `begin`.
Tensor embed(const Tensor& x, const Dims& out_dims, const Ints& begin, const Tensor& fill) {
  Tensor out(TensorType{x.dtype(), out_dims});
  const Ints dst = strides_of(out_dims);
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < begin.size(); ++i) offset += begin[i] * dst[i];
  const Ints zero(x.dims().size(), 0);
  by_element_size(dtype_bytes(x.dtype()), [&](auto size) {
    std::byte* o = out.mutable_data().data();
    const std::byte* value = fill.data().data();
    for (std::int64_t i = 0; i < out.size(); ++i) std::memcpy(o + i * size, value, size);
    if (x.size() == 0) return;
    const std::byte* in = x.data().data();
    for_each_index(x.dims(), dst, zero, [&](std::int64_t i, std::int64_t at, std::int64_t) {
      std::memcpy(o + (offset + at) * size, in + i * size, size);
    });
  });
  return out;
}

}  // namespace

absl::Status movable(Op op, const Tensor& x) {
  if (x.dtype() != DType::kString && dtype_bytes(x.dtype()) > 0) return absl::OkStatus();
  return absl::UnimplementedError(
      fmt::format("{} of {} is not computed", op_name(op), to_string(x.type())));
}

Tensor transpose(const Attributes& attrs, const Tensor& x) {
  Ints perm = *attrs.get_ints("perm");
  std::size_t r = x.dims().size();
  if (perm.empty()) {
    for (std::size_t i = 0; i < r; ++i) perm.push_back(static_cast<std::int64_t>(r - 1 - i));
  }
  Ints src = strides_of(x.dims());
  Dims out_dims(r);
  Ints strides(r);
  for (std::size_t i = 0; i < r; ++i) {
    out_dims[i] = x.dims()[perm[i]];
    strides[i] = src[perm[i]];
  }
  return gather_strided(x, out_dims, strides, 0);
}

Tensor slice(const Attributes& attrs, const Tensor& x) {
  const Ints& starts = *attrs.get_ints("starts");
  const Ints& ends = *attrs.get_ints("ends");
  Ints axes = *attrs.get_ints("axes");
  Ints steps = *attrs.get_ints("steps");
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  Ints src = strides_of(x.dims());
  Dims out_dims = x.dims();
  Ints strides = src;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    std::int64_t ax = *normalize_axis(axes[i], out_dims.size());
    SliceRange range = slice_range(x.dims()[ax], starts[i], ends[i], steps[i]);
    out_dims[ax] = range.count;
    strides[ax] = src[ax] * range.step;
    if (range.count > 0) offset += range.start * src[ax];
  }
  return gather_strided(x, out_dims, strides, offset);
}

Tensor concat(const Attributes& attrs, std::span<const Tensor> in) {
  std::int64_t axis = *normalize_axis(*attrs.get_int("axis"), in[0].dims().size());
  Dims out_dims = in[0].dims();
  for (std::size_t i = 1; i < in.size(); ++i) out_dims[axis] += in[i].dims()[axis];
  Tensor out(TensorType{in[0].dtype(), out_dims});
  AxisView dst = view_around(out_dims, axis);
  std::int64_t at = 0;
  for (const Tensor& t : in) {
    AxisView src = view_around(t.dims(), axis);
    if (t.size() > 0) copy_block(t.data(), out.mutable_data(), src, dst, at, dtype_bytes(t.dtype()));
    at += src.extent;
  }
  return out;
}

std::vector<Tensor> split(const Attributes& attrs, const Tensor& x) {
  std::int64_t axis = *normalize_axis(*attrs.get_int("axis"), x.dims().size());
  std::vector<Tensor> parts;
  std::int64_t at = 0;
  for (std::int64_t size : *attrs.get_ints("split")) {
    Attributes s{
        {"starts", Ints{at}}, {"ends", Ints{at + size}}, {"axes", Ints{axis}}, {"steps", Ints{1}}};
    parts.push_back(slice(s, x));
    at += size;
  }
  return parts;
}

absl::StatusOr<Tensor> gather(const Attributes& attrs, const Tensor& data, const Tensor& indices) {
  std::int64_t axis = *normalize_axis(*attrs.get_int("axis"), data.dims().size());
  AxisView v = view_around(data.dims(), axis);
  Dims out_dims(data.dims().begin(), data.dims().begin() + axis);
  out_dims.insert(out_dims.end(), indices.dims().begin(), indices.dims().end());
  out_dims.insert(out_dims.end(), data.dims().begin() + axis + 1, data.dims().end());
  Tensor out(TensorType{data.dtype(), out_dims});
  if (out.size() == 0) return out;
  std::span<const std::int64_t> idx = indices.ints();
  const std::int64_t count = static_cast<std::int64_t>(idx.size());
  const auto row = static_cast<std::size_t>(v.inner) * dtype_bytes(data.dtype());
  const std::byte* from = data.data().data();
  std::byte* to = out.mutable_data().data();
  for (std::int64_t q = 0; q < count; ++q) {
    // ONNX: an index in [-extent, extent), a negative one counted from the end.
    const std::int64_t i = idx[q] < 0 ? idx[q] + v.extent : idx[q];
    if (i < 0 || i >= v.extent) {
      return absl::OutOfRangeError(fmt::format("index {} (at {}) is outside [-{}, {}) on axis {} of {}",
                                               idx[q], q, v.extent, v.extent, axis,
                                               to_string(data.type())));
    }
    for (std::int64_t o = 0; o < v.outer; ++o)
      std::memcpy(to + static_cast<std::size_t>(o * count + q) * row,
                  from + static_cast<std::size_t>(o * v.extent + i) * row, row);
  }
  return out;
}

absl::StatusOr<Tensor> pad(const Attributes& attrs, const Tensor& x) {
  const Ints& pads = *attrs.get_ints("pads");
  const double value = *attrs.get_float("value");
  std::size_t r = x.dims().size();
  Dims out_dims = x.dims();
  Ints begin(pads.begin(), pads.begin() + r);
  for (std::size_t i = 0; i < r; ++i) out_dims[i] += pads[i] + pads[r + i];
  const TensorType element{x.dtype(), {}};
  if (is_plain_number(x.dtype())) return embed(x, out_dims, begin, filled(element, value));
  if (value != 0)
    return absl::UnimplementedError(fmt::format("Pad of {} with {}", to_string(x.type()), value));
  return embed(x, out_dims, begin, Tensor(element));
}

Tensor enlarge(const Attributes& attrs, const Tensor& w) {
  const Ints& k = *attrs.get_ints("kernel_shape");
  Dims out_dims = w.dims();
  Ints begin{0, 0, (k[0] - out_dims[2]) / 2, (k[1] - out_dims[3]) / 2};
  out_dims[2] = k[0];
  out_dims[3] = k[1];
  return embed(w, out_dims, begin, Tensor(TensorType{w.dtype(), {}}));
}

Tensor merge_groups(const Attributes& attrs, const Tensor& w) {
  const std::int64_t group = *attrs.get_int("group"), count = *attrs.get_int("count");
  const Dims& d = w.dims();
  const std::int64_t m = d[0], cg = d[1], kk = d[2] * d[3], per_group = m / group;
  Tensor out(TensorType{w.dtype(), {m, cg * count, d[2], d[3]}});
  if (out.size() == 0) return out;
  const std::size_t element = dtype_bytes(w.dtype());
  const auto block = static_cast<std::size_t>(cg * kk) * element;
  const std::byte* in = w.data().data();
  std::byte* o = out.mutable_data().data();
  for (std::int64_t oc = 0; oc < m; ++oc) {
    const std::int64_t slot = (oc / per_group) % count;
    std::memcpy(o + static_cast<std::size_t>((oc * cg * count + slot * cg) * kk) * element,
                in + static_cast<std::size_t>(oc) * block, block);
  }
  return out;
}

}  // namespace saturn::tensor::kernels

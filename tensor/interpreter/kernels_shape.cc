// Reference kernels: data movement (Transpose, Slice, Concat, Split,
// Gather, Pad) and the rewrites of convolution kernels (Enlarge,
// MergeGroups).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels_internal.h"

namespace saturn::tensor::kernels {

namespace {

// Copies the elements of `x` laid out as `out_dims` with source strides
// `src_strides` starting at `offset` (transpose, slice, broadcasts).
Tensor gather_strided(const Tensor& x, const Dims& out_dims, const Ints& src_strides,
                      std::int64_t offset) {
  Tensor out(TensorType{x.dtype(), out_dims});
  Ints zero(out_dims.size(), 0);
  if (x.dtype() == DType::kFloat32) {
    const float* in = x.floats().data() + offset;
    float* o = out.mutable_floats().data();
    for_each_index(out_dims, src_strides, zero,
                   [&](std::int64_t i, std::int64_t ia, std::int64_t) { o[i] = in[ia]; });
  } else {
    const std::int64_t* in = x.ints().data() + offset;
    std::int64_t* o = out.mutable_ints().data();
    for_each_index(out_dims, src_strides, zero,
                   [&](std::int64_t i, std::int64_t ia, std::int64_t) { o[i] = in[ia]; });
  }
  return out;
}

// Concatenation and its inverse work on [outer, extent, inner] views.
template <typename T>
void copy_block(std::span<const T> from, std::span<T> to, const AxisView& src, const AxisView& dst,
                std::int64_t at) {
  for (std::int64_t o = 0; o < src.outer; ++o) {
    std::copy_n(from.data() + o * src.extent * src.inner, src.extent * src.inner,
                to.data() + (o * dst.extent + at) * dst.inner);
  }
}

// Places `x` inside a larger zero tensor (value `fill`) at offset `begin`.
Tensor embed(const Tensor& x, const Dims& out_dims, const Ints& begin, float fill) {
  Tensor out(TensorType{x.dtype(), out_dims});
  Ints dst = strides_of(out_dims);
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < begin.size(); ++i) offset += begin[i] * dst[i];
  Ints zero(x.dims().size(), 0);
  if (x.dtype() == DType::kFloat32) {
    std::span<float> o = out.mutable_floats();
    std::fill(o.begin(), o.end(), fill);
    const float* in = x.floats().data();
    for_each_index(x.dims(), dst, zero,
                   [&](std::int64_t i, std::int64_t at, std::int64_t) { o[offset + at] = in[i]; });
  } else {
    std::span<std::int64_t> o = out.mutable_ints();
    std::fill(o.begin(), o.end(), static_cast<std::int64_t>(fill));
    const std::int64_t* in = x.ints().data();
    for_each_index(x.dims(), dst, zero,
                   [&](std::int64_t i, std::int64_t at, std::int64_t) { o[offset + at] = in[i]; });
  }
  return out;
}

}  // namespace

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
    if (t.dtype() == DType::kFloat32)
      copy_block(t.floats(), out.mutable_floats(), src, dst, at);
    else
      copy_block(t.ints(), out.mutable_ints(), src, dst, at);
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
  std::span<const std::int64_t> idx = indices.ints();
  std::int64_t count = static_cast<std::int64_t>(idx.size());
  for (std::int64_t q = 0; q < count; ++q) {
    std::int64_t i = idx[q] < 0 ? idx[q] + v.extent : idx[q];
    if (i < 0 || i >= v.extent) {
      return absl::OutOfRangeError(
          fmt::format("Gather: index {} out of range [0, {})", idx[q], v.extent));
    }
    for (std::int64_t o = 0; o < v.outer; ++o) {
      std::int64_t from = (o * v.extent + i) * v.inner, to = (o * count + q) * v.inner;
      if (data.dtype() == DType::kFloat32)
        std::copy_n(data.floats().data() + from, v.inner, out.mutable_floats().data() + to);
      else
        std::copy_n(data.ints().data() + from, v.inner, out.mutable_ints().data() + to);
    }
  }
  return out;
}

Tensor pad(const Attributes& attrs, const Tensor& x) {
  const Ints& pads = *attrs.get_ints("pads");
  std::size_t r = x.dims().size();
  Dims out_dims = x.dims();
  Ints begin(pads.begin(), pads.begin() + r);
  for (std::size_t i = 0; i < r; ++i) out_dims[i] += pads[i] + pads[r + i];
  return embed(x, out_dims, begin, static_cast<float>(*attrs.get_float("value")));
}

Tensor enlarge(const Attributes& attrs, const Tensor& w) {
  const Ints& k = *attrs.get_ints("kernel_shape");
  Dims out_dims = w.dims();
  Ints begin{0, 0, (k[0] - out_dims[2]) / 2, (k[1] - out_dims[3]) / 2};
  out_dims[2] = k[0];
  out_dims[3] = k[1];
  return embed(w, out_dims, begin, 0.0f);
}

Tensor merge_groups(const Attributes& attrs, const Tensor& w) {
  const std::int64_t group = *attrs.get_int("group"), count = *attrs.get_int("count");
  const Dims& d = w.dims();
  const std::int64_t m = d[0], cg = d[1], kk = d[2] * d[3], per_group = m / group;
  Tensor out(TensorType{DType::kFloat32, {m, cg * count, d[2], d[3]}});
  const float* in = w.floats().data();
  float* o = out.mutable_floats().data();
  for (std::int64_t oc = 0; oc < m; ++oc) {
    std::int64_t slot = (oc / per_group) % count;
    std::copy_n(in + oc * cg * kk, cg * kk, o + (oc * cg * count + slot * cg) * kk);
  }
  return out;
}

}  // namespace saturn::tensor::kernels

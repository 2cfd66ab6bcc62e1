// The shape-value evaluator's operators that move, gather and make values
// (shape_eval_internal.h): Gather, Concat, Slice, Reshape, Transpose,
// (Un)Squeeze, Cast, Range, ConstantOfShape, the reductions, ScatterND, Tile.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "saturn/tensor/infer.h"
#include "saturn/onnx/proto.h"
#include "saturn/onnx/shape_eval_internal.h"
#include "saturn/onnx/shape_values.h"

namespace saturn::tensor::onnx_io::shape_eval {

namespace {

std::optional<Num> gather(const Num& data, const Num& indices, std::int64_t axis_attr) {
  std::optional<std::int64_t> axis = axis_in(axis_attr, data.dims.size());
  if (!axis) return std::nullopt;
  Dims out(data.dims.begin(), data.dims.begin() + *axis);
  out.insert(out.end(), indices.dims.begin(), indices.dims.end());
  out.insert(out.end(), data.dims.begin() + *axis + 1, data.dims.end());
  const std::int64_t outer = count(Dims(data.dims.begin(), data.dims.begin() + *axis));
  const std::int64_t inner = count(Dims(data.dims.begin() + *axis + 1, data.dims.end()));
  const std::int64_t n = data.dims[*axis];
  Num r{data.dtype, out, {}};
  for (std::int64_t o = 0; o < outer; ++o) {
    for (double x : indices.v) {
      auto k = static_cast<std::int64_t>(x);
      if (k < 0) k += n;
      if (k < 0 || k >= n) return std::nullopt;
      for (std::int64_t i = 0; i < inner; ++i)
        r.v.push_back(data.v[static_cast<std::size_t>((o * n + k) * inner + i)]);
    }
  }
  return r;
}

std::optional<Num> concat(const std::vector<Num>& inputs, std::int64_t axis_attr) {
  if (inputs.empty()) return std::nullopt;
  std::optional<std::int64_t> axis = axis_in(axis_attr, inputs[0].dims.size());
  if (!axis) return std::nullopt;
  Dims out = inputs[0].dims;
  out[*axis] = 0;
  for (const Num& n : inputs) {
    if (n.dims.size() != out.size()) return std::nullopt;
    for (std::size_t k = 0; k < out.size(); ++k)
      if (k != static_cast<std::size_t>(*axis) && n.dims[k] != out[k]) return std::nullopt;
    out[*axis] += n.dims[*axis];
  }
  const std::int64_t outer = count(Dims(out.begin(), out.begin() + *axis));
  Num r{inputs[0].dtype, out, {}};
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const Num& n : inputs) {
      const std::int64_t chunk = count(Dims(n.dims.begin() + *axis, n.dims.end()));
      auto first = n.v.begin() + o * chunk;
      r.v.insert(r.v.end(), first, first + chunk);
    }
  }
  return r;
}

// Slice with starts, ends, axes and steps as ONNX (opset 10 on) reads them.
std::optional<Num> slice(const Num& data, const Ints& starts, const Ints& ends,
                         std::optional<Ints> axes, std::optional<Ints> steps) {
  const std::size_t rank = data.dims.size();
  if (!axes) {
    axes.emplace(starts.size());
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!steps) steps = Ints(starts.size(), 1);
  if (ends.size() != starts.size() || axes->size() != starts.size() ||
      steps->size() != starts.size())
    return std::nullopt;
  Dims begin(rank, 0), step(rank, 1), out = data.dims;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    std::optional<std::int64_t> a = axis_in((*axes)[k], rank);
    if (!a || (*steps)[k] == 0) return std::nullopt;
    const std::int64_t n = data.dims[*a], s = (*steps)[k];
    auto clamp = [&](std::int64_t x, std::int64_t low, std::int64_t high) {
      if (x < 0) x += n;
      return std::clamp(x, low, high);
    };
    const std::int64_t b = s > 0 ? clamp(starts[k], 0, n) : clamp(starts[k], -1, n - 1);
    const std::int64_t e = s > 0 ? clamp(ends[k], 0, n) : clamp(ends[k], -1, n - 1);
    begin[*a] = b;
    step[*a] = s;
    out[*a] = s > 0 ? std::max<std::int64_t>((e - b + s - 1) / s, 0)
                    : std::max<std::int64_t>((b - e - s - 1) / -s, 0);
  }
  Num r{data.dtype, out, {}};
  const Dims in_strides = strides_of(data.dims), out_strides = strides_of(out);
  for (std::int64_t i = 0; i < count(out); ++i) {
    std::int64_t index = 0;
    for (std::size_t k = 0; k < rank; ++k)
      index += (begin[k] + ((i / out_strides[k]) % out[k]) * step[k]) * in_strides[k];
    r.v.push_back(data.v[static_cast<std::size_t>(index)]);
  }
  return r;
}

std::optional<Num> reshape(const Num& data, const Ints& shape, bool allowzero) {
  Dims out(shape.begin(), shape.end());
  int unknown = -1;
  std::int64_t known = 1;
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k] == 0 && !allowzero) {
      if (k >= data.dims.size()) return std::nullopt;
      out[k] = data.dims[k];
    }
    if (out[k] == -1) {
      if (unknown >= 0) return std::nullopt;
      unknown = static_cast<int>(k);
    } else {
      known *= out[k];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || data.size() % known != 0) return std::nullopt;
    out[unknown] = data.size() / known;
  }
  if (count(out) != data.size()) return std::nullopt;
  return Num{data.dtype, out, data.v};
}

// Transpose by `perm` (reversed axes when absent).
std::optional<Num> transpose(const Num& data, std::optional<Ints> perm) {
  const std::size_t rank = data.dims.size();
  if (!perm) {
    perm.emplace(rank);
    std::iota(perm->rbegin(), perm->rend(), 0);
  }
  if (perm->size() != rank) return std::nullopt;
  Dims out(rank);
  std::vector<bool> seen(rank, false);
  for (std::size_t k = 0; k < rank; ++k) {
    std::optional<std::int64_t> a = axis_in((*perm)[k], rank);
    if (!a || seen[*a]) return std::nullopt;
    seen[*a] = true;
    (*perm)[k] = *a;
    out[k] = data.dims[*a];
  }
  Num r{data.dtype, out, std::vector<double>(data.v.size())};
  const Dims in_strides = strides_of(data.dims), out_strides = strides_of(out);
  for (std::int64_t i = 0; i < count(out); ++i) {
    std::int64_t index = 0;
    for (std::size_t k = 0; k < rank; ++k)
      index += ((i / out_strides[k]) % out[k]) * in_strides[(*perm)[k]];
    r.v[static_cast<std::size_t>(i)] = data.v[static_cast<std::size_t>(index)];
  }
  return r;
}

std::optional<Num> unsqueeze(const Num& data, Ints axes) {
  const std::size_t rank = data.dims.size() + axes.size();
  for (std::int64_t& a : axes) {
    std::optional<std::int64_t> x = axis_in(a, rank);
    if (!x) return std::nullopt;
    a = *x;
  }
  std::ranges::sort(axes);
  Dims out;
  std::size_t next = 0;
  for (std::size_t k = 0; k < rank; ++k) {
    if (std::ranges::binary_search(axes, static_cast<std::int64_t>(k)))
      out.push_back(1);
    else if (next < data.dims.size())
      out.push_back(data.dims[next++]);
  }
  if (out.size() != rank) return std::nullopt;
  return Num{data.dtype, out, data.v};
}

std::optional<Num> squeeze(const Num& data, std::optional<Ints> axes) {
  Dims out;
  for (std::size_t k = 0; k < data.dims.size(); ++k) {
    bool drop = data.dims[k] == 1;
    if (axes) {
      drop = std::ranges::any_of(*axes, [&](std::int64_t a) {
        return axis_in(a, data.dims.size()) == static_cast<std::int64_t>(k);
      });
      if (drop && data.dims[k] != 1) return std::nullopt;
    }
    if (!drop) out.push_back(data.dims[k]);
  }
  return Num{data.dtype, out, data.v};
}

std::optional<Num> cast(Num n, int to) {
  std::optional<DType> d = dtype_from_onnx(to);
  if (!d || (*d != DType::kFloat32 && *d != DType::kFloat64 && !held_as_integer(*d)))
    return std::nullopt;
  if (held_as_integer(*d)) {
    for (double& x : n.v) x = *d == DType::kBool ? (x != 0) : std::trunc(x);
  }
  n.dtype = *d;
  return n;
}

std::optional<Num> range(const Num& start, const Num& limit, const Num& delta) {
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1 || delta.v[0] == 0)
    return std::nullopt;
  const double n = std::max(std::ceil((limit.v[0] - start.v[0]) / delta.v[0]), 0.0);
  if (n > kMaxShapeValueElements) return std::nullopt;
  Num r{start.dtype, {static_cast<std::int64_t>(n)}, {}};
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i)
    r.v.push_back(start.v[0] + static_cast<double>(i) * delta.v[0]);
  return r;
}

std::optional<Num> constant_of_shape(const Num& shape, const onnx::TensorProto* value) {
  Num fill{DType::kFloat32, {}, {0.0}};
  if (value != nullptr) {
    absl::StatusOr<Tensor> t = tensor_from_proto(*value);
    if (!t.ok()) return std::nullopt;
    std::optional<Num> n = to_num(*t);
    if (!n || n->size() != 1) return std::nullopt;
    fill = *n;
  }
  const Dims dims(as_ints(shape));
  if (std::ranges::any_of(dims, [](std::int64_t d) { return d < 0; }) ||
      count(dims) > kMaxShapeValueElements)
    return std::nullopt;
  return Num{fill.dtype, dims, std::vector<double>(static_cast<std::size_t>(count(dims)), fill.v[0])};
}

std::optional<Num> reduce(const Num& data, std::optional<Ints> axes, bool keepdims, bool product) {
  const std::size_t rank = data.dims.size();
  std::vector<bool> reduced(rank, !axes || axes->empty());
  if (axes) {
    for (std::int64_t a : *axes) {
      std::optional<std::int64_t> x = axis_in(a, rank);
      if (!x) return std::nullopt;
      reduced[*x] = true;
    }
  }
  Dims kept(rank);
  for (std::size_t k = 0; k < rank; ++k) kept[k] = reduced[k] ? 1 : data.dims[k];
  Num r{data.dtype, kept, std::vector<double>(count(kept), product ? 1.0 : 0.0)};
  const Dims in_strides = strides_of(data.dims), out_strides = strides_of(kept);
  for (std::int64_t i = 0; i < data.size(); ++i) {
    std::int64_t o = 0;
    for (std::size_t k = 0; k < rank; ++k)
      if (!reduced[k]) o += ((i / in_strides[k]) % data.dims[k]) * out_strides[k];
    double& acc = r.v[static_cast<std::size_t>(o)];
    acc = product ? acc * data.v[i] : acc + data.v[i];
  }
  if (!keepdims) {
    Dims out;
    for (std::size_t k = 0; k < rank; ++k)
      if (!reduced[k]) out.push_back(data.dims[k]);
    r.dims = out;
  }
  return r;
}

// ScatterND (opset 11 on, with opset 16's reductions): `data` with the
// slices that `indices` address replaced by (or combined with) `updates`.
std::optional<Num> scatter_nd(Num data, const Num& indices, const Num& updates,
                              const std::string& reduction) {
  if (indices.dims.empty()) return std::nullopt;
  const auto k = static_cast<std::size_t>(indices.dims.back());
  if (k == 0 || k > data.dims.size()) return std::nullopt;
  Dims expected(indices.dims.begin(), indices.dims.end() - 1);
  expected.insert(expected.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(k), data.dims.end());
  if (updates.dims != expected) return std::nullopt;
  const Dims data_strides = strides_of(data.dims);
  const std::int64_t slice = count(Dims(data.dims.begin() + static_cast<std::ptrdiff_t>(k), data.dims.end()));
  const std::int64_t points = indices.size() / static_cast<std::int64_t>(k);
  for (std::int64_t p = 0; p < points; ++p) {
    std::int64_t offset = 0;
    for (std::size_t a = 0; a < k; ++a) {
      std::int64_t i = to_int64(indices.v[static_cast<std::size_t>(p) * k + a]);
      if (i < 0) i += data.dims[a];
      if (i < 0 || i >= data.dims[a]) return std::nullopt;
      offset += i * data_strides[a];
    }
    for (std::int64_t e = 0; e < slice; ++e) {
      double& out = data.v[static_cast<std::size_t>(offset + e)];
      const double u = updates.v[static_cast<std::size_t>(p * slice + e)];
      if (reduction == "none") out = u;
      else if (reduction == "add") out += u;
      else if (reduction == "mul") out *= u;
      else if (reduction == "max") out = std::max(out, u);
      else if (reduction == "min") out = std::min(out, u);
      else return std::nullopt;
    }
  }
  return data;
}

// Tile: `data` repeated `repeats[a]` times along each axis a.
std::optional<Num> tile(const Num& data, const Ints& repeats) {
  if (repeats.size() != data.dims.size()) return std::nullopt;
  Dims out(data.dims.size());
  for (std::size_t a = 0; a < out.size(); ++a) {
    if (repeats[a] < 0) return std::nullopt;
    out[a] = data.dims[a] * repeats[a];
  }
  if (count(out) > kMaxShapeValueElements) return std::nullopt;
  Num r{data.dtype, out, std::vector<double>(static_cast<std::size_t>(count(out)))};
  const Dims in_strides = strides_of(data.dims), out_strides = strides_of(out);
  for (std::int64_t i = 0; i < count(out); ++i) {
    std::int64_t index = 0;
    for (std::size_t a = 0; a < out.size(); ++a)
      index += ((i / out_strides[a]) % out[a] % data.dims[a]) * in_strides[a];
    r.v[static_cast<std::size_t>(i)] = data.v[static_cast<std::size_t>(index)];
  }
  return r;
}

}  // namespace

std::optional<std::optional<Num>> evaluate_structural(const std::string& op, const Attrs& a,
                                                      const std::vector<Num>& in) {
  auto input = [&](std::size_t k) -> const Num* { return k < in.size() ? &in[k] : nullptr; };
  auto ints_of = [&](std::size_t k) -> std::optional<Ints> {
    return k < in.size() ? std::optional(as_ints(in[k])) : std::nullopt;
  };
  if (op == "Identity") return *input(0);
  if (op == "Cast") return cast(*input(0), static_cast<int>(a.i("to").value_or(0)));
  if (op == "Gather" && in.size() == 2) return gather(in[0], in[1], a.i("axis").value_or(0));
  if (op == "Concat") return concat(in, a.i("axis").value_or(0));
  if (op == "Unsqueeze") {
    std::optional<Ints> axes = in.size() > 1 ? ints_of(1) : a.ints("axes");
    return axes ? unsqueeze(in[0], *axes) : std::nullopt;
  }
  if (op == "Squeeze") return squeeze(in[0], in.size() > 1 ? ints_of(1) : a.ints("axes"));
  if (op == "Slice" && in.size() >= 3)
    return slice(in[0], as_ints(in[1]), as_ints(in[2]), ints_of(3), ints_of(4));
  if (op == "Transpose") return transpose(in[0], a.ints("perm"));
  if (op == "Reshape" && in.size() == 2)
    return reshape(in[0], as_ints(in[1]), a.i("allowzero").value_or(0) != 0);
  if (op == "ConstantOfShape") return constant_of_shape(in[0], a.t("value"));
  if (op == "Range" && in.size() == 3) return range(in[0], in[1], in[2]);
  if (op == "ScatterND" && in.size() == 3)
    return scatter_nd(in[0], in[1], in[2], a.s("reduction").value_or("none"));
  if (op == "Tile" && in.size() == 2) return tile(in[0], as_ints(in[1]));
  if (op == "ReduceProd" || op == "ReduceSum") {
    std::optional<Ints> axes = op == "ReduceSum" && in.size() > 1 ? ints_of(1) : a.ints("axes");
    return reduce(in[0], axes, a.i("keepdims").value_or(1) != 0, op == "ReduceProd");
  }
  return std::nullopt;
}

}  // namespace saturn::tensor::onnx_io::shape_eval

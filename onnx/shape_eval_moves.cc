// The shape-value evaluator's operators that move, gather and make values
// (shape_eval_internal.h): Gather, Concat, Slice, Reshape, Transpose,
// (Un)Squeeze, Cast, Range, ConstantOfShape, the reductions, ScatterND, Tile.
// Those with an IR operator are computed by the interpreter's kernels.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels.h"
#include "saturn/tensor/ops.h"
#include "saturn/onnx/proto.h"
#include "saturn/onnx/shape_eval_internal.h"
#include "saturn/onnx/shape_values.h"

namespace saturn::tensor::onnx_io::shape_eval {

namespace {

// `op` computed by the interpreter's kernel on the values as tensors:
// nullopt where the kernel refuses them (a value that does not type-check,
// an index outside its axis).
std::optional<Num> by_kernel(Op op, Attributes attributes, const std::vector<Num>& in) {
  absl::StatusOr<Attributes> normalized = normalize_attributes(op, std::move(attributes));
  if (!normalized.ok()) return std::nullopt;
  std::vector<Tensor> tensors;
  tensors.reserve(in.size());
  for (const Num& n : in) tensors.push_back(to_tensor(n));
  absl::StatusOr<std::vector<Tensor>> out = evaluate_op(op, *normalized, tensors);
  if (!out.ok() || out->size() != 1) return std::nullopt;
  return to_num((*out)[0]);
}

// Indices of either integer type, as the kernels take them (int64).
Num as_indices(Num indices) {
  if (indices.dtype == DType::kInt32) indices.dtype = DType::kInt64;
  return indices;
}

std::optional<Num> gather(const Num& data, const Num& indices, std::int64_t axis) {
  return by_kernel(Op::kGather, {{"axis", axis}}, {data, as_indices(indices)});
}

std::optional<Num> concat(const std::vector<Num>& inputs, std::int64_t axis) {
  if (inputs.empty()) return std::nullopt;
  std::optional<std::int64_t> a = axis_in(axis, inputs[0].dims.size());
  if (!a) return std::nullopt;
  return by_kernel(Op::kConcat, {{"axis", *a}}, inputs);
}

// Slice with starts, ends, axes and steps as ONNX (opset 10 on) reads them.
std::optional<Num> slice(const Num& data, const Ints& starts, const Ints& ends,
                         std::optional<Ints> axes, std::optional<Ints> steps) {
  if (!axes) {
    axes.emplace(starts.size());
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!steps) steps = Ints(starts.size(), 1);
  return by_kernel(Op::kSlice, {{"starts", starts}, {"ends", ends}, {"axes", *axes}, {"steps", *steps}},
                   {data});
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
  if (!perm) {
    perm.emplace(data.dims.size());
    std::iota(perm->rbegin(), perm->rend(), 0);
  }
  return by_kernel(Op::kTranspose, {{"perm", *perm}}, {data});
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
  return by_kernel(Op::kRange, {{"shape", Ints{static_cast<std::int64_t>(n)}}},
                   {start, limit, delta});
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
  const Ints dims = as_ints(shape);
  if (count(Dims(dims)) > kMaxShapeValueElements) return std::nullopt;
  return by_kernel(Op::kConstantOfShape,
                   {{"shape", dims},
                    {"value", fill.v[0]},
                    {"dtype", std::string(dtype_name(fill.dtype))}},
                   {shape});
}

std::optional<Num> reduce(const Num& data, std::optional<Ints> axes, bool keepdims, bool product) {
  return by_kernel(product ? Op::kReduceProd : Op::kReduceSum,
                   {{"axes", axes.value_or(Ints{})}, {"keepdims", std::int64_t{keepdims}}}, {data});
}

// ScatterND (opset 11 on, with opset 16's reductions): `data` with the
// slices that `indices` address replaced by (or combined with) `updates`.
std::optional<Num> scatter_nd(const Num& data, const Num& indices, const Num& updates,
                              const std::string& reduction) {
  return by_kernel(Op::kScatterND, {{"reduction", reduction}}, {data, as_indices(indices), updates});
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
  return by_kernel(Op::kTile, {{"repeats", repeats}}, {data});
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

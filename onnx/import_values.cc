// ONNX -> IR: the value operators that move or make values (Expand, Tile,
// Range, ConstantOfShape, Min, Max, CumSum, GatherElements, GatherND,
// ScatterND, ScatterElements, Resize, EyeLike).
// Where a node's output size depends on values its inputs compute at run
// time (a Range to the sequence length, a mask expanded to it), the IR
// operator keeps those inputs and carries its output's size at the given
// and the probe sizes of the symbols (sized_by_values, tensor/ops.h).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/onnx/importer.h"
#include "saturn/onnx/proto.h"
#include "saturn/tensor/interpreter/kernels.h"
#include "saturn/tensor/probe.h"

namespace saturn::tensor::onnx_io {

namespace {

// The dimensions a shape or repeats value gives Expand or Tile of `in`, or
// a sizes or scales value gives Resize of `in`.
std::optional<Dims> dims_by_value(std::string_view op, const Dims& in, const Tensor& value) {
  if (op == "Resize") return kernels::resize_dims(in, value);
  if (value.dtype() != DType::kInt64 || value.dims().size() != 1) return std::nullopt;
  const Dims v(value.ints().begin(), value.ints().end());
  if (op == "Expand") return broadcast_dims(in, v);
  if (v.size() != in.size()) return std::nullopt;
  Dims out = in;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (v[k] < 0 || __builtin_mul_overflow(in[k], v[k], &out[k])) return std::nullopt;
  }
  return out;
}

}  // namespace

const Tensor* Importer::known_value(const std::string& name, bool at_probe) const {
  if (auto c = constants_.find(name); c != constants_.end()) return &c->second;
  if (at_probe) {
    auto v = probe_values_.find(name);
    return v == probe_values_.end() ? nullptr : &v->second;
  }
  auto v = graph_.size_values.find(name);
  return v == graph_.size_values.end() ? nullptr : v->second.get();
}

bool Importer::set_sized_by_values(KnownNode& node, Mapped& m, std::string_view key) {
  absl::StatusOr<TensorType> type = value_type(node.proto.output(0));
  if (!type.ok() || type->dtype == DType::kOther) return false;
  const std::string& op = node.proto.op_type();
  const bool by_value_input = op == "Expand" || op == "Tile" || op == "Resize";
  // The input that gives the size: Resize's scales or sizes (the IR's
  // second input), Expand's shape, Tile's repeats.
  const std::string by = op == "Resize" ? node.input(node.present(3) ? 3 : 2) : node.input(1);
  // ONNX's inference leaves a size unknown where it cannot see an input's
  // value (a mask built from a Range, a size computed in floats): it comes
  // from the values the importer computed, at the given or the probe sizes:
  // Range's bounds, or Expand's, Tile's and Resize's input type and the
  // value that sizes it.
  auto from_values = [&](bool at_probe) -> std::optional<Dims> {
    if (op == "Range") {
      std::optional<double> v[3];
      for (int k = 0; k < 3; ++k) {
        const Tensor* t = known_value(node.input(k), at_probe);
        if (t != nullptr) v[k] = scalar_number(*t);
        if (!v[k]) return std::nullopt;
      }
      const double steps = std::ceil((*v[1] - *v[0]) / *v[2]);
      if (*v[2] == 0 || !(steps < 1e15)) return std::nullopt;
      return Dims{static_cast<std::int64_t>(std::max(steps, 0.0))};
    }
    const Tensor* value = by_value_input ? known_value(by, at_probe) : nullptr;
    if (value == nullptr) return std::nullopt;
    if (!at_probe) return dims_by_value(op, node.dims(0), *value);
    auto in = probe_dims_.find(node.input(0));
    return in == probe_dims_.end() ? std::nullopt : dims_by_value(op, in->second, *value);
  };
  Dims out = type->dims;
  if (!type->is_static()) {
    std::optional<Dims> dims = from_values(/*at_probe=*/false);
    if (!dims) return false;
    out = *std::move(dims);
  }
  if (!TensorType{type->dtype, out}.is_static()) return false;
  if (key == "repeats") {
    const Dims& in = node.dims(0);
    if (in.size() != out.size()) return false;
    Ints repeats(in.size());
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (in[k] <= 0 || out[k] % in[k] != 0) return false;
      repeats[k] = out[k] / in[k];
    }
    m.attributes.set("repeats", repeats);
  } else {
    m.attributes.set(std::string(key), out);
  }
  if (graph_.symbols.empty()) return true;
  // At the probe sizes: what ONNX's inference found, or the shape's value
  // there for the input's dimensions there.
  std::optional<Dims> probe;
  if (auto p = probe_dims_.find(node.proto.output(0)); p != probe_dims_.end()) probe = p->second;
  if (!probe) probe = from_values(/*at_probe=*/true);
  if (probe && probe->size() == out.size()) {
    Ints shapes{static_cast<std::int64_t>(probe->size())};
    shapes.insert(shapes.end(), probe->begin(), probe->end());
    m.attributes.set(std::string(kProbeShapes), shapes);
  }
  return true;
}

std::optional<Mapped> Importer::map_expand(KnownNode& node) {
  // The IR's Expand is by a shape with a 1 wherever the input has the
  // output's dimension and the created dimensions as they are. It holds at
  // every size when each dimension either follows the input's at the probe
  // sizes too, or is created from a 1 and the same there (a repeat of key
  // heads, say). A created dimension that follows a symbol (a mask
  // broadcast to the sequence) is an Expand by its shape as a value, sized
  // by that value (sized_by_values).
  absl::StatusOr<TensorType> out = value_type(node.proto.output(0));
  if (!out.ok() || out->dtype == DType::kOther) return std::nullopt;
  const auto by_value = [&]() -> std::optional<Mapped> {
    Mapped m{Op::kExpand, {}, node.in};
    if (!node.present(1) || constant_ints(node.input(1)) || !set_sized_by_values(node, m, "shape"))
      return std::nullopt;
    return m;
  };
  // ONNX's inference leaves an Expand by a constant shape untyped where it
  // could not type the input (a meshgrid of positions, RT-DETR's): the
  // dimensions follow from the input's, at the given and the probe sizes.
  const Tensor* constant_shape = node.present(1) && constant_ints(node.input(1))
                                     ? known_value(node.input(1), /*at_probe=*/false)
                                     : nullptr;
  std::optional<Dims> out_at_probe;
  if (auto it = probe_dims_.find(node.proto.output(0)); it != probe_dims_.end())
    out_at_probe = it->second;
  if (!out->is_static() && constant_shape != nullptr) {
    std::optional<Dims> dims = dims_by_value("Expand", node.dims(0), *constant_shape);
    auto in_probe = probe_dims_.find(node.proto.input(0));
    if (!dims) return std::nullopt;
    out->dims = *dims;
    if (in_probe != probe_dims_.end())
      out_at_probe = dims_by_value("Expand", in_probe->second, *constant_shape);
  }
  if (!out->is_static()) return by_value();
  const Dims& in = types_[node.in[0]].parts[0].dims;
  if (in.size() > out->dims.size()) return by_value();
  const std::size_t lead = out->dims.size() - in.size();
  Ints shape(out->dims.begin(), out->dims.end());
  for (std::size_t k = lead; k < shape.size(); ++k)
    if (in[k - lead] == shape[k]) shape[k] = 1;
  if (!graph_.symbols.empty()) {
    auto in_probe = probe_dims_.find(node.proto.input(0));
    if (in_probe == probe_dims_.end() || !out_at_probe ||
        in_probe->second.size() != in.size() || out_at_probe->size() != out->dims.size())
      return by_value();
    for (std::size_t k = 0; k < out->dims.size(); ++k) {
      const std::int64_t at = out->dims[k], at_probe = (*out_at_probe)[k];
      const std::int64_t from = k < lead ? 1 : in[k - lead];
      const std::int64_t from_probe = k < lead ? 1 : in_probe->second[k - lead];
      const bool follows = from == at && from_probe == at_probe;
      const bool created = from == 1 && from_probe == 1 && at == at_probe;
      if (!follows && !created) return by_value();
    }
  }
  return Mapped{Op::kExpand, {{"shape", shape}}, node.first(1)};
}

std::optional<Mapped> Importer::map_resize(KnownNode& node) {
  // Opset 11 on: X, roi, scales, sizes (one of the last two given). The
  // IR's keeps X and the scales or sizes, and carries the output's size.
  if (opset_ < 11) return std::nullopt;
  const bool by_sizes = node.present(3);
  if (!by_sizes && !node.present(2)) return std::nullopt;
  AttrReader& r = node.attrs;
  Mapped m{Op::kResize, {}, {node.in[0], node.in[by_sizes ? 3 : 2]}};
  m.attributes.set("mode", r.s("mode").value_or("nearest"));
  m.attributes.set("coordinate_transformation_mode",
                   r.s("coordinate_transformation_mode").value_or("half_pixel"));
  m.attributes.set("nearest_mode", r.s("nearest_mode").value_or("round_prefer_floor"));
  m.attributes.set("cubic_coeff_a", r.f("cubic_coeff_a").value_or(-0.75));
  m.attributes.set("exclude_outside", r.i("exclude_outside").value_or(0));
  r.f("extrapolation_value");  // read by tf_crop_and_resize only, which the IR has not
  if (!set_sized_by_values(node, m, "shape")) return std::nullopt;
  return m;
}

std::optional<Mapped> Importer::map_value_op(KnownNode& node) {
  const std::string& t = node.proto.op_type();
  AttrReader& r = node.attrs;
  if (t == "Min" || t == "Max") {  // ONNX's are variadic; the IR's take two
    if (node.in.size() == 1) return Mapped{Op::kIdentity, {}, node.in};
    if (node.in.size() != 2) return std::nullopt;
    return Mapped{t == "Min" ? Op::kMin : Op::kMax, {}, node.in};
  }
  if (t == "GatherElements")
    return Mapped{Op::kGatherElements, {{"axis", r.i("axis").value_or(0)}}, node.in};
  if (t == "GatherND")
    return Mapped{Op::kGatherND, {{"batch_dims", r.i("batch_dims").value_or(0)}}, node.in};
  if (t == "EyeLike") {
    Mapped m{Op::kEyeLike, {{"k", r.i("k").value_or(0)}}, node.in};
    if (std::optional<std::int64_t> dtype = r.i("dtype")) {
      std::optional<DType> d = dtype_from_onnx(static_cast<int>(*dtype));
      if (!d) return std::nullopt;
      m.attributes.set("dtype", std::string(dtype_name(*d)));
    }
    return m;
  }
  if (t == "GridSample") {  // 4-D (opset 20's N-D and its mode names read through opset 17's)
    if (node.dims(0).size() != 4) return std::nullopt;
    Mapped m{Op::kGridSample, {}, node.in};
    m.attributes.set("mode", r.s("mode").value_or("bilinear"));
    m.attributes.set("padding_mode", r.s("padding_mode").value_or("zeros"));
    m.attributes.set("align_corners", r.i("align_corners").value_or(0));
    return m;
  }
  if (t == "Trilu") {  // k, an optional int64 scalar input, read where constant
    Mapped m{Op::kTrilu, {{"upper", r.i("upper").value_or(1)}, {"k", std::int64_t{0}}}, node.first(1)};
    if (node.present(1)) {
      std::optional<Ints> k = constant_ints(node.input(1));
      if (!k || k->size() != 1) return std::nullopt;
      m.attributes.set("k", (*k)[0]);
    }
    return m;
  }
  if (t == "TopK") {  // k: an attribute up to opset 9, then an int64[1] input read where constant
    std::optional<Ints> k =
        opset_ < 10 ? std::optional<Ints>(Ints{r.i("k").value_or(-1)})
                    : (node.present(1) ? constant_ints(node.input(1)) : std::nullopt);
    if (!k || k->size() != 1) return std::nullopt;
    Mapped m{Op::kTopK, {{"k", (*k)[0]}, {"axis", r.i("axis").value_or(-1)}}, node.first(1)};
    m.attributes.set("largest", r.i("largest").value_or(1));
    m.attributes.set("sorted", r.i("sorted").value_or(1));
    return m;
  }
  if (t == "ScatterND" || t == "ScatterElements") {
    if (node.in.size() != 3) return std::nullopt;
    Mapped m{t == "ScatterND" ? Op::kScatterND : Op::kScatterElements, {}, node.in};
    m.attributes.set("reduction", r.s("reduction").value_or("none"));
    if (t == "ScatterElements") m.attributes.set("axis", r.i("axis").value_or(0));
    return m;
  }
  if (t == "CumSum") {
    std::optional<Ints> axis = node.present(1) ? constant_ints(node.input(1)) : std::nullopt;
    if (!axis || axis->size() != 1) return std::nullopt;
    Mapped m{Op::kCumSum, {{"axis", (*axis)[0]}}, node.first(1)};
    m.attributes.set("exclusive", r.i("exclusive").value_or(0));
    m.attributes.set("reverse", r.i("reverse").value_or(0));
    return m;
  }
  if (t == "Tile") {
    if (opset_ < 6 || !node.present(1)) return std::nullopt;
    if (std::optional<Ints> repeats = constant_ints(node.input(1)))
      return Mapped{Op::kTile, {{"repeats", *repeats}}, node.first(1)};
    Mapped m{Op::kTile, {}, node.in};
    if (!set_sized_by_values(node, m, "repeats")) return std::nullopt;
    return m;
  }
  if (t == "Range") {
    Mapped m{Op::kRange, {}, node.in};
    if (node.in.size() != 3 || !set_sized_by_values(node, m, "shape")) return std::nullopt;
    return m;
  }
  // ConstantOfShape: its fill is a one-element tensor (float32 0 where absent).
  Mapped m{Op::kConstantOfShape, {}, node.first(1)};
  if (const onnx::AttributeProto* value = r.find("value")) {
    if (!value->has_t()) return std::nullopt;
    absl::StatusOr<Tensor> fill = tensor_from_proto(value->t());
    std::optional<double> v = fill.ok() ? scalar_number(*fill) : std::nullopt;
    if (!v) return std::nullopt;
    m.attributes.set("value", *v);
    m.attributes.set("dtype", std::string(dtype_name(fill->dtype())));
  }
  if (!set_sized_by_values(node, m, "shape")) return std::nullopt;
  return m;
}

}  // namespace saturn::tensor::onnx_io

// IR -> ONNX: the value operators with attributes. Those sized by values
// (tensor/ops.h) are written with the inputs that give their size, so the
// written model computes it at any size.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "saturn/onnx/exporter.h"
#include "saturn/onnx/proto.h"
#include "saturn/tensor/interpreter/kernels.h"

namespace saturn::tensor::onnx_io {

absl::Status Exporter::emit_value_op(const Node& n, const Attributes& a,
                                     const std::vector<std::string>& in, const std::string& out) {
  switch (n.op) {
    case Op::kExpand:
      node("Expand", {in[0], in.size() == 2 ? in[1] : ints_constant(*a.get_ints("shape"))}, {out});
      return absl::OkStatus();
    case Op::kTile:
      node("Tile", {in[0], in.size() == 2 ? in[1] : ints_constant(*a.get_ints("repeats"))}, {out});
      return absl::OkStatus();
    case Op::kConstantOfShape: {
      const DType dtype = *parse_dtype(*a.get_string("dtype"));
      auto* c = node("ConstantOfShape", in, {out});
      auto* value = c->add_attribute();
      value->set_name("value");
      value->set_type(onnx::AttributeProto::TENSOR);
      tensor_to_proto(kernels::filled(TensorType{dtype, {1}}, *a.get_float("value")), "",
                      value->mutable_t());
      return absl::OkStatus();
    }
    case Op::kCumSum: {
      const Tensor axis(TensorType{DType::kInt64, {}}, Ints{axis_of(n, 0)});
      auto* c = node("CumSum", {in[0], constant(axis)}, {out});
      if (*a.get_int("exclusive") != 0) set_int(c, "exclusive", 1);
      if (*a.get_int("reverse") != 0) set_int(c, "reverse", 1);
      return absl::OkStatus();
    }
    case Op::kGatherElements:
      set_int(node("GatherElements", in, {out}), "axis", axis_of(n, 0));
      return absl::OkStatus();
    case Op::kGatherND: {
      auto* g = node("GatherND", in, {out});
      if (*a.get_int("batch_dims") != 0) set_int(g, "batch_dims", *a.get_int("batch_dims"));
      return absl::OkStatus();
    }
    case Op::kScatterND:
    case Op::kScatterElements: {
      auto* s = node(op_name(n.op), in, {out});
      if (n.op == Op::kScatterElements) set_int(s, "axis", axis_of(n, 0));
      if (const std::string& reduction = *a.get_string("reduction"); reduction != "none")
        set_string(s, "reduction", reduction);
      return absl::OkStatus();
    }
    case Op::kResize:
      return emit_resize(n, a, in, out);
    case Op::kGridSample: {  // opset 16's mode names (raise_to_versions renames them at 20)
      auto* g = node("GridSample", in, {out});
      set_string(g, "mode", *a.get_string("mode"));
      if (*a.get_string("padding_mode") != "zeros") set_string(g, "padding_mode", *a.get_string("padding_mode"));
      if (*a.get_int("align_corners") != 0) set_int(g, "align_corners", 1);
      return absl::OkStatus();
    }
    case Op::kTrilu: {
      std::vector<std::string> args = in;
      if (*a.get_int("k") != 0) args.push_back(constant(Tensor(TensorType{DType::kInt64, {}}, Ints{*a.get_int("k")})));
      auto* t = node("Trilu", args, {out});
      if (*a.get_int("upper") != 1) set_int(t, "upper", *a.get_int("upper"));
      return absl::OkStatus();
    }
    case Op::kEyeLike: {
      auto* e = node("EyeLike", in, {out});
      if (*a.get_int("k") != 0) set_int(e, "k", *a.get_int("k"));
      if (const std::string& dtype = *a.get_string("dtype"); !dtype.empty())
        set_int(e, "dtype", dtype_to_onnx(*parse_dtype(dtype)));
      return absl::OkStatus();
    }
    default:
      return absl::InternalError("not a value operator with attributes");
  }
}

// TopK: values and indices; k an attribute before opset 10, then an input.
absl::Status Exporter::emit_top_k(int i, const std::vector<std::string>& in) {
  const Attributes& a = g_.nodes[i].attributes;
  onnx::NodeProto* t;
  if (opset_ < 10) {
    t = node("TopK", in, names_[i]);
    set_int(t, "k", *a.get_int("k"));
  } else {
    t = node("TopK", {in[0], ints_constant({*a.get_int("k")})}, names_[i]);
  }
  set_int(t, "axis", axis_of(g_.nodes[i], 0));
  if (opset_ >= 11) {
    if (*a.get_int("largest") != 1) set_int(t, "largest", 0);
    if (*a.get_int("sorted") != 1) set_int(t, "sorted", 0);
  } else if (*a.get_int("largest") != 1 || *a.get_int("sorted") != 1) {
    return absl::InvalidArgumentError("TopK of the smallest or unsorted needs opset 11 or later");
  }
  return absl::OkStatus();
}

// Resize: X, roi, scales, sizes. Opsets 11 and 12 want roi, and scales
// where sizes are given, as (empty) tensors; later ones take "".
absl::Status Exporter::emit_resize(const Node& n, const Attributes& a,
                                   const std::vector<std::string>& in, const std::string& out) {
  const bool by_sizes = types_[n.inputs[1]].parts[0].dtype == DType::kInt64;
  const std::string none =
      opset_ < 13 ? constant(Tensor(TensorType{DType::kFloat32, {0}}, std::vector<float>{})) : "";
  auto* r = node("Resize", by_sizes ? std::vector<std::string>{in[0], none, none, in[1]}
                                    : std::vector<std::string>{in[0], none, in[1]},
                 {out});
  for (const char* key : {"mode", "coordinate_transformation_mode", "nearest_mode"})
    set_string(r, key, *a.get_string(key));
  set_float(r, "cubic_coeff_a", *a.get_float("cubic_coeff_a"));
  if (*a.get_int("exclude_outside") != 0) set_int(r, "exclude_outside", 1);
  return absl::OkStatus();
}

}  // namespace saturn::tensor::onnx_io

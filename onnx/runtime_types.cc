#include "saturn/onnx/runtime_types.h"

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/onnx/proto.h"
#include "saturn/tensor/infer.h"

namespace saturn::tensor::onnx_io {

namespace {

std::int64_t int_attribute(const onnx::NodeProto& n, std::string_view name, std::int64_t fallback) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

onnx::TypeProto tensor_type(int elem_type, const Dims& dims) {
  onnx::TypeProto type;
  auto* tt = type.mutable_tensor_type();
  tt->set_elem_type(elem_type);
  for (std::int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  return type;
}

// The product of a [..., M, K] and b [..., K, N]: MatMul's inference.
std::optional<Dims> matmul_dims(const Dims& a, const Dims& b) {
  const ValueType in[] = {ValueType::of(TensorType{DType::kFloat32, a}),
                          ValueType::of(TensorType{DType::kFloat32, b})};
  absl::StatusOr<ValueType> out = infer_type(Op::kMatMul, {}, in);
  if (!out.ok()) return std::nullopt;
  return out->tensor().dims;
}

}  // namespace

std::optional<onnx::TypeProto> runtime_operator_type(const onnx::NodeProto& n,
                                                      const ValueTypeLookup& input) {
  auto in = [&](int i) -> std::optional<std::pair<int, Dims>> {
    if (i >= n.input_size() || n.input(i).empty()) return std::nullopt;
    return input(n.input(i));
  };
  const std::string& op = n.op_type();
  if (n.domain() == kKeptDomain && (op == "QuantizeLinear" || op == "DequantizeLinear")) {
    // Opset 21's blocked scales (as the lowering keeps them): float out of a
    // DequantizeLinear; the zero point's type out of a QuantizeLinear
    // (output_dtype's, or uint8, without one).
    auto x = in(0);
    if (!x) return std::nullopt;
    if (op == "DequantizeLinear") return tensor_type(onnx::TensorProto::FLOAT, x->second);
    if (auto zero = in(2)) return tensor_type(zero->first, x->second);
    const std::int64_t named = int_attribute(n, "output_dtype", 0);
    return tensor_type(named != 0 ? static_cast<int>(named) : onnx::TensorProto::UINT8, x->second);
  }
  if (n.domain() != "com.microsoft" || n.output_size() < 1) return std::nullopt;
  // Elementwise on x (input 0), or broadcasting a (0) with b (3).
  if (op == "QLinearSigmoid" || op == "QLinearLeakyRelu" || op == "QLinearSoftmax") {
    if (auto x = in(0)) return tensor_type(x->first, x->second);
    return std::nullopt;
  }
  if (op == "QLinearAdd" || op == "QLinearMul") {
    auto a = in(0), b = in(3);
    if (!a || !b) return std::nullopt;
    std::optional<Dims> out = broadcast_dims(a->second, b->second);
    if (!out) return std::nullopt;
    return tensor_type(a->first, *out);
  }
  if (op == "QLinearGlobalAveragePool") {
    auto x = in(0);
    if (!x || x->second.size() < 3) return std::nullopt;
    Dims out = x->second;
    const bool channels_last = int_attribute(n, "channels_last", 0) != 0;
    for (std::size_t d = channels_last ? 1 : 2; d < out.size() - (channels_last ? 1 : 0); ++d)
      out[d] = 1;
    return tensor_type(x->first, out);
  }
  if (op == "QLinearConcat") {  // y_scale, y_zero_point, then (x, scale, zero point) each
    auto zero = in(1);
    if (!zero || n.input_size() < 5 || (n.input_size() - 2) % 3 != 0) return std::nullopt;
    std::optional<Dims> out;
    const std::int64_t axis = int_attribute(n, "axis", 0);
    for (int i = 2; i < n.input_size(); i += 3) {
      auto x = in(i);
      if (!x) return std::nullopt;
      const std::optional<std::int64_t> k = normalize_axis(axis, x->second.size());
      if (!k) return std::nullopt;
      if (!out) {
        out = x->second;
        continue;
      }
      if (out->size() != x->second.size()) return std::nullopt;
      (*out)[*k] += x->second[*k];
    }
    return tensor_type(zero->first, *out);
  }
  if (op == "QGemm") {  // a, scale, zero, b, scale, zero, [c], [y_scale, y_zero_point]
    auto a = in(0), b = in(3);
    if (!a || !b || a->second.size() != 2 || b->second.size() != 2) return std::nullopt;
    const std::int64_t m = a->second[int_attribute(n, "transA", 0) != 0 ? 1 : 0];
    const std::int64_t cols = b->second[int_attribute(n, "transB", 0) != 0 ? 0 : 1];
    // Float without a y_scale; else y's zero point's type (uint8 without one).
    int elem = onnx::TensorProto::FLOAT;
    if (in(7)) elem = in(8) ? in(8)->first : onnx::TensorProto::UINT8;
    return tensor_type(elem, Dims{m, cols});
  }
  if (op == "MatMulNBits") {  // a [..., K] times b's N rows: a's type, [..., N]
    auto a = in(0);
    const std::int64_t cols = int_attribute(n, "N", 0);
    if (!a || a->second.empty() || cols < 1) return std::nullopt;
    Dims out = a->second;
    out.back() = cols;
    return tensor_type(a->first, out);
  }
  if (op == "DynamicQuantizeMatMul" || op == "MatMulIntegerToFloat") {
    auto a = in(0), b = in(1);
    if (!a || !b) return std::nullopt;
    std::optional<Dims> out = matmul_dims(a->second, b->second);
    if (!out) return std::nullopt;
    return tensor_type(a->first == onnx::TensorProto::FLOAT16 ? a->first : onnx::TensorProto::FLOAT,
                       *out);
  }
  return std::nullopt;
}

}  // namespace saturn::tensor::onnx_io

// IR → ONNX: the normalizations and attention operators, written as the
// runtime's fused nodes where the target runs them (onnxruntime's
// com.microsoft domain, or the standard operators of opset 23) and spelled
// in older operators otherwise. export_ops.cc writes the others.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "saturn/onnx/exporter.h"
#include "saturn/onnx/proto.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels.h"

namespace saturn::tensor::onnx_io {

namespace {

// An int32 tensor of shape `dims`, every element `value`.
Tensor int32_filled(Dims dims, std::int64_t value) {
  return kernels::filled(TensorType{DType::kInt32, std::move(dims)}, static_cast<double>(value));
}

}  // namespace

absl::Status Exporter::emit_layer_norm(int i, const std::vector<std::string>& in,
                                       const std::string& out, std::size_t rank) {
  const Attributes& a = g_.nodes[i].attributes;
  std::int64_t axis = *normalize_axis(*a.get_int("axis"), rank);
  double eps = *a.get_float("epsilon");
  // onnxruntime fuses a LayerNorm (LayerNormalization, or from opset 13 on
  // the normalization spelled out as PyTorch exports it) into its
  // LayerNormalization kernel (on ViT's [1,197,192], 27 us against about
  // 76 us for the separate kernels). But after an Add read by nothing else
  // (a post-norm residual, as in BERT) it fuses both into its
  // SkipLayerNormalization kernel, which was 3-4x slower than the separate
  // kernels on both x86 machines of the recorded results (onnxruntime 1.30,
  // one thread; BERT-base's [1,128,768]: 433 us against 121 us alone and
  // 18 us for the Add; on an AMD EPYC, ALBERT-base ran 1.038x faster with
  // its 24 such normalizations spelled out unfused). There the
  // normalization is spelled out with the variance squared by Mul, which
  // onnxruntime does not fuse. (The IR's
  // SkipLayerNormalization is that kernel, for where it pays.)
  const int x = g_.nodes[i].inputs[0];
  int readers = 0;
  for (int j = 0; j < g_.size(); ++j) {
    if (!live_[j]) continue;
    for (int input : g_.nodes[j].inputs) readers += input == x;
  }
  for (const GraphOutput& o : g_.outputs) readers += o.node == x;
  const bool blocks_fusion = g_.nodes[x].op == Op::kAdd && readers == 1;
  if (opset_ >= 17 && !blocks_fusion) {
    auto* l = node("LayerNormalization", in, {out});
    set_int(l, "axis", axis);
    set_float(l, "epsilon", eps);
    return absl::OkStatus();
  }
  Ints axes;
  for (auto k = axis; k < static_cast<std::int64_t>(rank); ++k) axes.push_back(k);
  auto mean = [&](const std::string& x) {
    std::string m = fresh("saturn_tmp");
    set_ints(node("ReduceMean", {x}, {m}), "axes", axes);
    return m;
  };
  std::string centred = binary("Sub", in[0], mean(in[0]));
  std::string var = mean(blocks_fusion ? binary("Mul", centred, centred)
                                       : binary("Pow", centred, scalar_constant(2.0)));
  std::string denom = unary("Sqrt", binary("Add", var, scalar_constant(eps)));
  std::string scaled = binary("Mul", binary("Div", centred, denom), in[1]);
  binary("Add", scaled, in[2], out);
  return absl::OkStatus();
}

absl::Status Exporter::emit_simplified_layer_norm(const Attributes& a,
                                                  const std::vector<std::string>& in,
                                                  const std::string& out, std::size_t rank) {
  // From opset 23 on the operator is standard ONNX, RMSNormalization:
  // written here as onnxruntime's SimplifiedLayerNormalization (the same
  // inputs and attributes), which libonnx's checker passes and
  // raise_to_versions renames.
  if (default_domain_opset(g_.opsets) >= 23) {
    auto* r = domain_node("com.microsoft", "SimplifiedLayerNormalization", in, {out});
    set_int(r, "axis", *a.get_int("axis"));
    set_float(r, "epsilon", *a.get_float("epsilon"));
    return absl::OkStatus();
  }
  // Before it, onnxruntime has no SimplifiedLayerNormalization in a domain
  // the ONNX checker accepts, but fuses this spelling (PyTorch's RMSNorm
  // export) into that kernel when it loads the model.
  Ints axes;
  for (auto k = *normalize_axis(*a.get_int("axis"), rank); k < static_cast<std::int64_t>(rank); ++k)
    axes.push_back(k);
  std::string squares = binary("Pow", in[0], scalar_constant(2.0));
  std::string mean = fresh("saturn_tmp");
  set_ints(node("ReduceMean", {squares}, {mean}), "axes", axes);
  std::string denom = unary("Sqrt", binary("Add", mean, scalar_constant(*a.get_float("epsilon"))));
  binary("Mul", binary("Div", in[0], denom), in[1], out);
  return absl::OkStatus();
}

absl::Status Exporter::emit_skip_layer_norm(int i, const Attributes& a,
                                            const std::vector<std::string>& in) {
  auto* s = runtime_node(g_.nodes[i].op, in, {names_[i][0], "", "", names_[i][1]});
  set_float(s, "epsilon", *a.get_float("epsilon"));
  return absl::OkStatus();
}

absl::Status Exporter::emit_group_query_attention(int i, const Attributes& a,
                                                  const std::vector<std::string>& in,
                                                  const std::string& out) {
  // Without a cache: every sequence holds all its tokens. From opset 23 on
  // the node is written without its sequence lengths, which raise_to_versions
  // reads as the standard Attention (whole sequences, causal), at any size.
  std::vector<std::string> inputs = {in[0], in[1], in[2]};
  if (needs_runtime_domain(Op::kGroupQueryAttention, default_domain_opset(g_.opsets))) {
    const Dims& q = types_[g_.nodes[i].inputs[0]].parts[0].dims;
    inputs.insert(inputs.end(), {"", "", constant(int32_filled({q[0]}, q[1] - 1)),
                                 constant(int32_filled({}, q[1]))});
  }
  auto* g = runtime_node(Op::kGroupQueryAttention, std::move(inputs), {out});
  set_int(g, "num_heads", *a.get_int("num_heads"));
  set_int(g, "kv_num_heads", *a.get_int("kv_num_heads"));
  if (*a.get_float("scale") != 0) set_float(g, "scale", *a.get_float("scale"));
  return absl::OkStatus();
}

absl::Status Exporter::emit_rotary_embedding(const Attributes& a,
                                             const std::vector<std::string>& in,
                                             const std::string& out) {
  // Position ids of shape [1] give the first position; token s then reads
  // row (first + s) of the tables. From opset 23 on the node is written
  // without them, which raise_to_versions reads as the standard
  // RotaryEmbedding with position ids 0..S-1 computed from x's shape.
  std::vector<std::string> inputs = {in[0], in[1], in[2]};
  if (needs_runtime_domain(Op::kRotaryEmbedding, default_domain_opset(g_.opsets)))
    inputs.insert(inputs.begin() + 1, constant(Tensor(TensorType{DType::kInt64, {1}}, Ints{0})));
  auto* r = runtime_node(Op::kRotaryEmbedding, std::move(inputs), {out});
  set_int(r, "interleaved", *a.get_int("interleaved"));
  return absl::OkStatus();
}

absl::Status Exporter::emit_quantized_runtime(Op op, const Attributes& a,
                                              std::vector<std::string> in,
                                              const std::string& out) {
  if (op == Op::kQGemm) {  // ONNX's order: a ... b_zero_point, c, y_scale, y_zero_point
    const std::string c = in.size() == 9 ? in[8] : "";
    in.resize(8);
    in.insert(in.begin() + 6, c);
  }
  auto* n = runtime_node(op, std::move(in), {out});
  for (const Attribute& attr : a.entries()) {
    if (const auto* v = std::get_if<std::int64_t>(&attr.value)) set_int(n, attr.key.c_str(), *v);
    if (const auto* v = std::get_if<double>(&attr.value)) set_float(n, attr.key.c_str(), *v);
  }
  return absl::OkStatus();
}

}  // namespace saturn::tensor::onnx_io

// ONNX → IR: operators read whole as one of the IR's fused operators:
// onnxruntime's com.microsoft kernels (and its quantized QLinearAdd,
// QLinearMul, QGemm, QLinearConcat, quantized unary operators and
// MatMulNBits), and opset 23's RMSNormalization, causal Attention and
// RotaryEmbedding (and opset 20's exact Gelu), which the opset lowering also
// spells in older operators for libonnx (importer.h's ExpandedNodes).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/onnx/importer.h"

namespace saturn::tensor::onnx_io {

std::optional<Mapped> Importer::map_runtime(KnownNode& node) {
  const onnx::NodeProto& n = node.proto;
  AttrReader& r = node.attrs;
  if (n.op_type() == "RotaryEmbedding") {
    // Position ids [0]: token s reads row s of the tables. Packed batches,
    // partial rotation, a scale or 3-D input (num_heads) stay opaque.
    if (node.in.size() != 4 || !node.present(1) || constant_ints(n.input(1)) != Ints{0})
      return std::nullopt;
    if (r.i("num_heads").value_or(0) != 0 || r.i("rotary_embedding_dim").value_or(0) != 0 ||
        r.i("is_packed_batching").value_or(0) != 0 || r.f("scale").value_or(1.0) != 1.0)
      return std::nullopt;
    return Mapped{Op::kRotaryEmbedding,
                  {{"interleaved", r.i("interleaved").value_or(0)}},
                  {node.in[0], node.in[2], node.in[3]}};
  }
  if (n.op_type() == "GroupQueryAttention") {
    // Causal attention over the whole sequence (sequence lengths S - 1 and
    // S, no cache, no rotary, no window), as saturn writes it.
    if (node.in.size() != 7 || node.present(3) || node.present(4) || !node.present(5) ||
        !node.present(6) || node.dims(0).size() != 3)
      return std::nullopt;
    const std::int64_t seq = node.dims(0)[1];
    std::optional<Ints> lengths = constant_ints(n.input(5)), total = constant_ints(n.input(6));
    if (!lengths || !total || *total != Ints{seq} ||
        *lengths != Ints(static_cast<std::size_t>(node.dims(0)[0]), seq - 1))
      return std::nullopt;
    if (r.i("do_rotary").value_or(0) != 0 || r.i("local_window_size").value_or(-1) != -1 ||
        r.f("softcap").value_or(0.0) != 0.0 || r.i("smooth_softmax").value_or(0) != 0)
      return std::nullopt;
    std::optional<std::int64_t> heads = r.i("num_heads"), kv_heads = r.i("kv_num_heads");
    if (!heads || !kv_heads) return std::nullopt;
    r.i("rotary_interleaved");
    return Mapped{Op::kGroupQueryAttention,
                  {{"num_heads", *heads}, {"kv_num_heads", *kv_heads}, {"scale", r.f("scale").value_or(0.0)}},
                  node.first(3)};
  }
  if (n.op_type() == "QLinearAdd" || n.op_type() == "QLinearMul") {
    // Every zero point given, as onnxruntime's quantizer writes them.
    if (!node.all_present(8)) return std::nullopt;
    return Mapped{n.op_type() == "QLinearAdd" ? Op::kQLinearAdd : Op::kQLinearMul, {},
                  node.first(8)};
  }
  if (n.op_type() == "QGemm") {
    // Requantized (y's scale and zero point given), every zero point given;
    // the IR takes c last, as QLinearConv its bias.
    if (!node.all_present(6) || !node.present(7) || !node.present(8)) return std::nullopt;
    std::vector<int> in = node.first(6);
    in.insert(in.end(), {node.in[7], node.in[8]});
    if (node.present(6)) in.push_back(node.in[6]);
    return Mapped{Op::kQGemm,
                  {{"alpha", r.f("alpha").value_or(1.0)},
                   {"transA", r.i("transA").value_or(0)},
                   {"transB", r.i("transB").value_or(0)}},
                  std::move(in)};
  }
  if (n.op_type() == "QLinearConcat") {
    std::optional<std::int64_t> axis = r.i("axis");
    if (!axis || !node.all_present(static_cast<int>(node.in.size()))) return std::nullopt;
    return Mapped{Op::kQLinearConcat, {{"axis", *axis}}, node.in};
  }
  if (const std::optional<Op> op = find_op(n.op_type()); op && is_quantized_unary(*op)) {
    if (node.in.size() != 5 || !node.all_present(5)) return std::nullopt;
    Mapped m{*op, {}, node.in};
    if (*op == Op::kQLinearLeakyRelu) m.attributes.set("alpha", r.f("alpha").value_or(0.01));
    if (*op == Op::kQLinearGlobalAveragePool)
      m.attributes.set("channels_last", r.i("channels_last").value_or(0));
    if (*op == Op::kQLinearSoftmax) {
      std::optional<std::int64_t> opset = r.i("opset");
      if (!opset) return std::nullopt;
      m.attributes.set("opset", *opset);
      m.attributes.set("axis", r.i("axis").value_or(-1));
    }
    return m;
  }
  if (n.op_type() == "MatMulNBits") {
    // Without g_idx and bias; zero points, where given, packed as uint8
    // (inference refuses float ones).
    if (!node.all_present(3) || node.present(4) || node.present(5)) return std::nullopt;
    Mapped m{Op::kMatMulNBits, {}, node.first(node.present(3) ? 4 : 3)};
    for (const char* key : {"K", "N", "bits", "block_size", "accuracy_level"}) {
      if (std::optional<std::int64_t> v = r.i(key)) m.attributes.set(key, *v);
    }
    return m;
  }
  if (n.op_type() == "SkipSimplifiedLayerNormalization" || n.op_type() == "SkipLayerNormalization") {
    // Without a bias, and without the mean and inverse deviation outputs.
    const bool simplified = n.op_type() == "SkipSimplifiedLayerNormalization";
    const std::size_t inputs = simplified ? 3 : 4;
    if (node.in.size() != inputs || n.output_size() > 4) return std::nullopt;
    for (int o = 1; o < 3 && o < n.output_size(); ++o) {
      if (!n.output(o).empty()) return std::nullopt;
    }
    return Mapped{simplified ? Op::kSkipSimplifiedLayerNorm : Op::kSkipLayerNorm,
                  {{"epsilon", r.f("epsilon").value_or(1e-5)}},
                  node.first(static_cast<int>(inputs)),
                  {0, 3}};
  }
  return std::nullopt;
}

std::optional<int> Importer::add_expanded(const onnx::NodeProto& original) {
  AttrReader attrs(original);
  auto input = [&](int k) { return values_.at(original.input(k)); };
  absl::StatusOr<int> id = absl::UnimplementedError("not an IR operator");
  if (original.op_type() == "Gelu" && attrs.s("approximate").value_or("none") == "none") {
    id = append(Op::kGelu, {}, {input(0)}, original.output(0));
  } else if (original.op_type() == "Attention") {
    if (std::optional<int> whole = add_attention(original)) return whole;
  } else if (original.op_type() == "RotaryEmbedding") {
    if (std::optional<int> whole = add_rotary(original)) return whole;
  } else if (original.op_type() == "RMSNormalization") {
    id = append(Op::kSimplifiedLayerNorm,
                {{"axis", attrs.i("axis").value_or(-1)}, {"epsilon", attrs.f("epsilon").value_or(1e-5)}},
                {input(0), input(1)}, original.output(0));
  }
  if (!id.ok()) return std::nullopt;
  return *id;
}

namespace {

// The head counts of an Attention's q, k and v `dims` (all 3-D, with the
// node's head counts `given`, or all 4-D) when it attends over one sequence
// (as many keys as queries) with one head size; nullopt otherwise.
std::optional<std::pair<std::int64_t, std::int64_t>> one_sequence_heads(
    const std::vector<Dims>& dims, std::pair<std::int64_t, std::int64_t> given) {
  const std::size_t rank = dims[0].size();
  if ((rank != 3 && rank != 4) || dims[1].size() != rank || dims[2] != dims[1]) return std::nullopt;
  const std::int64_t seq = dims[0][rank == 4 ? 2 : 1];
  if (rank == 4) {
    if (dims[1][2] != seq || dims[1][3] != dims[0][3]) return std::nullopt;
    return std::pair{dims[0][1], dims[1][1]};
  }
  const auto [heads, kv_heads] = given;
  if (heads < 1 || kv_heads < 1 || dims[1][1] != seq || dims[0][2] % heads != 0 ||
      dims[1][2] * heads != dims[0][2] * kv_heads)
    return std::nullopt;
  return given;
}

// Whether `ids` is [batch, seq] with 0..seq-1 in each row.
bool positions_from_zero(const Tensor* ids, std::int64_t batch, std::int64_t seq) {
  if (ids == nullptr || ids->dtype() != DType::kInt64 || ids->dims() != Dims{batch, seq})
    return false;
  const auto values = ids->ints();
  for (std::int64_t i = 0; i < batch * seq; ++i)
    if (values[static_cast<std::size_t>(i)] != i % seq) return false;
  return true;
}

}  // namespace

std::optional<Importer::FloatInputs> Importer::float_inputs(const onnx::NodeProto& n,
                                                            int count) const {
  FloatInputs out;
  for (int k = 0; k < count && k < n.input_size(); ++k) {
    const int id = values_.at(n.input(k));
    const ValueType& t = types_[id];
    if (t.is_tuple || t.tensor().dtype != DType::kFloat32) return std::nullopt;
    out.ids.push_back(id);
    out.dims.push_back(t.tensor().dims);
  }
  if (static_cast<int>(out.ids.size()) != count) return std::nullopt;
  return out;
}

// Opset 23's causal Attention over one sequence (as many keys as queries,
// at every size), without a mask, a cache, a soft cap or the scores'
// output, is the IR's causal attention over packed heads
// (GroupQueryAttention, which the export writes back as Attention from
// opset 23 on). Heads given 4-D, [B, heads, S, D], are packed into
// [B, S, heads * D] and back by a Transpose and a Reshape each, which the
// rewrites cancel against the exporter's own.
std::optional<int> Importer::add_attention(const onnx::NodeProto& original) {
  AttrReader attrs(original);
  if (attrs.i("is_causal").value_or(0) == 0 || attrs.f("softcap").value_or(0.0) != 0.0)
    return std::nullopt;
  for (int k = 3; k < original.input_size(); ++k)
    if (!original.input(k).empty()) return std::nullopt;
  for (int k = 1; k < original.output_size(); ++k)
    if (!original.output(k).empty()) return std::nullopt;
  std::optional<FloatInputs> inputs = float_inputs(original, 3);
  if (!inputs) return std::nullopt;
  auto& [in, dims] = *inputs;
  std::vector<Dims> probe;
  for (int k = 0; k < 3; ++k) {
    auto at_probe = probe_dims_.find(original.input(k));
    probe.push_back(at_probe != probe_dims_.end() ? at_probe->second : dims[static_cast<std::size_t>(k)]);
  }
  const std::pair<std::int64_t, std::int64_t> given = {attrs.i("q_num_heads").value_or(0),
                                                       attrs.i("kv_num_heads").value_or(0)};
  const auto heads = one_sequence_heads(dims, given);
  if (!heads || one_sequence_heads(probe, given) != heads) return std::nullopt;
  const std::string& name = original.output(0);
  const Attributes swap = {{"perm", Ints{0, 2, 1, 3}}};
  const Attributes gqa = {{"num_heads", heads->first}, {"kv_num_heads", heads->second},
                          {"scale", attrs.f("scale").value_or(0.0)}};
  if (dims[0].size() == 3) {
    absl::StatusOr<int> y = append(Op::kGroupQueryAttention, gqa, in, name);
    return y.ok() ? std::optional(*y) : std::nullopt;
  }
  // [B, heads, S, D] as [B, S, heads * D], and back.
  const std::string_view what[] = {"q", "k", "v"};
  for (int k = 0; k < 3; ++k) {
    const Dims& d = dims[static_cast<std::size_t>(k)];
    absl::StatusOr<int> t =
        append(Op::kTranspose, swap, {in[k]}, fmt::format("{}/{}_sequence_first", name, what[k]));
    if (t.ok())
      t = append(Op::kReshape, {{"shape", Ints{d[0], d[2], d[1] * d[3]}}}, {*t},
                 fmt::format("{}/{}_packed", name, what[k]));
    if (!t.ok()) return std::nullopt;
    in[k] = *t;
  }
  const Dims& q = dims[0];
  absl::StatusOr<int> y = append(Op::kGroupQueryAttention, gqa, in, name + "/packed");
  if (y.ok()) y = append(Op::kReshape, {{"shape", Ints{q[0], q[2], q[1], q[3]}}}, {*y}, name + "/heads");
  if (y.ok()) y = append(Op::kTranspose, swap, {*y}, name);
  return y.ok() ? std::optional(*y) : std::nullopt;
}

// Opset 23's RotaryEmbedding of x [B, heads, S, head size], the whole head
// rotated, by 2-D tables [positions, head size / 2] at position ids that
// are 0..S-1 in every row, at the given and at the probe sizes (as the
// export writes them, and as a model without a cache computes them), is
// the IR's rotation of token s by row s of the tables.
std::optional<int> Importer::add_rotary(const onnx::NodeProto& original) {
  AttrReader attrs(original);
  if (original.input_size() != 4 || original.input(3).empty() ||
      attrs.i("num_heads").value_or(0) != 0)
    return std::nullopt;
  std::optional<FloatInputs> inputs = float_inputs(original, 3);
  if (!inputs) return std::nullopt;
  const auto& [in, dims] = *inputs;
  const Dims& x = dims[0];
  const std::int64_t rotary = attrs.i("rotary_embedding_dim").value_or(0);
  if (x.size() != 4 || dims[1].size() != 2 || dims[2] != dims[1] || dims[1][1] * 2 != x[3] ||
      (rotary != 0 && rotary != x[3]))
    return std::nullopt;
  const std::string& ids = original.input(3);
  const Tensor* given = nullptr;
  if (auto c = constants_.find(ids); c != constants_.end()) given = &c->second;
  if (auto v = graph_.size_values.find(ids); v != graph_.size_values.end()) given = v->second.get();
  if (!positions_from_zero(given, x[0], x[2]) || dims[1][0] < x[2]) return std::nullopt;
  if (graph_.size_values.contains(ids)) {
    auto at_probe = probe_values_.find(ids);
    auto x_at_probe = probe_dims_.find(original.input(0));
    if (at_probe == probe_values_.end() || x_at_probe == probe_dims_.end() ||
        x_at_probe->second.size() != 4 || dims[1][0] < x_at_probe->second[2] ||
        !positions_from_zero(&at_probe->second, x_at_probe->second[0], x_at_probe->second[2]))
      return std::nullopt;
  }
  absl::StatusOr<int> y = append(Op::kRotaryEmbedding, {{"interleaved", attrs.i("interleaved").value_or(0)}},
                                 in, original.output(0));
  return y.ok() ? std::optional(*y) : std::nullopt;
}

}  // namespace saturn::tensor::onnx_io

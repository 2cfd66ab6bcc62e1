// A quantized weight whose DequantizeLinear onnxruntime computes on every
// run, read as the runtime could compute it once, at load.
//
// onnxruntime's CPU provider fuses a quantized weight's DequantizeLinear
// into the integer kernel of the product that reads it, and leaves it
// unfused otherwise: then the weight is dequantized again on every run, and
// its constant folding does not touch it (it keeps DequantizeLinear nodes
// for the QDQ fusions). A Conv fuses into QLinearConv only between a
// DequantizeLinear and one QuantizeLinear; PyTorch's PT2E export for x86
// (torchao's X86InductorQuantizer) quantizes a convolution's output after
// the sum or the activation that follows it (the fused kernels of its own
// compiler), so a third to a half of a CNN's convolutions read a weight
// dequantized per run: measured on the corpus's PT2E exports (onnxruntime
// 1.30, one thread), MobileNetV3-Large 14.1 ms, and 8.0 ms with those
// weights spelled as below; EfficientNet-B0 30.4 and 17.4 ms; ResNet-18
// 24.7 and 19.1 ms.
//
// A Conv whose int32 bias is dequantized at a scale other than the input's
// times the weight's does not fuse either (onnxruntime checks the scale,
// loosely: within its tolerance it fuses and reads the bias at the wrong
// scale); the import reads such a bias in float, folded at load as below,
// which onnxruntime requantizes at the product's scale and fuses.
//
// The import reads such a DequantizeLinear as Mul(Sub(Cast(w), z), s), the
// scale and zero point shaped to broadcast along its axis: the same float
// values ((w - z) is exact in float32, one rounding in the product, as
// ONNX's DequantizeLinear), a weight-only computation that the written
// model keeps integer (widens_integer_weight) and onnxruntime folds at load.
// The input's price keeps the per-run DequantizeLinear (Graph::
// folded_at_import).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "saturn/onnx/importer.h"
#include "saturn/onnx/proto.h"

namespace saturn::tensor::onnx_io {

namespace {

bool is_dequantize(const onnx::NodeProto& n) {
  return (is_default_domain(n.domain()) || n.domain() == kKeptDomain) &&
         n.op_type() == "DequantizeLinear";
}

std::int64_t int_attribute(const onnx::NodeProto& n, const std::string& name, std::int64_t fallback) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

// How far a bias's scale may lie from the input's scale times the weight's
// for onnxruntime to still fuse the convolution: an absolute part and a part
// relative to the product. Measured on a DequantizeLinear-Conv-QuantizeLinear
// group (onnxruntime 1.30), moving the bias's scale by a factor at products
// from 1e-7 to 1e-2: a product of 1e-2 fused within 0.5% and not at 1.5%,
// 1e-4 within 1.5% and not at 2.5%, 1e-5 from 0.9 to 1.025 times, 2e-6 from
// 0.5 to 1.5 times and not at 0.1 or 3, 1e-7 at every factor tried. Every
// one of those fits |bias scale - product| <= 1e-6 + 1% of the product.
// Where it fuses, its kernel reads the int32 bias as if at the product's
// scale: at a product of 2e-6, a bias 0.5 times off landed outputs 10
// quantization steps from the group run as ONNX defines it, 0.88 times off
// 3 steps.
constexpr double kBiasScaleAbsolute = 1e-6;
constexpr double kBiasScaleRelative = 0.01;
// A bias's scale that far from the product, relative, is not the
// product's: the quantizer's own bias scale is the product to float32's
// rounding (6e-8).
constexpr double kBiasScaleExact = 1e-4;

}  // namespace

std::set<std::string> dequantized_at_load(const onnx::GraphProto& graph,
                                          const std::map<std::string, DType>& four_bit) {
  std::set<std::string> integer_weights, outputs, inputs;
  // An initializer that is also a graph input is its default only.
  for (const onnx::ValueInfoProto& v : graph.input()) inputs.insert(v.name());
  for (const onnx::TensorProto& t : graph.initializer()) {
    if ((t.data_type() == onnx::TensorProto::INT8 || t.data_type() == onnx::TensorProto::UINT8) &&
        !four_bit.contains(t.name()) && !inputs.contains(t.name()))
      integer_weights.insert(t.name());
  }
  for (const onnx::ValueInfoProto& v : graph.output()) outputs.insert(v.name());
  std::map<std::string, std::vector<std::pair<const onnx::NodeProto*, int>>> readers;
  std::map<std::string, const onnx::NodeProto*> producers;
  for (const onnx::NodeProto& n : graph.node()) {
    for (int i = 0; i < n.input_size(); ++i) readers[n.input(i)].push_back({&n, i});
    for (const std::string& o : n.output()) producers[o] = &n;
  }
  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const onnx::TensorProto& t : graph.initializer()) initializers[t.name()] = &t;
  // The float values of an initializer held in the file (empty otherwise).
  auto floats = [&](const std::string& name) -> std::vector<float> {
    auto it = initializers.find(name);
    if (it == initializers.end() || it->second->data_type() != onnx::TensorProto::FLOAT) return {};
    absl::StatusOr<Tensor> t = tensor_from_proto(*it->second);
    if (!t.ok()) return {};
    return {t->floats().begin(), t->floats().end()};
  };
  // The DequantizeLinear that gives `value`, through Identity nodes (the
  // TorchScript exporter reads an initializer shared between nodes through
  // one each), or nullptr. (A malformed cycle of Identities ends the walk.)
  auto dequantized_by = [&](const std::string& value) -> const onnx::NodeProto* {
    auto p = producers.find(value);
    for (int steps = 0; steps < graph.node_size() && p != producers.end() &&
                        p->second->op_type() == "Identity" && p->second->input_size() == 1;
         ++steps)
      p = producers.find(p->second->input(0));
    return p != producers.end() && is_dequantize(*p->second) && p->second->input_size() >= 2
               ? p->second
               : nullptr;
  };
  // Whether every scale of `conv`'s dequantized bias (per tensor or per
  // output channel) lies within `absolute` plus `relative` times the
  // product from the input's scale times the weight's; true without such
  // a bias. (A bias in float: onnxruntime quantizes it at load at the
  // product's scale, and fuses.)
  auto bias_within = [&](const onnx::NodeProto& conv, double absolute, double relative) {
    if (conv.input_size() < 3 || conv.input(2).empty()) return true;
    const onnx::NodeProto* x = dequantized_by(conv.input(0));
    const onnx::NodeProto* w = dequantized_by(conv.input(1));
    const onnx::NodeProto* b = dequantized_by(conv.input(2));
    if (x == nullptr || w == nullptr || b == nullptr) return true;
    const std::vector<float> xs = floats(x->input(1)), ws = floats(w->input(1)), bs = floats(b->input(1));
    if (xs.size() != 1 || ws.empty() || bs.empty() ||
        (ws.size() != 1 && bs.size() != 1 && ws.size() != bs.size()))
      return true;
    for (std::size_t m = 0; m < std::max(ws.size(), bs.size()); ++m) {
      const double expected = static_cast<double>(xs[0]) * ws[ws.size() == 1 ? 0 : m];
      const double actual = bs[bs.size() == 1 ? 0 : m];
      if (!(std::abs(actual - expected) <= absolute + relative * std::abs(expected))) return false;
    }
    return true;
  };
  // Whether `dq` dequantizes an int32 bias that the import may read in
  // float, folded at load: a per-tensor or per-channel scale, a zero point
  // of 0 (or none), and no reader but Conv biases, through Identity nodes.
  // onnxruntime quantizes a float bias at the input's scale times the
  // weight's when it loads the model, and then fuses the convolution
  // (measured on a uint8 group whose int32 bias is at 1.5 times the
  // product: read through DequantizeLinear it runs as a float Conv, read
  // as Mul(Cast(b), s) as a QLinearConv, its outputs within one
  // quantization step of the group as ONNX defines it).
  auto int32_initializer = [&](const std::string& name) {
    auto it = initializers.find(name);
    return it != initializers.end() && it->second->data_type() == onnx::TensorProto::INT32 &&
           !inputs.contains(name);
  };
  auto bias_folds = [&](const onnx::NodeProto& dq) {
    if (dq.input_size() < 2 || dq.output_size() != 1 || !int32_initializer(dq.input(0)) ||
        floats(dq.input(1)).empty() || int_attribute(dq, "block_size", 0) != 0)
      return false;
    if (dq.input_size() > 2 && !dq.input(2).empty()) {
      auto z = initializers.find(dq.input(2));
      if (z == initializers.end()) return false;
      absl::StatusOr<Tensor> zero = tensor_from_proto(*z->second);
      if (!zero.ok() || !is_integer(zero->dtype())) return false;
      for (std::int64_t i = 0; i < zero->size(); ++i)
        if (read_integer(*zero, i) != 0) return false;
    }
    // The values the bias reaches through Identity nodes (a tree: the
    // checker has passed the graph, whose values each have one producer).
    std::vector<std::string> values{dq.output(0)};
    for (std::size_t k = 0; k < values.size(); ++k) {
      if (outputs.contains(values[k])) return false;
      auto it = readers.find(values[k]);
      if (it == readers.end()) continue;
      for (const auto& [reader, slot] : it->second) {
        if (!is_default_domain(reader->domain())) return false;
        if (reader->op_type() == "Identity") {
          values.push_back(reader->output(0));
        } else if (reader->op_type() != "Conv" || slot != 2) {
          return false;
        }
      }
    }
    return true;
  };
  auto only_reader = [&](const std::string& value) -> const onnx::NodeProto* {
    auto it = readers.find(value);
    if (it == readers.end() || it->second.size() != 1 || outputs.contains(value)) return nullptr;
    return it->second[0].first;
  };
  // Whether onnxruntime's QDQ fusion may make `conv` a QLinearConv as its
  // groups stand: a DequantizeLinear before its input, one QuantizeLinear
  // after its output, or after a Relu or Clip there (which the fusion drops
  // where the quantization clips alike).
  auto fusable_group = [&](const onnx::NodeProto& conv) {
    if (dequantized_by(conv.input(0)) == nullptr) return false;
    // Past the checker, a default-domain node has the inputs and outputs
    // its schema counts; another domain's is not read.
    const onnx::NodeProto* next = only_reader(conv.output(0));
    if (next != nullptr && is_default_domain(next->domain()) &&
        (next->op_type() == "Relu" || next->op_type() == "Clip"))
      next = only_reader(next->output(0));
    return next != nullptr && is_default_domain(next->domain()) && next->op_type() == "QuantizeLinear";
  };
  // The biases read in float so that their convolutions fuse, and fuse
  // with the bias the model gives: every bias off the product's scale.
  std::set<std::string> found;
  for (const onnx::NodeProto& conv : graph.node()) {
    if (!is_default_domain(conv.domain()) || conv.op_type() != "Conv" || !fusable_group(conv) ||
        bias_within(conv, 0, kBiasScaleExact))
      continue;
    const onnx::NodeProto* bias = dequantized_by(conv.input(2));
    if (bias_folds(*bias)) found.insert(bias->output(0));
  }
  // Whether onnxruntime fuses `conv` with its bias as read.
  auto may_fuse = [&](const onnx::NodeProto& conv) {
    if (!fusable_group(conv)) return false;
    const onnx::NodeProto* bias = conv.input_size() > 2 ? dequantized_by(conv.input(2)) : nullptr;
    return (bias != nullptr && found.contains(bias->output(0))) ||
           bias_within(conv, kBiasScaleAbsolute, kBiasScaleRelative);
  };
  for (const onnx::NodeProto& n : graph.node()) {
    if (!is_dequantize(n) || n.input_size() < 2 || n.output_size() != 1 ||
        !integer_weights.contains(n.input(0)) || int_attribute(n, "block_size", 0) != 0 ||
        outputs.contains(n.output(0)))
      continue;
    auto it = readers.find(n.output(0));
    if (it == readers.end()) continue;
    const bool in_float_convolutions = std::ranges::all_of(it->second, [&](const auto& reader) {
      const onnx::NodeProto& r = *reader.first;
      return is_default_domain(r.domain()) && r.op_type() == "Conv" && reader.second == 1 &&
             !may_fuse(r);
    });
    if (in_float_convolutions) found.insert(n.output(0));
  }
  return found;
}

absl::StatusOr<bool> Importer::add_dequantized_at_load(const onnx::NodeProto& n) {
  auto scale = constants_.find(n.input(1));
  if (scale == constants_.end() || scale->second.dtype() != DType::kFloat32 ||
      scale->second.size() < 1)
    return false;
  const int weight = values_.at(n.input(0));
  const TensorType& type = types_[weight].tensor();
  const Tensor* zero_point = nullptr;
  if (n.input_size() > 2 && !n.input(2).empty()) {
    auto z = constants_.find(n.input(2));
    if (z == constants_.end() || z->second.size() != scale->second.size() ||
        z->second.dtype() != type.dtype)
      return false;
    zero_point = &z->second;
  }
  const auto rank = static_cast<std::int64_t>(type.dims.size());
  std::int64_t axis = int_attribute(n, "axis", 1);
  if (axis < 0) axis += rank;
  // Per tensor: the scale as it is; per axis: shaped [1, .., C, .., 1].
  const std::int64_t channels = scale->second.size();
  Dims shape;
  if (channels > 1) {
    if (axis < 0 || axis >= rank || type.dims[static_cast<std::size_t>(axis)] != channels) return false;
    shape.assign(static_cast<std::size_t>(rank), 1);
    shape[static_cast<std::size_t>(axis)] = channels;
  }
  const std::string& name = n.output(0);
  absl::StatusOr<int> value = append(Op::kCast, {{"to", "float32"}}, {weight}, name + ".widened");
  if (!value.ok()) return value.status();
  if (zero_point != nullptr) {
    std::vector<float> offsets(static_cast<std::size_t>(channels));
    for (std::size_t c = 0; c < offsets.size(); ++c)
      offsets[c] = static_cast<float>(read_integer(*zero_point, static_cast<std::int64_t>(c)));
    if (std::ranges::any_of(offsets, [](float z) { return z != 0; })) {
      add_weight(name + ".zero_point", Tensor(TensorType{DType::kFloat32, shape}, std::move(offsets)));
      value = append(Op::kSub, {}, {*value, values_.at(name + ".zero_point")}, name + ".centered");
      if (!value.ok()) return value.status();
    }
  }
  const std::span<const float> scales = scale->second.floats();
  add_weight(name + ".scale",
             Tensor(TensorType{DType::kFloat32, shape}, std::vector<float>(scales.begin(), scales.end())));
  absl::StatusOr<int> dequantized = append(Op::kMul, {}, {*value, values_.at(name + ".scale")}, name);
  if (!dequantized.ok()) return dequantized.status();
  FoldedWork work{Op::kDequantizeLinear, {{"axis", axis}, {"block_size", std::int64_t{0}}}, {},
                  types_[*dequantized], name, {}};
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) continue;
    work.inputs.push_back(types_[values_.at(n.input(i))]);
    work.reads.push_back(n.input(i));
  }
  graph_.folded_at_import.push_back(std::move(work));
  values_[name] = *dequantized;
  return true;
}

}  // namespace saturn::tensor::onnx_io

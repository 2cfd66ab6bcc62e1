// Measured tables: operator signatures, the measured cost model, reading a
// table, and the spellings a table prices as their parts.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/base/file.h"
#include "saturn/costmodel/cost_model.h"
#include "saturn/base/json.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace saturn {

using tensor::Op;
using tensor::ValueType;

std::string op_signature(Op op, const Attributes& a, std::span<const ValueType> inputs) {
  std::string s(tensor::op_name(op));
  s += a.to_string();
  s.push_back('(');
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) s.push_back(',');
    s += tensor::to_string(inputs[i]);
  }
  s.push_back(')');
  return s;
}

namespace {

// The value of the first /proc/cpuinfo line whose key is `key` ("model
// name", "flags"); nullopt where there is none.
std::optional<std::string> cpuinfo_value(std::string_view key) {
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    const std::size_t colon = line.find(':');
    if (line.starts_with(key) && colon != std::string::npos)
      return line.substr(std::min(line.size(), colon + 2));
  }
  return std::nullopt;
}

// Whether onnxruntime's CPU provider runs this QuantizeLinear or
// DequantizeLinear inside an integer kernel rather than on its own: it
// fuses a group (DequantizeLinear, the operator, QuantizeLinear) into
// QLinearConv, QLinearMatMul, QLinearAdd and the like where the activations
// are uint8, and a quantized weight's DequantizeLinear with it. An int8
// activation runs as float kernels (onnxruntime's QDQIsInt8Allowed is false
// off Arm): seen on a quantize_static model, whose int8 spelling loads with
// its Conv and Add in float between DequantizeLinear nodes and whose uint8
// spelling loads as QLinearConv and QLinearAdd
// (tests/python/test_quantization.py). A product's weight of another type
// than `weights` (the one the kernels multiply exactly: exact_weight_type)
// is priced as its own kernel, so that the extraction moves it
// (quantization.rules); so is a weight an Add, Mul, Concat or Gather reads
// in another type than uint8 (OpContext::read_as_activation): with VNNI, a bias added
// to a product in int8 kept BERT-base's Adds in float between
// DequantizeLinear nodes (122 of its 185), and its embedding table left in
// int8 behind a Gather whose output was moved to uint8 was dequantized
// whole on every run (31 ms of a 107 ms run).
//
// Where `signed_on_small` holds (x86 without VNNI: MeasuredCostModel::
// mixes_weight_types), an int8 weight of products whose activations are
// mostly non-negative (OpContext::small_activations) is inside the kernel
// too.
bool is_of_type(const ValueType& t, tensor::DType dtype) {
  return !t.is_tuple && t.tensor().dtype == dtype;
}

bool in_integer_kernel(Op op, std::span<const ValueType> inputs, const ValueType& output,
                       OpContext context, tensor::DType weights, bool signed_on_small) {
  if (context.on_its_own) return false;
  if (op == Op::kQuantizeLinear) return is_of_type(output, tensor::DType::kUInt8);
  if (op != Op::kDequantizeLinear || inputs.empty()) return false;
  if (context.weights_only && !context.read_as_activation) {
    return is_of_type(inputs[0], weights) ||
           (signed_on_small && context.small_activations &&
            is_of_type(inputs[0], tensor::DType::kInt8));
  }
  return is_of_type(inputs[0], tensor::DType::kUInt8);
}

// What onnxruntime's U8U8 product kernels take beyond its U8S8 ones on x86
// without VNNI, per multiply-add, in microseconds, where the table has no
// figure of its own (MeasuredCostModel::unsigned_weight_us_per_mac): QLinearMatMul with uint8
// activations, one thread, AMD EPYC with AVX2 (onnxruntime 1.30), uint8
// against int8 weights: [128, 3072] x [3072, 768] 4.81 against 3.69 ms,
// [128, 768] x [768, 768] 1.17 against 0.87 ms, [128, 768] x [768, 3072]
// 4.77 against 3.55 ms, [197, 3072] x [3072, 768] 8.29 against 7.15 ms;
// 2.5-4.1 ps a multiply-add, the smallest taken. What a uint8 weight costs
// where an int8 one would be as exact (OpContext::small_activations).
constexpr double kUnsignedWeightUsPerMac = 2.4e-6;

// Whether onnxruntime's CPU provider multiplies this integer product's
// activations in its slow path: int8 activations off Arm (no U8S8-style
// kernel for them on x86). Measured on the quantizer's QOperator spelling
// with int8 activations against the same models with uint8 activations
// (onnxruntime 1.30, AVX-512 VNNI, one thread): ResNet-18's 20 QLinearConv
// 172 against 7.7 ms, BERT-base's 96 QLinearMatMul 844 against 49 ms; and
// onnxruntime's QGemm alone, int8 against uint8 activations, 0.467 against
// 0.013 ms at [1, 512] x [512, 1000] and 5.72 against 0.270 ms at [128,
// 768] x [768, 768].
bool in_signed_activation_path(Op op, std::span<const ValueType> inputs) {
#if defined(__aarch64__) || defined(__arm__)
  return false;
#else
  const bool product = op == Op::kQLinearConv || op == Op::kQLinearMatMul || op == Op::kQGemm;
  return product && !inputs.empty() && !inputs[0].is_tuple &&
         inputs[0].tensor().dtype == tensor::DType::kInt8;
#endif
}

// The slowdown of that path, the smallest of the ratios measured above.
constexpr double kSignedActivationSlowdown = 17;

// onnxruntime's ConvInteger against its float Conv of the same shape (one
// thread; uint8 input, int8 kernel): 2.2-10x slower ungrouped, 21-41x
// depthwise over two runs on an AMD EPYC with AVX2 (1x1 and 3x3 kernels of
// 3 to 512 input channels at 7x7 to 224x224; depthwise 3x3 and 5x5 of 144
// and 960 channels). The smallest ratio of each kind.
constexpr double kConvIntegerSlowdown = 2.2;
constexpr double kGroupedConvIntegerSlowdown = 21;

// A ConvInteger the table lacks, as the float Conv of its shape it is
// measured against, or nullopt for another operator.
std::optional<std::pair<std::array<ValueType, 2>, ValueType>> as_float_conv(
    Op op, std::span<const ValueType> inputs, const ValueType& output) {
  if (op != Op::kConvInteger || inputs.size() < 2 || inputs[0].is_tuple || inputs[1].is_tuple ||
      output.is_tuple)
    return std::nullopt;
  auto in_float = [](const ValueType& t) {
    return ValueType::of(tensor::TensorType{tensor::DType::kFloat32, t.tensor().dims});
  };
  return std::pair{std::array{in_float(inputs[0]), in_float(inputs[1])}, in_float(output)};
}

}  // namespace

tensor::DType exact_weight_type() {
  static const tensor::DType type = [] {
#if defined(__aarch64__) || defined(__arm__)
    return tensor::DType::kInt8;
#else
    std::istringstream flags(cpuinfo_value("flags").value_or(""));
    for (std::string flag; flags >> flag;) {
      if (flag == "avx512_vnni" || flag == "avx_vnni") return tensor::DType::kInt8;
    }
    return tensor::DType::kUInt8;
#endif
  }();
  return type;
}

std::shared_ptr<const CostModel> MeasuredCostModel::with_integer_weights(tensor::DType type,
                                                                        bool mixed) const {
  auto model = std::make_shared<MeasuredCostModel>(alone_, between_, mixed_, fallback_,
                                                   measured_on_, masked_);
  model->source_ = source_;
  model->timed_threads_ = timed_threads_;
  model->unsigned_weight_us_per_mac_ = unsigned_weight_us_per_mac_;
  model->integer_weights_ = type;
  model->mixes_weight_types_ = mixed && type == tensor::DType::kUInt8;
  return model;
}

double MeasuredCostModel::node_cost(Op op, const Attributes& a, std::span<const ValueType> inputs,
                                    const ValueType& output, OpContext context) const {
  if (is_free_operator(op)) return 0;
  if (in_integer_kernel(op, inputs, output, context, integer_weights_, mixes_weight_types_)) {
    const bool unsigned_where_signed_fits = mixes_weight_types_ && context.small_activations &&
                                            op == Op::kDequantizeLinear &&
                                            is_of_type(inputs[0], tensor::DType::kUInt8);
    return unsigned_where_signed_fits
               ? context.small_activation_macs * unsigned_weight_us_per_mac()
               : 0;
  }
  if (std::vector<OpPart> parts = priced_as_parts(op, a, inputs.size()); !parts.empty()) {
    double total = 0;
    for (const OpPart& part : parts) {
      total +=
          node_cost(part.op, part.attributes, part_input_types(part, inputs, output), output,
                    part.reads_convolution ? OpContext{.input = FromConvolution::kYes} : context);
    }
    return total;
  }
  const std::string signature = op_signature(op, a, inputs);
  if (context.masked) {
    if (auto it = masked_.find(signature); it != masked_.end()) return it->second;
  }
  auto mixed = context.mixed == FromConvolution::kNo ? mixed_.end() : mixed_.find(signature);
  if (mixed != mixed_.end() && context.mixed == FromConvolution::kYes) return mixed->second;
  auto alone = alone_.find(signature);
  double price = 0;
  if (auto it = context.input == FromConvolution::kNo ? between_.end() : between_.find(signature);
      it != between_.end()) {
    price = context.input == FromConvolution::kYes || alone == alone_.end()
                ? it->second
                : std::max(it->second, alone->second);
  } else if (alone != alone_.end()) {
    price = alone->second;
  } else {
    fallbacks_.fetch_add(1, std::memory_order_relaxed);
    // One of onnxruntime's fused kernels is chosen only where it was
    // measured: their times differ from what their work suggests by up to
    // 10x either way (SkipLayerNormalization: 433 us, against 139 us for the
    // Add and the LayerNorm it replaces on BERT-base).
    if (tensor::is_runtime_operator(op) && !tensor::is_integer_operator(op))
      return kUnmeasuredRuntimeOperator;
    if (auto conv = as_float_conv(op, inputs, output)) {
      const bool grouped = a.get_int("group").value_or(1) > 1;
      return (grouped ? kGroupedConvIntegerSlowdown : kConvIntegerSlowdown) *
             node_cost(Op::kConv, a, conv->first, conv->second, context);
    }
    const double estimate = fallback_.node_cost(op, a, inputs, output, context);
    return in_signed_activation_path(op, inputs) ? kSignedActivationSlowdown * estimate : estimate;
  }
  // Mixed or not is open. Where an input surely is a convolution's output,
  // the choice that would make another input plain pays the difference
  // (reorder_penalty); otherwise the dearer price stands.
  if (mixed != mixed_.end() && context.input != FromConvolution::kYes)
    price = std::max(price, mixed->second);
  return price;
}

double MeasuredCostModel::unsigned_weight_us_per_mac() const {
  // The built-in figure is one thread's; the kernels divide their rows
  // among the table's threads (saturn calibrate on the quantized BERT-base
  // here: 3.54 ps at one thread, 1.76 at two).
  return unsigned_weight_us_per_mac_.value_or(kUnsignedWeightUsPerMac /
                                              std::max(1, timed_threads_));
}

double MeasuredCostModel::mixed_surcharge(Op op, const Attributes& a,
                                          std::span<const ValueType> inputs) const {
  if (mixed_.empty()) return 0;
  const std::string signature = op_signature(op, a, inputs);
  auto mixed = mixed_.find(signature);
  auto between = between_.find(signature);
  if (mixed == mixed_.end() || between == between_.end()) return 0;
  return std::max(0.0, mixed->second - between->second);
}

std::string machine_description() {
  return fmt::format("{}, {} hardware threads", cpuinfo_value("model name").value_or("unknown CPU"),
                     std::thread::hardware_concurrency());
}

absl::StatusOr<std::unique_ptr<MeasuredCostModel>> load_measured_cost_model(
    const std::string& path, RooflineCostModel fallback) {
  absl::StatusOr<std::string> text = read_text_file(path);
  if (!text.ok()) return text.status();
  return parse_measured_cost_model(*text, path, std::move(fallback));
}

absl::StatusOr<std::unique_ptr<MeasuredCostModel>> parse_measured_cost_model(
    std::string_view text, const std::string& path, RooflineCostModel fallback) {
  absl::StatusOr<nlohmann::json> j = parse_json(text, path);
  if (!j.ok()) return j.status();
  if (!j->is_object() || !j->contains("entries") || !(*j)["entries"].is_array()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: needs \"entries\", a list of {{\"signature\", \"us\"}}", path));
  }
  std::string machine;
  if (auto it = j->find("machine"); it != j->end()) {
    if (!it->is_string())
      return absl::InvalidArgumentError(fmt::format("{}: \"machine\" must be a string", path));
    machine = it->get<std::string>();
  }
  int threads = 0;
  if (auto it = j->find("threads"); it != j->end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 || it->get<std::int64_t>() > 4096)
      return absl::InvalidArgumentError(
          fmt::format("{}: \"threads\" must be a whole number of threads from 1", path));
    threads = it->get<int>();
  }
  // The quantized weights' figure (calibrate.cc's kIntegerWeights).
  std::optional<double> unsigned_weight_us;
  if (auto it = j->find("integer_weights"); it != j->end()) {
    auto us = it->is_object() ? it->find("unsigned_us_per_mac") : it->end();
    if (!it->is_object() || us == it->end() || !us->is_number() || us->get<double>() < 0)
      return absl::InvalidArgumentError(fmt::format(
          "{}: \"integer_weights\" needs \"unsigned_us_per_mac\", a non-negative number", path));
    unsigned_weight_us = us->get<double>();
  }
  MeasuredCostModel::Table alone, between, mixed, masked;
  const nlohmann::json& entries = (*j)["entries"];
  auto microseconds = [](const nlohmann::json& e, const char* key) -> std::optional<double> {
    auto it = e.find(key);
    if (it == e.end() || !it->is_number() || it->get<double>() < 0) return std::nullopt;
    return it->get<double>();
  };
  // An optional time of entry `i` (`key`, e.g. "mixed_us") into `table`.
  auto optional_entry = [&](const nlohmann::json& e, std::size_t i, const char* key,
                            const std::string& signature,
                            MeasuredCostModel::Table& table) -> absl::Status {
    if (!e.contains(key)) return absl::OkStatus();
    std::optional<double> us = microseconds(e, key);
    if (!us) {
      return absl::InvalidArgumentError(
          fmt::format("{}: entries[{}]: \"{}\" must be a non-negative number", path, i, key));
    }
    table[signature] = *us;
    return absl::OkStatus();
  };
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const nlohmann::json& e = entries[i];
    std::optional<double> us = e.is_object() ? microseconds(e, "us") : std::nullopt;
    if (!us || !e.contains("signature") || !e["signature"].is_string()) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: entries[{}]: needs a \"signature\" string and a non-negative \"us\"", path, i));
    }
    std::string signature = e["signature"].get<std::string>();
    if (absl::Status st = optional_entry(e, i, "masked_us", signature, masked); !st.ok()) return st;
    if (!e.contains("context")) {
      alone[std::move(signature)] = *us;
      continue;
    }
    std::optional<double> alone_us = microseconds(e, "alone_us");
    if (!e["context"].is_string() || e["context"].get<std::string>() != kBetweenConvolutions ||
        !alone_us) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: entries[{}]: a \"context\" must be \"{}\", with a non-negative \"alone_us\"", path,
          i, kBetweenConvolutions));
    }
    if (absl::Status st = optional_entry(e, i, "mixed_us", signature, mixed); !st.ok()) return st;
    between[signature] = *us;
    alone[std::move(signature)] = *alone_us;
  }
  auto model = std::make_unique<MeasuredCostModel>(std::move(alone), std::move(between),
                                                   std::move(mixed), std::move(fallback),
                                                   std::move(machine), std::move(masked));
  model->set_source(path);
  model->set_timed_threads(threads);
  model->set_unsigned_weight_us_per_mac(unsigned_weight_us);
  return model;
}

std::vector<OpPart> priced_as_parts(Op op, const Attributes& attributes, std::size_t num_inputs) {
  std::vector<OpPart> parts;
  if (op == Op::kConv) {
    const std::string* name = attributes.get_string("activation");
    if (name == nullptr || *name == "none") return parts;
    Op activation = Op::kRelu;
    if (*name == "sigmoid") {
      activation = Op::kSigmoid;
    } else if (*name == "tanh") {
      activation = Op::kTanh;
    } else if (*name != "relu") {
      return parts;  // not an activation type inference accepts
    }
    Attributes conv = attributes;
    conv.set("activation", std::string("none"));
    std::vector<int> inputs(num_inputs);
    std::iota(inputs.begin(), inputs.end(), 0);
    parts.push_back({Op::kConv, std::move(conv), std::move(inputs)});
    parts.push_back({activation, {}, {kPreviousPart}, /*reads_convolution=*/true});
  } else if (op == Op::kGemm && num_inputs == 3 && attributes.get_int("transA").value_or(0) == 0 &&
             attributes.get_int("transB").value_or(0) == 0 &&
             attributes.get_float("alpha").value_or(1) == 1 &&
             attributes.get_float("beta").value_or(1) == 1) {
    parts.push_back({Op::kMatMul, {}, {0, 1}});
    parts.push_back({Op::kAdd, {}, {kPreviousPart, 2}});
  }
  return parts;
}

std::vector<ValueType> part_input_types(const OpPart& part, std::span<const ValueType> inputs,
                                        const ValueType& output) {
  std::vector<ValueType> types;
  types.reserve(part.inputs.size());
  for (int i : part.inputs) types.push_back(i == kPreviousPart ? output : inputs[i]);
  return types;
}

}  // namespace saturn

#include "costmodel/cost_model.h"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "egraph/file.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace saturn {

using tensor::Op;
using tensor::ValueType;

namespace {

double elements(const ValueType& v) {
  double n = 0;
  for (const tensor::TensorType& t : v.parts) n += static_cast<double>(t.num_elements());
  return n;
}

double bytes_of(const ValueType& v) {
  double n = 0;
  for (const tensor::TensorType& t : v.parts) n += static_cast<double>(t.num_bytes());
  return n;
}

// Floating-point operations per output element of elementwise operators
// (transcendentals count as several).
double flops_per_element(Op op) {
  switch (op) {
    case Op::kSigmoid:
    case Op::kTanh:
    case Op::kErf:
    case Op::kPow:
      return 4;
    case Op::kGelu:
      return 8;
    case Op::kSoftmax:
      return 5;
    case Op::kLayerNorm:
      return 8;
    case Op::kBatchNorm:
      return 2;
    default:
      return 1;
  }
}

}  // namespace

bool is_free_operator(Op op) {
  switch (op) {
    case Op::kInput:
    case Op::kWeight:
    case Op::kConstant:
    case Op::kIdentity:
    case Op::kDropout:
    case Op::kReshape:
    case Op::kFlatten:
    case Op::kTuple:
    case Op::kTupleGet:
      return true;
    default:
      return false;
  }
}

OpWork op_work(Op op, const Attributes& a, std::span<const ValueType> inputs,
               const ValueType& output) {
  OpWork w;
  if (is_free_operator(op)) return w;
  for (const ValueType& in : inputs) w.bytes += bytes_of(in);
  w.bytes += bytes_of(output);
  const double out = elements(output);
  switch (op) {
    case Op::kMatMul:
      w.flops = 2 * out * static_cast<double>(inputs[0].tensor().dims.back());
      break;
    case Op::kGemm: {
      const tensor::Dims& d = inputs[0].tensor().dims;
      double k = static_cast<double>(a.get_int("transA").value_or(0) != 0 ? d[0] : d[1]);
      w.flops = 2 * out * k + (inputs.size() == 3 ? out : 0);
      break;
    }
    case Op::kConv: {
      const tensor::Dims& wd = inputs[1].tensor().dims;
      w.flops =
          2 * out * static_cast<double>(wd[1] * wd[2] * wd[3]) + (inputs.size() == 3 ? out : 0);
      break;
    }
    case Op::kMaxPool:
    case Op::kAveragePool: {
      const std::vector<std::int64_t>* k = a.get_ints("kernel_shape");
      w.flops = out * static_cast<double>(k ? (*k)[0] * (*k)[1] : 1);
      break;
    }
    case Op::kGlobalAveragePool:
    case Op::kReduceMean:
      w.flops = elements(inputs[0]);
      break;
    case Op::kTranspose:
    case Op::kConcat:
    case Op::kSplit:
    case Op::kSlice:
    case Op::kGather:
    case Op::kPad:
    case Op::kEnlarge:
    case Op::kMergeGroups:
      break;  // data movement only
    default:
      w.flops = out * flops_per_element(op);
  }
  return w;
}

double RooflineCostModel::node_cost(Op op, const Attributes& a, std::span<const ValueType> inputs,
                                    const ValueType& output, OpContext) const {
  if (is_free_operator(op)) return 0;
  OpWork w = op_work(op, a, inputs, output);
  double compute_us = w.flops / (profile_.peak_gflops * 1e3);
  double memory_us = w.bytes / (profile_.bandwidth_gbs * 1e3);
  return profile_.launch_overhead_us + std::max(compute_us, memory_us);
}

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

double MeasuredCostModel::node_cost(Op op, const Attributes& a, std::span<const ValueType> inputs,
                                    const ValueType& output, OpContext context) const {
  if (is_free_operator(op)) return 0;
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
    return fallback_.node_cost(op, a, inputs, output, context);
  }
  // Mixed or not is open. Where an input surely is a convolution's output,
  // the choice that would make another input plain pays the difference
  // (reorder_penalty); otherwise the dearer price stands.
  if (mixed != mixed_.end() && context.input != FromConvolution::kYes)
    price = std::max(price, mixed->second);
  return price;
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

namespace {

absl::StatusOr<nlohmann::json> parse_json_file_text(std::string_view text, std::string_view file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return absl::InvalidArgumentError(fmt::format("{}: not valid JSON (byte {})", file, e.byte));
  }
}

}  // namespace

absl::StatusOr<DeviceProfile> parse_device_profile(std::string_view text, std::string_view file) {
  absl::StatusOr<nlohmann::json> j = parse_json_file_text(text, file);
  if (!j.ok()) return j.status();
  if (!j->is_object())
    return absl::InvalidArgumentError(fmt::format("{}: a device profile is a JSON object", file));
  DeviceProfile p;
  for (auto [key, field] : {std::pair{"name", &p.name}, std::pair{"source", &p.source}}) {
    auto it = j->find(key);
    if (it == j->end()) continue;
    if (!it->is_string())
      return absl::InvalidArgumentError(fmt::format("{}: {} must be a string", file, key));
    *field = it->get<std::string>();
  }
  for (auto [key, field] :
       {std::pair{"peak_gflops", &p.peak_gflops}, std::pair{"bandwidth_gbs", &p.bandwidth_gbs},
        std::pair{"launch_overhead_us", &p.launch_overhead_us}}) {
    auto it = j->find(key);
    if (it == j->end() || !it->is_number() || it->get<double>() < 0 ||
        (it->get<double>() == 0 && std::string_view(key) != "launch_overhead_us")) {
      return absl::InvalidArgumentError(fmt::format("{}: {} must be a positive number", file, key));
    }
    *field = it->get<double>();
  }
  if (auto it = j->find("cache_mb"); it != j->end()) {
    if (!it->is_number() || it->get<double>() < 0)
      return absl::InvalidArgumentError(
          fmt::format("{}: cache_mb must be a number of megabytes, at least 0", file));
    p.cache_mb = it->get<double>();
  }
  return p;
}

absl::StatusOr<DeviceProfile> load_device_profile(const std::string& path) {
  absl::StatusOr<std::string> text = read_text_file(path);
  if (!text.ok()) return text.status();
  return parse_device_profile(*text, path);
}

double weight_us_per_byte(const CostModel& model) {
  const DeviceProfile* device = model.device();
  return device == nullptr ? 0.0 : 1.0 / (device->bandwidth_gbs * 1e3);
}

// The share of the last-level cache that weights can count on: the rest
// holds activations, and the other cores' data (the cache is shared). An
// assumption, not a measurement; what prompted it: NasRNN's weights grown
// by merges from 16.8 MB to 23.1 MB, well inside a 32 MiB L3, already ran
// 2-8% slower in onnxruntime (bench/real_latency on an AMD EPYC).
constexpr double kWeightCacheShare = 0.5;

bool charges_held_weights(const CostModel& model) {
  const DeviceProfile* device = model.device();
  return device != nullptr && device->cache_mb > 0;
}

double weight_spill(const CostModel& model, double resident_bytes, double baseline_bytes) {
  if (!charges_held_weights(model)) return 0;
  const double kept = std::max(baseline_bytes, kWeightCacheShare * model.device()->cache_mb * 1e6);
  return std::max(0.0, resident_bytes - kept) * weight_us_per_byte(model);
}

absl::StatusOr<HeldWeights> held_weights(const CostModel& model, const tensor::Graph& graph,
                                         double baseline_bytes) {
  absl::StatusOr<std::vector<tensor::ValueType>> types = tensor::infer_types(graph);
  if (!types.ok()) return types.status();
  HeldWeights held;
  held.bytes = tensor::resident_weight_bytes(graph, *types);
  held.spill = weight_spill(model, static_cast<double>(held.bytes), baseline_bytes);
  return held;
}

std::string device_profile_path(std::string_view name) {
  return fmt::format("{}/costmodel/profiles/{}.json", SATURN_SOURCE_DIR, name);
}

absl::StatusOr<std::shared_ptr<const CostModel>> cost_model_by_name(std::string_view spec) {
  if (spec == "opcount") return std::make_shared<const OpCountCostModel>();
  auto profile_of = [](std::string_view name) {
    // A name without a slash or ".json" is a shipped profile.
    std::string path(name);
    if (path.find('/') == std::string::npos && !path.ends_with(".json"))
      path = device_profile_path(name);
    return load_device_profile(path);
  };
  if (spec == "roofline" || spec.starts_with("roofline:")) {
    absl::StatusOr<DeviceProfile> profile =
        profile_of(spec == "roofline" ? std::string_view("cpu-2core") : spec.substr(9));
    if (!profile.ok()) return profile.status();
    return std::make_shared<const RooflineCostModel>(*profile);
  }
  if (spec.starts_with("measured:")) {
    absl::StatusOr<DeviceProfile> profile = profile_of("cpu-2core");
    if (!profile.ok()) return profile.status();
    absl::StatusOr<std::unique_ptr<MeasuredCostModel>> model =
        load_measured_cost_model(std::string(spec.substr(9)), RooflineCostModel(*profile));
    if (!model.ok()) return model.status();
    return std::shared_ptr<const CostModel>(std::move(*model));
  }
  return absl::InvalidArgumentError(fmt::format(
      "unknown cost model '{}' (use opcount, roofline, roofline:PROFILE or measured:FILE)", spec));
}

std::string machine_description() {
  std::string cpu = "unknown CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.starts_with("model name")) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  return fmt::format("{}, {} hardware threads", cpu, std::thread::hardware_concurrency());
}

absl::StatusOr<std::unique_ptr<MeasuredCostModel>> load_measured_cost_model(
    const std::string& path, RooflineCostModel fallback) {
  absl::StatusOr<std::string> text = read_text_file(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<nlohmann::json> j = parse_json_file_text(*text, path);
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
  MeasuredCostModel::Table alone, between, mixed;
  const nlohmann::json& entries = (*j)["entries"];
  auto microseconds = [](const nlohmann::json& e, const char* key) -> std::optional<double> {
    auto it = e.find(key);
    if (it == e.end() || !it->is_number() || it->get<double>() < 0) return std::nullopt;
    return it->get<double>();
  };
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const nlohmann::json& e = entries[i];
    std::optional<double> us = e.is_object() ? microseconds(e, "us") : std::nullopt;
    if (!us || !e.contains("signature") || !e["signature"].is_string()) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: entries[{}]: needs a \"signature\" string and a non-negative \"us\"", path, i));
    }
    std::string signature = e["signature"].get<std::string>();
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
    if (e.contains("mixed_us")) {
      std::optional<double> mixed_us = microseconds(e, "mixed_us");
      if (!mixed_us) {
        return absl::InvalidArgumentError(
            fmt::format("{}: entries[{}]: \"mixed_us\" must be a non-negative number", path, i));
      }
      mixed[signature] = *mixed_us;
    }
    between[signature] = *us;
    alone[std::move(signature)] = *alone_us;
  }
  return std::make_unique<MeasuredCostModel>(std::move(alone), std::move(between), std::move(mixed),
                                             std::move(fallback), std::move(machine));
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

bool fuses_into_convolution(Op op) {
  return op == Op::kRelu || op == Op::kSigmoid || op == Op::kTanh || op == Op::kClip;
}

FromConvolution convolution_output(ValueKinds kinds) {
  if ((kinds & (kConvOutput | kOpenConvOutput)) == 0) return FromConvolution::kNo;
  return (kinds & kPlainValue) != 0 ? FromConvolution::kMaybe : FromConvolution::kYes;
}

namespace {

constexpr ValueKinds kAnyConvOutput = kConvOutput | kOpenConvOutput;

// What node `op` hands its readers when its non-weight inputs may be
// `inputs` (see ValueKinds).
template <typename Range>
ValueKinds output_kinds(Op op, const Attributes& attributes, const Range& inputs) {
  if (op == Op::kConv) {
    const std::string* activation = attributes.get_string("activation");
    return activation == nullptr || *activation == "none" ? kOpenConvOutput : kConvOutput;
  }
  const bool activation = fuses_into_convolution(op);
  if ((!activation && op != Op::kAdd) || inputs.empty()) return kPlainValue;
  bool can_be_plain = false, all_can_be_conv = true, all_can_be_closed = true, some_open = false;
  for (ValueKinds in : inputs) {
    can_be_plain |= (in & kPlainValue) != 0;
    all_can_be_conv &= (in & kAnyConvOutput) != 0;
    all_can_be_closed &= (in & kConvOutput) != 0;
    some_open |= (in & kOpenConvOutput) != 0;
  }
  ValueKinds out = can_be_plain ? kPlainValue : 0;
  if (activation) return all_can_be_conv ? out | kConvOutput : out;
  if (all_can_be_conv && some_open) out |= kOpenConvOutput;  // accumulated into a convolution
  if (all_can_be_closed) out |= kConvOutput;                 // added in the blocked layout
  return out;
}

// kYes when every element of `inputs` (sets of kinds) surely has one of
// `kinds`, kNo when none can, kMaybe otherwise.
template <typename Range>
FromConvolution all_or_none(const Range& inputs, ValueKinds kinds) {
  bool some = false, all = true;
  for (ValueKinds in : inputs) {
    some |= (in & kinds) != 0;
    all &= (in & ~kinds) == 0;
  }
  return all && some ? FromConvolution::kYes
         : some      ? FromConvolution::kMaybe
                     : FromConvolution::kNo;
}

// The context of operator `op` whose non-weight inputs may be `inputs`.
template <typename Range>
OpContext context_of(Op op, const Range& inputs) {
  OpContext context;
  bool can_be_conv = false, can_be_plain = false, surely_conv = false, surely_plain = false;
  for (ValueKinds kinds : inputs) {
    const FromConvolution in = convolution_output(kinds);
    context.input = std::max(context.input, in);
    can_be_conv |= in != FromConvolution::kNo;
    can_be_plain |= in != FromConvolution::kYes;
    surely_conv |= in == FromConvolution::kYes;
    surely_plain |= in == FromConvolution::kNo;
  }
  // One input alone cannot be mixed, whatever it turns out to be.
  context.mixed = surely_conv && surely_plain                         ? FromConvolution::kYes
                  : inputs.size() >= 2 && can_be_conv && can_be_plain ? FromConvolution::kMaybe
                                                                      : FromConvolution::kNo;
  // An activation runs between convolutions when it is fused into one, an
  // Add when it is accumulated into one: they need an open output. Any
  // other convolution output they run on in the blocked layout, at about
  // their price alone.
  if (fuses_into_convolution(op)) {
    context.input = all_or_none(inputs, kOpenConvOutput);
  } else if (op == Op::kAdd) {
    // A plain input makes it mixed instead (the choice that makes it so
    // pays the difference: reorder_penalty).
    bool surely_open = false, can_be_open = false;
    for (ValueKinds kinds : inputs) {
      surely_open |= kinds == kOpenConvOutput;
      can_be_open |= (kinds & kOpenConvOutput) != 0;
    }
    context.input = surely_open   ? FromConvolution::kYes
                    : can_be_open ? FromConvolution::kMaybe
                                  : FromConvolution::kNo;
  }
  return context;
}

}  // namespace

std::vector<ValueKinds> value_kinds(const tensor::Graph& graph,
                                    const std::vector<bool>& weight_only) {
  std::vector<ValueKinds> kinds(graph.size(), kPlainValue);
  absl::InlinedVector<ValueKinds, 4> inputs;
  for (int x = 0; x < graph.size(); ++x) {
    const tensor::Node& n = graph.nodes[x];
    if (weight_only[x]) continue;
    inputs.clear();
    for (int in : n.inputs) {
      if (!weight_only[in]) inputs.push_back(kinds[in]);
    }
    kinds[x] = output_kinds(n.op, n.attributes, inputs);
  }
  return kinds;
}

ConvolutionOutputs::ConvolutionOutputs(const EGraph& egraph, const tensor::TensorAnalysis& analysis)
    : egraph_(&egraph), analysis_(&analysis) {
  // The least fixed point from "no outcome": a class's outcomes are its
  // nodes', a node's grow with its children's, so the sets only grow; a
  // class whose set grows sends its readers back to the worklist.
  std::vector<Id> work = egraph.class_ids();
  kinds_.reserve(work.size());
  for (Id c : work) kinds_.emplace(c, 0);
  while (!work.empty()) {
    const Id c = egraph.find(work.back());
    work.pop_back();
    ValueKinds kinds = 0;
    for (const ENode& n : egraph.nodes(c)) kinds |= of_node(n);
    ValueKinds& known = kinds_[c];
    if ((kinds | known) == known) continue;
    known |= kinds;
    for (Id p : egraph.eclass(c).parents) work.push_back(p);
  }
}

ValueKinds ConvolutionOutputs::of_class(Id id) const {
  auto it = kinds_.find(egraph_->find(id));
  return it == kinds_.end() ? 0 : it->second;
}

ValueKinds ConvolutionOutputs::of_node(const ENode& node) const {
  absl::InlinedVector<ValueKinds, 4> inputs;
  for (Id child : node.children) {
    if (!analysis_->info(egraph_->find(child)).weight_only) inputs.push_back(of_class(child));
  }
  return output_kinds(tensor::TensorLanguage::op(node.op), egraph_->attrs().get(node.attrs),
                      inputs);
}

OpContext node_context(const tensor::Graph& graph, const std::vector<bool>& weight_only,
                       const std::vector<ValueKinds>& kinds, int x) {
  absl::InlinedVector<ValueKinds, 4> inputs;
  for (int in : graph.nodes[x].inputs) {
    if (!weight_only[in]) inputs.push_back(kinds[in]);
  }
  return context_of(graph.nodes[x].op, inputs);
}

OpContext node_context(const EGraph& egraph, const tensor::TensorAnalysis& analysis,
                       const ConvolutionOutputs& conv_outputs, const ENode& node) {
  absl::InlinedVector<ValueKinds, 4> inputs;
  for (Id child : node.children) {
    const Id c = egraph.find(child);
    if (!analysis.info(c).weight_only) inputs.push_back(conv_outputs.of_class(c));
  }
  return context_of(tensor::TensorLanguage::op(node.op), inputs);
}

namespace {

// The surcharges of `value`'s readers whose other inputs are convolution
// outputs, were `value` plain: the largest among a reader class's nodes,
// summed over the reader classes. An activation that reads `value` passes
// it on (were `value` a convolution's output, it would be fused into it):
// its readers count too.
double readers_surcharge(const CostModel& model, const EGraph& egraph,
                         const tensor::TensorAnalysis& analysis,
                         const ConvolutionOutputs& conv_outputs, Id value, bool through) {
  absl::flat_hash_set<Id> readers;
  for (Id p : egraph.eclass(value).parents) readers.insert(egraph.find(p));
  double total = 0;
  std::vector<ValueType> inputs;
  for (Id reader : readers) {
    if (analysis.info(reader).weight_only) continue;
    double largest = 0;
    for (const ENode& r : egraph.nodes(reader)) {
      const Op op = tensor::TensorLanguage::op(r.op);
      if (through && fuses_into_convolution(op) && !r.children.empty() &&
          egraph.find(r.children[0]) == value) {
        largest = std::max(largest,
                           readers_surcharge(model, egraph, analysis, conv_outputs, reader, false));
        continue;
      }
      bool reads_value = false, other_conv = false;
      inputs.clear();
      for (Id child : r.children) {
        const Id c = egraph.find(child);
        inputs.push_back(analysis.info(c).type);
        if (c == value) {
          reads_value = true;
        } else if (!analysis.info(c).weight_only &&
                   convolution_output(conv_outputs.of_class(c)) == FromConvolution::kYes) {
          other_conv = true;
        }
      }
      if (reads_value && other_conv)
        largest = std::max(largest, model.mixed_surcharge(op, egraph.attrs().get(r.attrs), inputs));
    }
    total += largest;
  }
  return total;
}

}  // namespace

double reorder_penalty(const CostModel& model, const EGraph& egraph,
                       const tensor::TensorAnalysis& analysis,
                       const ConvolutionOutputs& conv_outputs, Id eclass, const ENode& node) {
  const Id self = egraph.find(eclass);
  if (convolution_output(conv_outputs.of_node(node)) != FromConvolution::kNo ||
      convolution_output(conv_outputs.of_class(self)) == FromConvolution::kNo)
    return 0;
  return readers_surcharge(model, egraph, analysis, conv_outputs, self, true);
}

std::function<double(Id, const ENode&)> egraph_cost_function(const CostModel& model,
                                                             const EGraph& egraph,
                                                             const tensor::TensorAnalysis& analysis,
                                                             EGraphCostOptions options) {
  std::shared_ptr<const ConvolutionOutputs> conv_outputs;
  if (model.uses_context()) conv_outputs = std::make_shared<ConvolutionOutputs>(egraph, analysis);
  return [&model, &egraph, &analysis, options, conv_outputs](Id eclass, const ENode& node) {
    const Id self = egraph.find(eclass);
    const tensor::TensorInfo& info = analysis.info(self);
    if (options.weight_only_free && info.weight_only) {
      if (options.weight_us_per_byte <= 0) return 0.0;
      // Held at run time when a computed node reads it; a class is computed
      // (not weight-only) only when all its nodes are.
      for (Id p : egraph.eclass(self).parents) {
        if (!analysis.info(egraph.find(p)).weight_only)
          return static_cast<double>(info.type.num_bytes()) * options.weight_us_per_byte;
      }
      return 0.0;
    }
    std::vector<ValueType> inputs;
    inputs.reserve(node.children.size());
    for (Id child : node.children) inputs.push_back(analysis.info(egraph.find(child)).type);
    const Op op = tensor::TensorLanguage::op(node.op);
    const Attributes& attributes = egraph.attrs().get(node.attrs);
    if (conv_outputs == nullptr) return model.node_cost(op, attributes, inputs, info.type, {});
    return model.node_cost(op, attributes, inputs, info.type,
                           node_context(egraph, analysis, *conv_outputs, node)) +
           reorder_penalty(model, egraph, analysis, *conv_outputs, eclass, node);
  };
}

absl::StatusOr<std::vector<double>> graph_node_costs(const CostModel& model,
                                                     const tensor::Graph& graph,
                                                     EGraphCostOptions options) {
  absl::StatusOr<std::vector<tensor::ValueType>> types = tensor::infer_types(graph);
  if (!types.ok()) return types.status();
  const std::vector<bool> weight_only = tensor::weight_only_nodes(graph);
  const std::vector<ValueKinds> kinds =
      model.uses_context() ? value_kinds(graph, weight_only) : std::vector<ValueKinds>();
  std::vector<double> costs(graph.size(), 0.0);
  std::vector<tensor::ValueType> inputs;
  for (int i = 0; i < graph.size(); ++i) {
    const tensor::Node& n = graph.nodes[i];
    if (options.weight_only_free && weight_only[i]) continue;
    inputs.clear();
    for (int in : n.inputs) inputs.push_back((*types)[in]);
    const OpContext context =
        model.uses_context() ? node_context(graph, weight_only, kinds, i) : OpContext{};
    costs[i] = model.node_cost(n.op, n.attributes, inputs, (*types)[i], context);
  }
  return costs;
}

absl::StatusOr<double> graph_cost(const CostModel& model, const tensor::Graph& graph,
                                  EGraphCostOptions options) {
  absl::StatusOr<std::vector<double>> costs = graph_node_costs(model, graph, options);
  if (!costs.ok()) return costs.status();
  return std::accumulate(costs->begin(), costs->end(), 0.0);
}

}  // namespace saturn

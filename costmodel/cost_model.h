// Cost models over tensor operators: what one operator application costs,
// given its attributes and its inputs' and result's types.
//
//   OpCountCostModel      1 per operator that does work (the objective of
//                         the XLA pass-ordering work)
//   RooflineCostModel     microseconds from FLOPs and bytes moved on a
//                         DeviceProfile: launch + max(flops / peak, bytes / bandwidth)
//   MeasuredCostModel     microseconds from a table of measured operator
//                         signatures; unknown signatures fall back to a roofline
//
//   RooflineCostModel roofline(*load_device_profile("costmodel/profiles/cpu-2core.json"));
//   auto cost = egraph_cost_function(roofline, shapes, {.weight_only_free = true});
//   ExtractionProblem p = problem_from_egraph(egraph, roots, cost);
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "saturn/egraph/egraph.h"
#include "saturn/tensor/analysis.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/types.h"

namespace saturn {

// Whether an operator's input is a convolution's output: no, yes, or maybe
// (in an e-graph, where an input class can hold both kinds of node and
// extraction picks one only later).
enum class FromConvolution : std::uint8_t { kNo, kMaybe, kYes };

// Where an operator runs, as far as its price can depend on it. Onnxruntime's
// CPU provider fuses an activation or a sum into the convolution it reads,
// and runs chains of convolutions in a blocked channel layout that other
// operators must be reordered out of and back into. So an operator that
// reads a convolution's output costs what it costs there ("between
// convolutions", `input`), not what it costs alone: nothing when fused, its
// reorders on top when not. For an activation that means its input is a
// convolution it fuses into; for an Add, that one input is (the others
// being convolution outputs too); for any other operator, that an input is
// in the blocked layout (see ValueKinds). Where that is not settled yet
// (kMaybe), a cost model charges the dearer of the two, so that extraction
// cannot count on a fusion its own choices undo.
//
// An operator whose inputs mix convolution outputs with other values (a
// Concat of a convolution and a Split's part) runs in the plain layout, and
// the convolution outputs are reordered into it: `mixed`. Where that depends
// on extraction's choice (kMaybe), the operator is priced as if its inputs
// were all convolution outputs and the difference is charged to the choice
// that causes it (reorder_penalty).
//
// A Softmax over scores that an additive mask pushes to -1e4 or below
// (`masked`: an Add of a weight holding such values, as causal attention
// masks are) costs more than over plain scores: onnxruntime's exp takes a
// slow path on such inputs (measured on its CPU provider, 1.30: about 50 us
// against 9 us for [1,4,64,64]).
struct OpContext {
  FromConvolution input = FromConvolution::kNo;  // over its non-weight inputs
  FromConvolution mixed = FromConvolution::kNo;
  bool masked = false;
  // Every input is a weight (a DequantizeLinear of a quantized weight).
  bool weights_only = false;
  // A reader takes it as an activation: an Add, Mul, Concat or Gather. A
  // product's integer kernel (QLinearMatMul, QLinearConv) reads its weight
  // in the type its kernels multiply; QLinearAdd, QLinearMul and
  // QLinearConcat read every input in the activations' type, and a Gather
  // (of an embedding table) runs on integers only where the
  // DequantizeLinear before it and the QuantizeLinear after it agree.
  bool read_as_activation = false;
  // Every reader takes it as the weight of a product (MatMul, Gemm, Conv)
  // whose activations are mostly non-negative: quantized with a zero point
  // below a quarter of uint8's range (below 64; below -64 in int8, which
  // the rules move to uint8 by 128), as after a Relu, GELU or Softmax. x86's
  // U8S8 kernels without VNNI sum pairs of products in 16 bits, which
  // saturate only where both activations of a pair lie in the top half of
  // the range; with such activations that is rare, and an int8 weight is as
  // good as exact there while its kernel runs faster than the U8U8 one
  // (small_activation_macs). The accuracy check on the candidate judges.
  bool small_activations = false;
  // Those products' multiply-adds (ungrouped ones only: the depthwise
  // kernels do not pair their sums), where small_activations holds.
  double small_activation_macs = 0;
  // Priced as its own kernel, apart from any fusion: work the importer
  // folded that the input's runtime does on every run (folded_work_cost),
  // or a quantized weight dequantized on every run
  // (dequantized_weight_surcharge).
  bool on_its_own = false;
};

// Whether a tensor holds mask values (-1e4 or below; see OpContext::masked).
bool holds_mask_values(const tensor::Tensor& values);

struct DeviceProfile;

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string_view name() const = 0;
  virtual double node_cost(tensor::Op op, const Attributes& attributes,
                           std::span<const tensor::ValueType> inputs,
                           const tensor::ValueType& output, OpContext context) const = 0;
  // Whether node_cost looks at its context (callers may skip working it out).
  virtual bool uses_context() const { return false; }
  // What the operator costs beyond its price between convolutions when its
  // inputs mix convolution outputs with other values (OpContext::mixed).
  virtual double mixed_surcharge(tensor::Op /*op*/, const Attributes& /*attributes*/,
                                 std::span<const tensor::ValueType> /*inputs*/) const {
    return 0;
  }
  // The device the costs are for (its memory figures price weights that no
  // longer fit in its cache); null when the model has no device (op count).
  virtual const DeviceProfile* device() const { return nullptr; }
  // The same model for a runtime whose integer kernels multiply quantized
  // weights of `type` exactly (exact_weight_type), for a result meant for
  // another CPU or tried both ways; null where the model does not tell the
  // weights' types apart.
  // With `mixed` (`type` being uint8), int8 weights are priced as exact too
  // where a product's activations are mostly non-negative
  // (mixes_weight_types): a CPU without VNNI.
  virtual std::shared_ptr<const CostModel> with_integer_weights(tensor::DType /*type*/,
                                                                bool /*mixed*/ = false) const {
    return nullptr;
  }
  // The quantized weights' type the model prices inside the integer
  // kernels; none where it does not tell the weights' types apart.
  virtual std::optional<tensor::DType> integer_weights() const { return std::nullopt; }
  // Whether the model also prices int8 weights inside the integer kernels
  // where a product's activations are mostly non-negative (OpContext::
  // small_activations), integer_weights() being uint8: x86 without VNNI,
  // where onnxruntime's U8S8 kernels run faster than its U8U8 ones.
  virtual bool mixes_weight_types() const { return false; }
};

// The weight element type onnxruntime's CPU integer kernels multiply
// uint8 activations by exactly on this machine: int8 where the CPU has a
// uint8 x int8 dot product into 32 bits (x86's VNNI, Arm), otherwise uint8,
// since the AVX2 kernels sum uint8 x int8 products in pairs in 16 bits,
// which saturate (onnxruntime's quantization guide; seen on this project's
// AVX2 machine: BERT-base quantized U8S8 lands 0.60 from the float model by
// relative L2 distance where its int8 spelling lands 0.39 and the same
// model with the int8 weights moved to uint8 0.08, bench/results/corpus.md).
// The measured cost prices a quantized weight of this type inside the
// integer kernel, and one of the other type as its own kernel.
tensor::DType exact_weight_type();

// Whether an operator is bookkeeping only (inputs, weights, constants,
// identities, tuple plumbing): it costs nothing in every model.
bool is_free_operator(tensor::Op op);

class OpCountCostModel final : public CostModel {
 public:
  std::string_view name() const override { return "opcount"; }
  double node_cost(tensor::Op op, const Attributes&, std::span<const tensor::ValueType>,
                   const tensor::ValueType&, OpContext) const override {
    return is_free_operator(op) ? 0.0 : 1.0;
  }
};

// Work of one operator application.
struct OpWork {
  double flops = 0;  // floating-point operations (a multiply-add is 2)
  double bytes = 0;  // bytes read and written, each tensor once
};
OpWork op_work(tensor::Op op, const Attributes& attributes,
               std::span<const tensor::ValueType> inputs, const tensor::ValueType& output);

struct DeviceProfile {
  std::string name;
  double peak_gflops = 0;         // sustained FP32 GFLOP/s
  double bandwidth_gbs = 0;       // memory bandwidth, GB/s
  double launch_overhead_us = 0;  // fixed cost per operator
  // Last-level cache, MB (10^6 bytes); 0 when unknown. Weights beyond it
  // are streamed from memory on every inference (weight_spill).
  double cache_mb = 0;
  std::string source;  // how the figures were obtained
};
absl::StatusOr<DeviceProfile> parse_device_profile(std::string_view json, std::string_view file);
absl::StatusOr<DeviceProfile> load_device_profile(const std::string& path);
// A shipped profile by name: "cpu-2core" or "gpu-a100" (costmodel/profiles/,
// compiled in).
absl::StatusOr<DeviceProfile> shipped_device_profile(std::string_view name);

class RooflineCostModel final : public CostModel {
 public:
  explicit RooflineCostModel(DeviceProfile profile) : profile_(std::move(profile)) {}
  std::string_view name() const override { return "roofline"; }
  const DeviceProfile& profile() const { return profile_; }
  const DeviceProfile* device() const override { return &profile_; }
  double node_cost(tensor::Op op, const Attributes& attributes,
                   std::span<const tensor::ValueType> inputs, const tensor::ValueType& output,
                   OpContext context) const override;

 private:
  DeviceProfile profile_;
};

// The signature a measured table is keyed by: the operator, its attributes
// and its input shapes, e.g. "Conv{group=1, pads=[1,1,1,1],
// ...}(float32[1,64,56,56],float32[64,64,3,3])".
std::string op_signature(tensor::Op op, const Attributes& attributes,
                         std::span<const tensor::ValueType> inputs);

class MeasuredCostModel final : public CostModel {
 public:
  // The price of one of onnxruntime's fused operators (tensor::
  // is_runtime_operator) missing from the table: high enough that
  // extraction never chooses one it has no measurement for. Its integer
  // operators (QLinearAdd, QLinearMul) are not fusions but spellings of
  // the model's own, priced by their work like the standard ones.
  static constexpr double kUnmeasuredRuntimeOperator = 1e9;
  using Table = absl::flat_hash_map<std::string, double>;
  // `alone` maps signatures to microseconds when the operator runs alone,
  // `between_convolutions` to microseconds when it reads a convolution's
  // output (see OpContext; an operator missing there costs its time alone),
  // `mixed` when its inputs mix convolution outputs with other values (one
  // missing there costs its time between convolutions); `fallback` prices
  // the signatures missing from all.
  // `measured_on` names the machine the table was timed on (empty: unknown).
  // `masked` maps Softmax signatures to microseconds over masked scores
  // (OpContext::masked; one missing there costs its time alone).
  MeasuredCostModel(Table alone, Table between_convolutions, Table mixed,
                    RooflineCostModel fallback, std::string measured_on = {}, Table masked = {})
      : alone_(std::move(alone)),
        between_(std::move(between_convolutions)),
        mixed_(std::move(mixed)),
        masked_(std::move(masked)),
        fallback_(std::move(fallback)),
        measured_on_(std::move(measured_on)),
        integer_weights_(exact_weight_type()),
        mixes_weight_types_(integer_weights_ == tensor::DType::kUInt8) {}
  std::string_view name() const override { return "measured"; }
  double node_cost(tensor::Op op, const Attributes& attributes,
                   std::span<const tensor::ValueType> inputs, const tensor::ValueType& output,
                   OpContext context) const override;
  bool uses_context() const override { return !between_.empty() || !masked_.empty(); }
  double mixed_surcharge(tensor::Op op, const Attributes& attributes,
                         std::span<const tensor::ValueType> inputs) const override;
  const DeviceProfile* device() const override { return fallback_.device(); }
  std::shared_ptr<const CostModel> with_integer_weights(tensor::DType type,
                                                        bool mixed = false) const override;
  // This CPU's exact_weight_type() unless with_integer_weights said otherwise.
  std::optional<tensor::DType> integer_weights() const override { return integer_weights_; }
  // On this CPU where its weights' type is uint8 (no VNNI) unless
  // with_integer_weights said otherwise.
  bool mixes_weight_types() const override { return mixes_weight_types_; }
  std::size_t table_size() const { return alone_.size(); }
  // Lookups that missed the table and were priced by the roofline.
  std::size_t fallbacks() const { return fallbacks_.load(); }
  // The machine the table was timed on, as machine_description() put it
  // there; empty when the table does not say.
  const std::string& measured_on() const { return measured_on_; }
  // Where the table came from: its file, or the shipped table's name.
  const std::string& source() const { return source_; }
  void set_source(std::string source) { source_ = std::move(source); }
  // The intra-op threads onnxruntime ran the table's kernels with; 0 when
  // the table does not say.
  int timed_threads() const { return timed_threads_; }
  void set_timed_threads(int threads) { timed_threads_ = threads; }
  // What onnxruntime's product kernel takes with a uint8 weight beyond an
  // int8 one, per multiply-add in microseconds: the table's figure (`saturn
  // calibrate` times the models' products both ways), else one measured on
  // an AMD EPYC without VNNI at one thread, divided among the table's
  // threads. Priced on a uint8 weight where an int8 one
  // would be as exact (mixes_weight_types, OpContext::small_activations).
  double unsigned_weight_us_per_mac() const;
  void set_unsigned_weight_us_per_mac(std::optional<double> us) {
    unsigned_weight_us_per_mac_ = us;
  }

 private:
  Table alone_, between_, mixed_, masked_;
  RooflineCostModel fallback_;
  std::string measured_on_, source_;
  int timed_threads_ = 0;
  std::optional<double> unsigned_weight_us_per_mac_;
  tensor::DType integer_weights_;
  bool mixes_weight_types_;
  mutable std::atomic<std::size_t> fallbacks_{0};
};

// The "context" of a measured entry timed between convolutions.
inline constexpr std::string_view kBetweenConvolutions = "between convolutions";

// This machine as a measured table records it: "CPU model, N hardware
// threads". Kernel times hold for the machine they were taken on only.
std::string machine_description();

// Reads a measured table: {"device": ..., "machine": ..., "entries":
// [{"signature": ..., "us": ...}, ...]} ("machine" is optional).
// An entry with "context": "between convolutions" holds in "us" the
// operator's cost when it reads a convolution's output, its time alone in
// "alone_us" and, optionally, its cost when its inputs mix convolution
// outputs with other values in "mixed_us".
absl::StatusOr<std::unique_ptr<MeasuredCostModel>> load_measured_cost_model(
    const std::string& path, RooflineCostModel fallback);
// The same from the file's text; `path` names it in errors.
absl::StatusOr<std::unique_ptr<MeasuredCostModel>> parse_measured_cost_model(
    std::string_view text, const std::string& path, RooflineCostModel fallback);

// A cost model by name: "opcount", "roofline" (the cpu-2core profile),
// "roofline:PROFILE" (a shipped profile name or a profile file),
// "measured:FILE" (a measured table, priced by the cpu-2core roofline where
// it has no entry), or "onnxruntime:N": onnxruntime's CPU provider as
// measured at N intra-op threads, from the table calibrated on this machine
// at N threads (calibrated_table_path(N), which `saturn calibrate
// --runtime-threads N` writes by default) where there is one, else from the
// shipped table timed at the nearest thread count (1 or 2:
// costmodel/tables/onnxruntime-cpu-1thread.json, -2threads.json), priced by
// the roofline where it has no entry either way. "onnxruntime" is
// "onnxruntime:N" at the threads onnxruntime runs with by default here (a
// thread per core this process may use: usable_cores()).
absl::StatusOr<std::shared_ptr<const CostModel>> cost_model_by_name(std::string_view spec);

// The intra-op threads "onnxruntime" or "onnxruntime:N" prices at; an error
// for another spec.
absl::StatusOr<int> onnxruntime_threads(std::string_view spec);

// The measured table of onnxruntime's CPU provider calibrated on this
// machine at `threads` intra-op threads: onnxruntime-cpu-1thread.json,
// onnxruntime-cpu-2threads.json, ... in user_cache_dir(); "" without one.
std::string calibrated_table_path(int threads);

// Where a cost model's figures come from, for a report: a measured table's
// file (or the shipped table's name), a roofline's device profile, or the
// model's name.
std::string cost_model_source(const CostModel& model);

// Spellings that onnxruntime runs as the same kernels as another, plainer
// one. A measured table prices them as that spelling's parts, so that both
// cost the same rather than two measurements' noise apart:
//   Conv{activation=A}(x, w...) as A(Conv(x, w...)): the Conv is written out
//     with the activation after it, which onnxruntime fuses again;
//   Gemm(a, b, c) (no transposes, alpha = beta = 1) as Add(MatMul(a, b), c):
//     onnxruntime fuses a product and the one sum that reads it into a Gemm
//     (its MatMulAddFusion), so the model's MatMul and Add already run as one.
// Every part's result has the operator's result type.
struct OpPart {
  tensor::Op op;
  Attributes attributes;
  // The part's inputs: indices into the operator's inputs, or kPreviousPart.
  std::vector<int> inputs;
  // Whether it reads a convolution's output (an activation fused into it);
  // otherwise it has the operator's context.
  bool reads_convolution = false;
};
inline constexpr int kPreviousPart = -1;
// The parts `op` is priced as, or nothing when it is priced as itself.
std::vector<OpPart> priced_as_parts(tensor::Op op, const Attributes& attributes,
                                    std::size_t num_inputs);
// The input types of `part` of an operator with `inputs` and `output`.
std::vector<tensor::ValueType> part_input_types(const OpPart& part,
                                                std::span<const tensor::ValueType> inputs,
                                                const tensor::ValueType& output);

// Whether onnxruntime fuses `op` into the convolution whose output it reads
// (an activation: Relu, Sigmoid, Tanh, Clip).
bool fuses_into_convolution(tensor::Op op);

// What a value is, as far as onnxruntime's convolutions go, as a set of
// these bits: one in a graph; in an e-graph, every outcome extraction's
// choices can give.
//   kPlainValue     the plain layout
//   kConvOutput     a convolution's output, in its blocked layout, with an
//                   activation applied (nothing more fuses into it)
//   kOpenConvOutput a convolution's output that an activation or a sum can
//                   still be fused into: a Conv without an activation, or an
//                   Add of convolution outputs with one such among them
//                   (accumulated into it)
// An activation of a convolution's output, or an Add of convolution
// outputs, stays in the blocked layout; any other operator, or an Add with
// a plain input, runs in the plain layout.
using ValueKinds = std::uint8_t;
inline constexpr ValueKinds kPlainValue = 1, kConvOutput = 2, kOpenConvOutput = 4;
// Whether a value of `kinds` is a convolution's output (in the blocked
// layout): surely, maybe, or not.
FromConvolution convolution_output(ValueKinds kinds);

// The kinds of the values of `graph`'s nodes (`weight_only` from
// weight_only_nodes; a weight-only node is plain).
std::vector<ValueKinds> value_kinds(const tensor::Graph& graph,
                                    const std::vector<bool>& weight_only);

// The same for the classes of an e-graph, over the choices of their nodes
// (a cycle, which extraction never picks, can add outcomes). Worked out
// once; it describes the e-graph as it was then.
class ConvolutionOutputs {
 public:
  ConvolutionOutputs(const EGraph& egraph, const tensor::TensorAnalysis& analysis);
  ValueKinds of_class(Id id) const;
  // What e-node `node` hands its readers, were it chosen.
  ValueKinds of_node(const ENode& node) const;

 private:
  const EGraph* egraph_;
  const tensor::TensorAnalysis* analysis_;
  absl::flat_hash_map<Id, ValueKinds> kinds_;  // by canonical class
};

// The context of node `x` of `graph` (`kinds` from value_kinds; `types`
// the nodes' types, from tensor::infer_types, or empty, which leaves
// OpContext::small_activation_macs 0).
OpContext node_context(const tensor::Graph& graph, const std::vector<bool>& weight_only,
                       const std::vector<ValueKinds>& kinds, int x,
                       std::span<const tensor::ValueType> types = {});
// The context of e-node `node` of class `eclass`: kYes where it surely
// holds, kMaybe where extraction's choices decide.
OpContext node_context(const EGraph& egraph, const tensor::TensorAnalysis& analysis,
                       const ConvolutionOutputs& conv_outputs, Id eclass, const ENode& node);
// What a quantized weight's DequantizeLinear costs where onnxruntime runs
// it on every run because of node `x`, charged to `x`: a Gather of the
// table that no QuantizeLinear alone reads; a Gemm between DequantizeLinear
// nodes whose bias is not an int32 DequantizeLinear (no integer QGemm); the
// Add of a bias to such a MatMul, which onnxruntime fuses into that Gemm
// (MatMulAddFusion). 0 for another node. `types` from tensor::infer_types.
double dequantized_weight_surcharge(const CostModel& model, const tensor::Graph& graph,
                                    const std::vector<bool>& weight_only, int x,
                                    std::span<const tensor::ValueType> types);
// The same for e-node `node`, as extraction would write it: an Add is taken
// for its MatMul's one reader, and a Gather of the table always charged
// (the rules gather the integers instead).
double dequantized_weight_surcharge(const CostModel& model, const EGraph& egraph,
                                    const tensor::TensorAnalysis& analysis, const ENode& node);
// What choosing `node`, which is not a convolution's output, for class
// `eclass`, which also holds one, costs its readers: each reader whose other
// inputs are convolution outputs then runs mixed (OpContext) instead of
// between convolutions. The largest difference among a reader class's nodes
// counts, summed over the reader classes.
double reorder_penalty(const CostModel& model, const EGraph& egraph,
                       const tensor::TensorAnalysis& analysis,
                       const ConvolutionOutputs& conv_outputs, Id eclass, const ENode& node);

struct EGraphCostOptions {
  bool weight_only_free = true;  // weight-only classes are computed at load time: cost 0
  // When positive, a weight-only class that some computed e-node reads (a
  // tensor the runtime may have to hold) costs its bytes at this rate
  // instead: an extraction that avoids growing the weights.
  double weight_us_per_byte = 0;
};

// What holding `resident_bytes` of weights costs per inference on `model`'s
// device, in the model's unit, beyond what `baseline_bytes` (the input
// graph's weights) cost: the bytes that fit neither in the weights' share
// of the last-level cache (half of it) nor in the baseline are streamed
// from memory every time. The operator costs (roofline, or measured one
// operator at a time) assume weights that stay in cache. 0 when the model
// has no device or the device no cache size.
double weight_spill(const CostModel& model, double resident_bytes, double baseline_bytes);
// The rate weight_spill charges, microseconds per byte (0 without a device).
double weight_us_per_byte(const CostModel& model);
// Whether weight_spill can charge anything under `model`: a device with a
// known cache size.
bool charges_held_weights(const CostModel& model);

struct HeldWeights {
  std::int64_t bytes = 0;  // tensor::resident_weight_bytes
  double spill = 0;        // weight_spill of those bytes
};
// The weights `graph` holds at run time and their charge beyond
// `baseline_bytes`; fails if the graph does not type-check.
absl::StatusOr<HeldWeights> held_weights(const CostModel& model, const tensor::Graph& graph,
                                         double baseline_bytes);

// A cost function over the e-nodes of a tensor e-graph (for extraction):
// node costs from `model`, using the shapes in `analysis`. It prices the
// e-graph as it is when the function is made (where convolution outputs
// flow); make a new one after the e-graph changes.
std::function<double(Id, const ENode&)> egraph_cost_function(const CostModel& model,
                                                             const EGraph& egraph,
                                                             const tensor::TensorAnalysis& analysis,
                                                             EGraphCostOptions options = {});

// The cost of a whole tensor graph: the sum of its operators' costs
// (weight-only operators free when `options.weight_only_free`).
absl::StatusOr<double> graph_cost(const CostModel& model, const tensor::Graph& graph,
                                  EGraphCostOptions options = {});
// The price of the work the importer folded that the source model's
// runtime does on every run (Graph::folded_at_import), each operator priced
// on its own.
double folded_work_cost(const CostModel& model, const tensor::Graph& graph);
// The costs `before` and `after` less the prices of the unmeasured fused
// kernels (MeasuredCostModel::kUnmeasuredRuntimeOperator) both hold: one the
// input imported, which no extraction can avoid, would otherwise hide every
// other difference between them. Compare and divide these.
std::pair<double, double> comparable_costs(double before, double after);
// The same, node by node (0 for the nodes that cost nothing).
absl::StatusOr<std::vector<double>> graph_node_costs(const CostModel& model,
                                                     const tensor::Graph& graph,
                                                     EGraphCostOptions options = {});

}  // namespace saturn

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
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "egraph/egraph.h"
#include "tensor/analysis.h"
#include "tensor/graph.h"
#include "tensor/ops.h"
#include "tensor/types.h"

namespace saturn {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string_view name() const = 0;
  virtual double node_cost(tensor::Op op, const Attributes& attributes,
                           std::span<const tensor::ValueType> inputs,
                           const tensor::ValueType& output) const = 0;
};

// Whether an operator is bookkeeping only (inputs, weights, constants,
// identities, tuple plumbing): it costs nothing in every model.
bool is_free_operator(tensor::Op op);

class OpCountCostModel final : public CostModel {
 public:
  std::string_view name() const override { return "opcount"; }
  double node_cost(tensor::Op op, const Attributes&, std::span<const tensor::ValueType>,
                   const tensor::ValueType&) const override {
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
  std::string source;             // how the figures were obtained
};
absl::StatusOr<DeviceProfile> parse_device_profile(std::string_view json, std::string_view file);
absl::StatusOr<DeviceProfile> load_device_profile(const std::string& path);
// Where the shipped profiles are: "cpu-2core" and "gpu-a100".
std::string device_profile_path(std::string_view name);

class RooflineCostModel final : public CostModel {
 public:
  explicit RooflineCostModel(DeviceProfile profile) : profile_(std::move(profile)) {}
  std::string_view name() const override { return "roofline"; }
  const DeviceProfile& profile() const { return profile_; }
  double node_cost(tensor::Op op, const Attributes& attributes,
                   std::span<const tensor::ValueType> inputs,
                   const tensor::ValueType& output) const override;

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
  // The table maps signatures to microseconds; `fallback` prices the rest.
  MeasuredCostModel(absl::flat_hash_map<std::string, double> table, RooflineCostModel fallback)
      : table_(std::move(table)), fallback_(std::move(fallback)) {}
  std::string_view name() const override { return "measured"; }
  double node_cost(tensor::Op op, const Attributes& attributes,
                   std::span<const tensor::ValueType> inputs,
                   const tensor::ValueType& output) const override;
  std::size_t table_size() const { return table_.size(); }
  // Lookups that missed the table and were priced by the roofline.
  std::size_t fallbacks() const { return fallbacks_.load(); }

 private:
  absl::flat_hash_map<std::string, double> table_;
  RooflineCostModel fallback_;
  mutable std::atomic<std::size_t> fallbacks_{0};
};

// Reads a measured table: {"device": ..., "entries": [{"signature": ..., "us": ...}, ...]}.
absl::StatusOr<std::unique_ptr<MeasuredCostModel>> load_measured_cost_model(
    const std::string& path, RooflineCostModel fallback);

// A cost model by name: "opcount", "roofline" (the cpu-2core profile),
// "roofline:PROFILE" (a shipped profile name or a profile file), or
// "measured:FILE" (a measured table, priced by the cpu-2core roofline where
// it has no entry).
absl::StatusOr<std::shared_ptr<const CostModel>> cost_model_by_name(std::string_view spec);

struct EGraphCostOptions {
  bool weight_only_free = true;  // weight-only classes are computed at load time: cost 0
};

// A cost function over the e-nodes of a tensor e-graph (for extraction):
// node costs from `model`, using the shapes in `analysis`.
std::function<double(Id, const ENode&)> egraph_cost_function(const CostModel& model,
                                                             const EGraph& egraph,
                                                             const tensor::TensorAnalysis& analysis,
                                                             EGraphCostOptions options = {});

// The cost of a whole tensor graph: the sum of its operators' costs
// (weight-only operators free when `options.weight_only_free`).
absl::StatusOr<double> graph_cost(const CostModel& model, const tensor::Graph& graph,
                                  EGraphCostOptions options = {});

}  // namespace saturn

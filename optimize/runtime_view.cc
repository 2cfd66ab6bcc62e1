#include "saturn/optimize/runtime_view.h"

#include <array>
#include <numeric>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "saturn/costmodel/cost_model.h"
#include "saturn/search/environment.h"
#include "saturn/search/search.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/infer.h"

namespace saturn {

namespace {

using tensor::Op;

// The shipped rules that spell onnxruntime's pattern fusions: what each
// matches is what the runtime's fusion matches (onnxruntime's
// LayerNormFusion, SimplifiedLayerNormFusion and GeluFusion). The other
// RMSNorm spellings (1 / sqrt, Reciprocal, the weight first) are not fused.
constexpr std::array<std::string_view, 4> kLoadTimeFusionRules = {
    "layernorm-primitives", "rmsnorm-div", "gelu-erf", "gelu-erf-half-first"};

// The fusion rules applied to saturation, and the graph with the fewest
// operators taken: a fused operator replaces the nine or so it stands for.
absl::StatusOr<tensor::Graph> fuse_patterns(const tensor::Graph& graph) {
  tensor::TensorLanguage language;
  ConditionRegistry conditions = tensor_conditions();
  absl::StatusOr<RuleSet> shipped = load_tensor_rules(language, conditions);
  if (!shipped.ok()) return shipped.status();
  RuleSet fusions;
  for (std::string_view name : kLoadTimeFusionRules) {
    const Rule* rule = shipped->find(name);
    if (rule == nullptr)
      return absl::InternalError(fmt::format("the shipped rules lack '{}'", name));
    fusions.add(*rule);
  }
  const OpCountCostModel opcount;
  // Each fusion adds one node per match and no new match: the e-graph stays
  // within a few times the graph's size.
  const EnvironmentConfig config{
      .graph = &graph,
      .rules = &fusions,
      .cost_model = &opcount,
      .budget = {.max_nodes = 4 * static_cast<std::size_t>(graph.size()) + 1000,
                 .time_limit_seconds = 600},
      .price_steps = false};
  absl::StatusOr<std::unique_ptr<Environment>> env = Environment::create(config);
  if (!env.ok()) return env.status();
  std::vector<std::size_t> all(fusions.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  saturate(**env, all, /*iterations=*/4, /*multi_iterations=*/4);
  absl::StatusOr<tensor::Graph> fused = absl::InternalError("not extracted");
  (*env)->observe(&fused);
  return fused;
}

// How many nodes read each node's value, graph outputs counted.
std::vector<int> reader_counts(const tensor::Graph& graph) {
  std::vector<int> readers(graph.nodes.size(), 0);
  for (const tensor::Node& n : graph.nodes)
    for (int in : n.inputs) ++readers[in];
  for (const tensor::GraphOutput& o : graph.outputs) ++readers[o.node];
  return readers;
}

// Whether node `i` is a normalization over the last axis of a rank-2 or
// rank-3 value whose input is an Add of two equally shaped values that
// nothing else reads.
bool fuses_with_its_sum(const tensor::Graph& graph, std::span<const tensor::ValueType> types,
                        std::span<const int> readers, int i) {
  const tensor::Node& n = graph.nodes[i];
  if (n.op != Op::kLayerNorm && n.op != Op::kSimplifiedLayerNorm) return false;
  const int sum = n.inputs[0];
  const tensor::Node& add = graph.nodes[sum];
  if (add.op != Op::kAdd || readers[sum] != 1) return false;
  const tensor::ValueType& out = types[sum];
  if (out.is_tuple) return false;
  const std::size_t rank = out.tensor().dims.size();
  const std::optional<std::int64_t> axis = n.attributes.get_int("axis");
  // The fused kernels take rank 2 or 3 (a Swin block normalizes [N,H,W,C]).
  if (rank < 2 || rank > 3 || !axis ||
      tensor::normalize_axis(*axis, rank) != static_cast<std::int64_t>(rank - 1))
    return false;
  for (int in : add.inputs)
    if (types[in].is_tuple || types[in].tensor() != out.tensor()) return false;
  return true;
}

// SkipLayerNormFusion: each such normalization and its sum become one
// kernel (the Add is dropped; its only reader was the normalization).
absl::StatusOr<tensor::Graph> fuse_skip_normalizations(const tensor::Graph& graph) {
  absl::StatusOr<std::vector<tensor::ValueType>> types = tensor::infer_types(graph);
  if (!types.ok()) return types.status();
  const std::vector<int> readers = reader_counts(graph);
  std::vector<bool> fused(graph.nodes.size(), false), dropped(graph.nodes.size(), false);
  for (int i = 0; i < graph.size(); ++i) {
    if (!fuses_with_its_sum(graph, *types, readers, i)) continue;
    fused[i] = true;
    dropped[graph.nodes[i].inputs[0]] = true;
  }
  tensor::Graph out = graph;
  out.nodes.clear();
  std::vector<int> index(graph.nodes.size(), -1);
  for (int i = 0; i < graph.size(); ++i) {
    if (dropped[i]) continue;
    tensor::Node n = graph.nodes[i];
    if (fused[i]) {
      const tensor::Node& add = graph.nodes[n.inputs[0]];
      tensor::Node skip;
      skip.op = n.op == Op::kLayerNorm ? Op::kSkipLayerNorm : Op::kSkipSimplifiedLayerNorm;
      skip.attributes.set("epsilon", *n.attributes.get_float("epsilon"));
      skip.inputs = {add.inputs[0], add.inputs[1]};
      skip.inputs.insert(skip.inputs.end(), n.inputs.begin() + 1, n.inputs.end());
      for (int& in : skip.inputs) in = index[in];
      out.nodes.push_back(std::move(skip));
      n = tensor::Node{.op = Op::kTupleGet,
                       .attributes = {{"index", std::int64_t{0}}},
                       .inputs = {static_cast<int>(out.nodes.size()) - 1},
                       .name = std::move(n.name)};
    } else {
      for (int& in : n.inputs) in = index[in];
    }
    index[i] = static_cast<int>(out.nodes.size());
    out.nodes.push_back(std::move(n));
  }
  for (tensor::GraphOutput& o : out.outputs) o.node = index[o.node];
  return out;
}

}  // namespace

absl::StatusOr<tensor::Graph> as_onnxruntime_loads(const tensor::Graph& graph,
                                                   bool skip_normalizations) {
  absl::StatusOr<tensor::Graph> fused = fuse_patterns(graph);
  if (!fused.ok() || !skip_normalizations || !skip_normalizations_fuse(graph)) return fused;
  return fuse_skip_normalizations(*fused);
}

bool skip_normalizations_fuse(const tensor::Graph& graph) {
  return graph.skip_normalizations_at_load;
}

}  // namespace saturn

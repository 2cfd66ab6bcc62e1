// Internal to optimize(): the search of one graph whole, and of a graph cut
// into regions (each region searched whole).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/optimize/decide.h"
#include "saturn/optimize/optimize.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/optimize/regions.h"

namespace saturn {

// What every search of one optimize() call shares, made once from the
// options: the cost model, the rules (their files checked first) and the
// language and conditions the rules refer to. The searches of regions read
// it from several threads.
struct Prepared {
  std::shared_ptr<const CostModel> cost_model;
  tensor::TensorLanguage language;
  ConditionRegistry conditions = tensor_conditions();
  RuleSet rules;
  RuleFileCheck rule_check;
};
// Not movable once made: the rules point into its language and conditions.
// `opset` is the default-domain opset of the model the rules rewrite (which
// operators `--target onnx` may write).
absl::StatusOr<std::unique_ptr<const Prepared>> prepare(const OptimizeOptions& options,
                                                        std::int64_t opset);

// optimize.cc: the search of a graph whole, its extraction and the
// predicted-gain gate (and the self-check of what that takes); a
// ResourceExhausted error where the graph does not fit the search budget.
absl::StatusOr<OptimizeResult> optimize_whole(const tensor::Graph& graph,
                                              const OptimizeOptions& options,
                                              const Prepared& prepared);
// optimize_whole, and where the graph does not fit the budget, the graph cut
// into smaller regions (optimize_regions, kPerSearch), down to single
// operators; one that cannot be cut is kept as it came (the searched gate),
// and `not_searched` says why. What optimize() runs on a graph it does not
// cut, and optimize_regions on each region structure.
absl::StatusOr<OptimizeResult> search_or_cut(const tensor::Graph& graph,
                                             const OptimizeOptions& options,
                                             const Prepared& prepared);

// What the input costs: `search_price` (the search's own price of it; the
// graph's cost when not given), except under a measured table, where the
// input is priced as the runtime loads it (as_onnxruntime_loads); with the
// work the importer folded that the runtime does on every run
// (Graph::folded_at_import) on top.
absl::StatusOr<double> input_price(const tensor::Graph& graph, const CostModel& model,
                                   const EGraphCostOptions& options,
                                   std::optional<double> search_price = std::nullopt);

// A folded operator with a float output of this many elements or more is
// work a timing should weigh (min_gain_for).
inline constexpr std::int64_t kTimedFoldElements = 4096;
// The least predicted gain the predicted-gain gate asks of a candidate for
// `input`: min_gain_of, or 0 where a timing decides after it and the input
// holds float work the import folded that its runtime does on every run.
// The candidate computes that work once, so it cannot be slower for it,
// and the cost model prices it one kernel at a time, from a table that
// holds the model's own operators or else from a roofline, which can be far
// off: onnxruntime's bicubic Resize of DINOv2-small's position table takes
// 23 ms of the model's 228 ms (one thread, this machine's profile).
double min_gain_for(const tensor::Graph& input, const OptimizeOptions& options);

// The decision stage (decide.h, decide.cc), the only code that sets a
// result's Decision. pass records that `gate` passed the result's
// candidate; refuse that it refused it, and makes the input the result (its
// graph, cost and weights); leave_out marks a part's result (a region's
// search) as not taken into the whole, its graph left as it is.
void pass(OptimizeResult& result, Gate gate, std::string evidence);
void refuse(const tensor::Graph& input, OptimizeResult& result, Gate gate, std::string evidence);
void leave_out(OptimizeResult& part, Gate gate, std::string evidence);
// The predicted gain: takes `candidate` (its cost, weight spill and held
// weight bytes) when it is min_gain cheaper than the input, and otherwise
// keeps the input: a heuristic extraction can miss the input graph itself,
// and a result must never be worse than what came in. result.cost_before
// and weight_bytes_before must be set.
void gate_predicted_gain(const tensor::Graph& input, tensor::Graph candidate, double cost,
                         double spill, double weight_bytes, double min_gain,
                         OptimizeResult& result);
// Other sizes: keeps the input where the result holds only at the given
// sizes of the input's symbolic dimensions (fails_at_other_sizes), and says
// why in result.holds_only_at_given_sizes; a result already checked there
// (checked_at_other_sizes) passes.
void gate_other_sizes(const tensor::Graph& input, OptimizeResult& result);
// A result that kept its input becomes a candidate again (its subgraphs
// optimized): `evidence` says why.
void reopen(OptimizeResult& result, std::string evidence);

// Which of several search results to take when all of them together do
// not hold at other sizes of the symbolic dimensions: those with a gain,
// largest first, each kept only where holds(taken with it, its index)
// accepts the results taken so far with it (see optimize_regions).
std::vector<char> take_while_holding(
    std::span<const double> gains,
    const std::function<bool(const std::vector<char>&, std::size_t)>& holds);

// Runs the self-check (OptimizeOptions::self_check) of a result whose
// rules_applied are set, and records what it checked; an output that
// differs is the error.
absl::Status check_result(const tensor::Graph& input, const OptimizeOptions& options,
                          OptimizeResult& result);

// subgraphs.cc. Optimizes each subgraph of the result's control-flow nodes
// (If's branches, Loop's and Scan's bodies) as a model of its own, with
// `options` (standard operators only, not timed on its own), and puts
// those its run made cheaper back (result.subgraphs says which and why
// not). A result that kept its input and now holds an optimized subgraph
// is a candidate again. Where the model would not export with them (at
// symbolic sizes, a control-flow node's outputs that ONNX's shape
// inference cannot type at other sizes), every subgraph stays as it was.
void optimize_subgraphs(const OptimizeOptions& options, OptimizeResult& result);

// Orders rule counts most first (ties keep their order).
void sort_by_count(std::vector<RuleApplication>& counts);

// optimize_regions.cc. How the budget's bytes go to the regions' searches:
// kShared, the whole graph's budget divided among the searches run at once
// (see OptimizeOptions::regions); kPerSearch, a region too large for its
// search cut smaller: each smaller region's search gets the same bytes, and
// they run one after another.
enum class RegionBudget : std::uint8_t { kShared, kPerSearch };
absl::StatusOr<OptimizeResult> optimize_regions(const tensor::Graph& graph,
                                                std::vector<tensor::Region> regions,
                                                const OptimizeOptions& options,
                                                const Prepared& prepared,
                                                RegionBudget budget = RegionBudget::kShared);

// region_transfer.cc: one process's searches of region structures (index
// into `first`, the structures' first regions), sent to the root as text;
// the root reads each result's graph onto its region (regions[first[s]]).
struct StructureSearch {
  std::size_t structure = 0;
  double seconds = 0;
  absl::StatusOr<OptimizeResult> found;
};
std::string encode_searches(const std::vector<StructureSearch>& searches);
// Fills `found` and `seconds` from the text rank `rank` sent; a failed
// search's error names the rank.
absl::Status decode_searches(const std::string& text, int rank,
                             const std::vector<tensor::Region>& regions,
                             const std::vector<int>& first,
                             std::vector<absl::StatusOr<OptimizeResult>>& found,
                             std::vector<double>& seconds);

}  // namespace saturn

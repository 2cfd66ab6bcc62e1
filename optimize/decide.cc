// The decision stage (decide.h): the only code that sets a result's
// Decision.
#include "saturn/optimize/decide.h"

#include <algorithm>
#include <string>
#include <utility>

#include "fmt/format.h"
#include "saturn/optimize/optimize_internal.h"
#include "saturn/optimize/self_check.h"

namespace saturn {

std::string_view to_string(Gate gate) {
  switch (gate) {
    case Gate::kSearched:
      return "searched";
    case Gate::kPredictedGain:
      return "predicted gain";
    case Gate::kOtherSizes:
      return "other sizes";
    case Gate::kMeasured:
      return "measured";
  }
  return "?";
}

std::optional<Gate> gate_named(std::string_view name) {
  for (Gate g : {Gate::kSearched, Gate::kPredictedGain, Gate::kOtherSizes, Gate::kMeasured})
    if (to_string(g) == name) return g;
  return std::nullopt;
}

std::string Decision::summary() const {
  const Verdict* v = deciding();
  if (v == nullptr) return taken ? "taken" : "kept the input";
  return fmt::format("{} ({}: {})", taken ? "taken" : "kept the input", to_string(v->gate),
                     v->evidence);
}

void pass(OptimizeResult& result, Gate gate, std::string evidence) {
  result.decision.taken = true;
  result.decision.verdicts.push_back({gate, true, std::move(evidence)});
}

void refuse(const tensor::Graph& input, OptimizeResult& result, Gate gate, std::string evidence) {
  result.graph = input;
  result.cost_after = result.cost_before;
  result.weight_bytes_after = result.weight_bytes_before;
  result.weight_spill = 0;
  result.self_check = "the input was kept: nothing to check";
  leave_out(result, gate, std::move(evidence));
}

void leave_out(OptimizeResult& part, Gate gate, std::string evidence) {
  part.decision.taken = false;
  part.decision.verdicts.push_back({gate, false, std::move(evidence)});
}

void gate_predicted_gain(const tensor::Graph& input, tensor::Graph candidate, double cost,
                         double spill, double weight_bytes, double min_gain,
                         OptimizeResult& result) {
  const auto [before, after] = comparable_costs(result.cost_before, cost);
  const double needed = std::max(min_gain, 1e-9);
  const double lower = before > 0 ? (before - after) / before : 0;
  std::string evidence = fmt::format("{:.2f} -> {:.2f}, {:.3f}% lower, needed {:.3g}%",
                                     result.cost_before, cost, 100 * lower, 100 * min_gain);
  if (!input.folded_at_import.empty())
    evidence += fmt::format(
        "; the input's runtime computes {} operator{} on every run that saturn computed once ({})",
        input.folded_at_import.size(), input.folded_at_import.size() == 1 ? "" : "s",
        tensor::folded_work_summary(input));
  if (!(after < before * (1 - needed))) {
    refuse(input, result, Gate::kPredictedGain, std::move(evidence));
    return;
  }
  result.graph = std::move(candidate);
  result.cost_after = cost;
  result.weight_spill = spill;
  result.weight_bytes_after = weight_bytes;
  pass(result, Gate::kPredictedGain, std::move(evidence));
}

void gate_other_sizes(const tensor::Graph& input, OptimizeResult& result) {
  if (result.kept_input() || input.symbols.empty()) return;
  if (result.checked_at_other_sizes) {
    const std::size_t left = result.regions_kept_for_sizes.size();
    pass(result, Gate::kOtherSizes,
         left == 0 ? std::string("held at other sizes as its regions were chosen")
                   : fmt::format("held at other sizes as its regions were chosen, {} left as "
                                 "they came for it",
                                 left));
    return;
  }
  std::string why = fails_at_other_sizes(input, result.graph, result.rules_applied);
  if (why.empty()) {
    pass(result, Gate::kOtherSizes, "holds at other sizes of the symbolic dimensions");
    return;
  }
  result.holds_only_at_given_sizes = why;
  refuse(input, result, Gate::kOtherSizes, std::move(why));
}

void reopen(OptimizeResult& result, std::string evidence) {
  if (!result.kept_input()) return;
  pass(result, Gate::kPredictedGain, std::move(evidence));
}

}  // namespace saturn

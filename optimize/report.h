// The report of a run as JSON: what `saturn optimize --report` writes and
// what the Python module's Result.report holds, field for field.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "saturn/optimize/optimize.h"
#include "saturn/tensor/graph.h"

namespace saturn {

// `input` is the graph optimize() was given, `options` what it was given.
// Why the search ended, in a line: "saturated", "stop chosen, saturation's
// graph taken", or "12 regions (3 structures): node limit 2, saturated 1".
std::string stop_summary(const OptimizeResult& result);
// Each kind of transformer block (tensor/blocks.h) of `input` and of
// `result`, and of `result` as onnxruntime loads it (OptimizeResult::blocks).
std::vector<BlockSummary> count_block_kinds(const tensor::Graph& input,
                                            const tensor::Graph& result);
// The result's blocks in a line: "attention 4 of 4 fused, normalization 9
// of 9, rotary 0 of 8"; empty when the input holds none.
std::string blocks_summary(const OptimizeResult& result);

// Rule counts as JSON, [{"rule": NAME, what: COUNT}, ...], and back.
nlohmann::json counts_json(const std::vector<RuleApplication>& counts, const char* what);
std::vector<RuleApplication> counts_of(const nlohmann::json& j, const char* what);

// A decision as JSON: {"taken", "decided_by", "evidence", "verdicts":
// [{"gate", "passed", "evidence"}, ...]}, and back.
nlohmann::json decision_json(const Decision& decision);
absl::StatusOr<Decision> decision_of(const nlohmann::json& j);

nlohmann::json optimize_report(const tensor::Graph& input, const OptimizeResult& result,
                               const OptimizeOptions& options);

}  // namespace saturn

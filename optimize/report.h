// The report of a run as JSON: what `saturn optimize --report` writes and
// what the Python module's Result.report holds, field for field.
#pragma once

#include <string>

#include "nlohmann/json_fwd.hpp"
#include "saturn/optimize/optimize.h"
#include "saturn/tensor/graph.h"

namespace saturn {

// `input` is the graph optimize() was given, `options` what it was given.
// Why the search ended, in a line: "saturated", "stop chosen, saturation's
// graph taken", or "12 regions (3 structures): node limit 2, saturated 1".
std::string stop_summary(const OptimizeResult& result);
// The transformer blocks of `input` and how many the result holds fused
// (tensor/blocks.h), in a line: "attention 4 of 4 fused, normalization 9
// of 9, rotary 0 of 8"; empty when `input` holds none.
std::string blocks_summary(const tensor::Graph& input, const OptimizeResult& result);

nlohmann::json optimize_report(const tensor::Graph& input, const OptimizeResult& result,
                               const OptimizeOptions& options);

}  // namespace saturn

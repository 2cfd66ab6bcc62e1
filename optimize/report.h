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

nlohmann::json optimize_report(const tensor::Graph& input, const OptimizeResult& result,
                               const OptimizeOptions& options);

}  // namespace saturn

// What `saturn optimize` and `saturn batch` share: the options of a run, the
// steps that optimize one model file and write it, and the JSON report.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "saturn/optimize/optimize.h"
#include "saturn/ort/runtime.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/onnx/onnx.h"

namespace CLI {
class App;
}

namespace saturn::tools {

struct OptimizeCommandOptions {
  std::string model, out, report, dot_dir, cost = "roofline", search = "mcts",
                                           target = "onnxruntime";
  bool quiet = false, verify = false, keep_faster = false;
  std::optional<double> min_speedup;
  std::optional<double> min_gain_percent;
  ort::RuntimeOptions verify_options;
  tensor::OnnxImportOptions onnx;
  OptimizeOptions optimize;
};

// The search's own options (--search, --budget-nodes, --cost, --rules, ...).
void add_search_options(CLI::App& app, OptimizeCommandOptions& o);

struct OptimizeOutcome {
  tensor::Graph input;
  OptimizeResult result;
  // Why the optimized graph held at the given sizes only, so that the input
  // was kept; empty otherwise.
  std::string sizes_only;
};

// Loads `o.model`, optimizes it, keeps the input where the result holds at
// the given sizes of its symbolic dimensions only, and writes `o.out` when
// set (a kept ONNX input as it came). Warnings go to stderr.
absl::StatusOr<OptimizeOutcome> optimize_file(OptimizeCommandOptions& o);

// The summary as --report writes it.
nlohmann::json report_json(const tensor::Graph& graph, const OptimizeResult& r,
                           const OptimizeCommandOptions& o, const std::string& sizes_only);

}  // namespace saturn::tools

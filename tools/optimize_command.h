// What `saturn optimize` and `saturn batch` share: the options of a run, the
// steps that optimize one model file and write it, and the JSON report.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "saturn/optimize/optimize.h"
#include "saturn/ort/runtime.h"
#include "saturn/tensor/graph.h"
#include "saturn/onnx/onnx.h"

namespace CLI {
class App;
}

namespace saturn::tools {

struct OptimizeCommandOptions {
  std::string model, out, report, dot_dir;
  bool quiet = false, verify = false, keep_faster = false;
  ort::RuntimeOptions verify_options;
  tensor::OnnxImportOptions onnx;
  OptimizeOptions optimize;  // set by the options of optimize/options.h
};

// The options of optimize/options.h's table, as --NAME (--search,
// --budget-nodes, --cost, --rules, ...), with the table's help and defaults.
void add_search_options(CLI::App& app, OptimizeCommandOptions& o);

struct OptimizeOutcome {
  tensor::Graph input;
  OptimizeResult result;
};

// Loads `o.model`, optimizes it and writes `o.out` when set (save_result:
// a kept ONNX input as it came). Warnings go to stderr.
absl::StatusOr<OptimizeOutcome> optimize_file(OptimizeCommandOptions& o);

}  // namespace saturn::tools

// onnxruntime from the command line: what `saturn verify` runs, and what
// `saturn optimize --verify` runs on its output.
#pragma once

#include <string>

#include "saturn/ort/runtime.h"
#include "saturn/tensor/graph.h"
#include "saturn/onnx/onnx.h"

namespace CLI {
class App;
}

namespace saturn::tools {

// Runs ORIGINAL and OPTIMIZED in onnxruntime and prints the comparison
// (and writes it to `json` when given); 0 when the outputs match. It
// reports: whether saturn writes its result or the input is decided before
// (optimize's measured gate, --min-speedup).
int run_verify(const std::string& original, const tensor::Graph& original_graph,
               const std::string& optimized, const tensor::Graph& optimized_graph,
               const ort::RuntimeOptions& options, const std::string& json,
               const tensor::OnnxImportOptions& onnx);

// The options every onnxruntime command takes: --runs, --warmup, --seed,
// --threads; with `compares`, also --rtol and --atol.
void add_runtime_options(CLI::App& app, ort::RuntimeOptions& options, bool compares);

}  // namespace saturn::tools

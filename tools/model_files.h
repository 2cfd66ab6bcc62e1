// What the `saturn` subcommands share: reading and writing models by file
// name, refusing outputs that would overwrite an input, the cost model of a
// --cost option, the --dim option, and error reporting.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/costmodel/cost_model.h"
#include "saturn/tensor/graph.h"
#include "saturn/onnx/models.h"
#include "saturn/onnx/onnx.h"

namespace CLI {
class App;
}

namespace saturn::tools {

// Models by file name: tensor::load_model and tensor::save_model.
using tensor::load_model;
using tensor::save_model;

// Refuses a command that would write one of `outputs` over one of `inputs`
// (the files it reads) or over another of its outputs. Empty names are
// options not given.
absl::Status check_outputs(const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs);

// The file a --cost option reads, if any ("measured:FILE", "roofline:FILE.json").
std::string cost_file(std::string_view spec);

// The cost model named by --cost. A measured table timed on another machine
// prices this one's kernels only roughly, so that is said on stderr (the
// command goes on).
absl::StatusOr<std::shared_ptr<const CostModel>> cost_model_for(std::string_view spec);

// Prints "saturn: MESSAGE" on stderr; returns 1.
int fail(const absl::Status& status);

// Says on stderr (one line) which symbolic dimensions of `graph` no --dim
// sized, so they stand at tensor::kDefaultSymbolSize.
void note_default_sizes(const tensor::Graph& graph, const tensor::OnnxImportOptions& onnx);

}  // namespace saturn::tools

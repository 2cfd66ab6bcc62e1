// saturn's JSON model format: load and save a Graph. The format is
// documented in docs/json-model-format.md; in short:
//
//   {"format": "saturn-model", "version": 1, "name": "mlp",
//    "inputs":  [{"name": "x", "shape": [8, 256], "dtype": "float32"}],
//    "weights": [{"name": "w", "shape": [256, 10], "seed": 7, "low": -0.1, "high": 0.1},
//                {"name": "b", "shape": [10], "data": [0, 0, ...]}],
//    "nodes":   [{"op": "MatMul", "inputs": ["x", "w"], "outputs": ["h"]},
//                {"op": "Add", "inputs": ["h", "b"], "outputs": ["y"]}],
//    "outputs": ["y"]}
//
// Errors name the file and the place: "m.json: nodes[3] (conv1): Conv needs
// attribute 'strides' to be a list of integers".
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "saturn/tensor/graph.h"

namespace saturn::tensor {

// `file` names the source in error messages.
absl::StatusOr<Graph> parse_json_model(std::string_view text, std::string_view file);
absl::StatusOr<Graph> load_json_model(const std::string& path);

// The model as JSON text. Weights with explicit data are written with it
// (large models should keep seeded weights).
std::string to_json_model(const Graph& graph);
absl::Status save_json_model(const Graph& graph, const std::string& path);

}  // namespace saturn::tensor

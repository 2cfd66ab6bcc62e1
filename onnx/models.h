// Models by file name, whatever their format: what a program that takes a
// model from its user needs.
//
//   absl::StatusOr<Graph> g = load_model("resnet50.onnx");   // or .json, or "bert"
//   ... optimize ...
//   absl::Status s = save_model(*g, "resnet50.opt.onnx");
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/tensor/graph.h"
#include "saturn/onnx/onnx.h"

namespace saturn::tensor {

// An ONNX file (.onnx; `onnx` sizes its symbolic dimensions), a saturn JSON
// file (.json), or a zoo model by name (tensor/zoo/zoo.h).
absl::StatusOr<Graph> load_model(const std::string& name, const OnnxImportOptions& onnx = {});
// Writes ONNX (.onnx) or saturn's JSON (.json), by the file name's extension.
absl::Status save_model(const Graph& graph, const std::string& path);

}  // namespace saturn::tensor

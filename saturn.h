// saturn's library API in one header: load a model, optimize it, save it;
// or compose the pieces (rules, e-graphs, cost models, extractors, search,
// and the environment an agent steps through).
//
//   #include "saturn/saturn.h"
//   absl::StatusOr<saturn::tensor::Graph> g = saturn::load_model("model.onnx");  // .json, a zoo name
//   saturn::OptimizeOptions options;  // MCTS, 2,000 e-nodes, onnxruntime cost (search/defaults.h)
//   options.cost_model = saturn::cost_model_by_name("roofline:gpu-a100").value();
//   absl::StatusOr<saturn::OptimizeResult> r = saturn::optimize(*g, options);
//   if (r.ok()) absl::Status s = saturn::save_model(r->graph, "model.opt.onnx");
//
// CMake: find_package(saturn REQUIRED) and link saturn::saturn. Without a
// min_gain, optimize() keeps the input unless the result is predicted half a
// percent cheaper (any gain under opcount), as `saturn optimize` does.
#pragma once

#include "saturn/costmodel/cost_model.h"
#include "saturn/extract/extractor.h"
#include "saturn/search/environment.h"
#include "saturn/optimize/optimize.h"
#include "saturn/optimize/options.h"
#include "saturn/optimize/report.h"
#include "saturn/search/search.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/json/json_model.h"
#include "saturn/onnx/models.h"
#include "saturn/onnx/onnx.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn {

// Models by file name: ONNX, saturn's JSON, or a zoo model (onnx/models.h).
using tensor::load_model;
using tensor::save_model;

}  // namespace saturn

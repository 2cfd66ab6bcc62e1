// saturn's library API in one header: optimize a tensor graph, or compose
// the pieces (models, rules, e-graphs, cost models, extractors, search).
//
//   #include "saturn/saturn.h"
//   absl::StatusOr<saturn::tensor::Graph> g = saturn::tensor::build_zoo_model("bert");
//   absl::StatusOr<saturn::OptimizeResult> r = saturn::optimize(*g, {});
#pragma once

#include "saturn/costmodel/cost_model.h"
#include "saturn/extract/extractor.h"
#include "saturn/mcts/environment.h"
#include "saturn/mcts/optimize.h"
#include "saturn/mcts/search.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/json/json_model.h"
#include "saturn/tensor/zoo/zoo.h"

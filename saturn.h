// saturn's library API in one header: optimize a tensor graph, or compose
// the pieces (models, rules, e-graphs, cost models, extractors, search).
//
//   #include "saturn.h"
//   absl::StatusOr<saturn::tensor::Graph> g = saturn::tensor::build_zoo_model("bert");
//   absl::StatusOr<saturn::OptimizeResult> r = saturn::optimize(*g, {});
#pragma once

#include "costmodel/cost_model.h"
#include "extract/extractor.h"
#include "mcts/environment.h"
#include "mcts/optimize.h"
#include "mcts/search.h"
#include "rules/tensor/tensor_rules.h"
#include "tensor/graph.h"
#include "tensor/interpreter/interpreter.h"
#include "tensor/json/json_model.h"
#include "tensor/zoo/zoo.h"

// Loads a model, optimizes it under the A100 roofline with greedy
// saturation, writes the result and reads it back: saturn's whole job
// through its one header, from an installed package.
//
//   consumer IN.onnx OUT.onnx
#include <cstdio>

#include "saturn/saturn.h"

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: consumer IN.onnx OUT.onnx\n"), 2;
  absl::StatusOr<saturn::tensor::Graph> graph = saturn::load_model(argv[1]);
  if (!graph.ok()) return std::fprintf(stderr, "%s\n", graph.status().ToString().c_str()), 1;

  saturn::OptimizeOptions options;
  options.search.strategy = saturn::Strategy::kGreedy;
  options.cost_model = saturn::cost_model_by_name("roofline:gpu-a100").value();
  absl::StatusOr<saturn::OptimizeResult> result = saturn::optimize(*graph, options);
  if (!result.ok()) return std::fprintf(stderr, "%s\n", result.status().ToString().c_str()), 1;
  if (absl::Status s = saturn::save_model(result->graph, argv[2]); !s.ok())
    return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;

  absl::StatusOr<saturn::tensor::Graph> back = saturn::load_model(argv[2]);
  if (!back.ok()) return std::fprintf(stderr, "%s\n", back.status().ToString().c_str()), 1;
  std::printf("%s: %d ops -> %d ops, cost %.2f -> %.2f (%.2f%% lower); wrote %s, read back\n",
              graph->name.c_str(), saturn::tensor::total_ops(*graph),
              saturn::tensor::total_ops(result->graph), result->cost_before, result->cost_after,
              result->improvement_percent(), argv[2]);
  return 0;
}

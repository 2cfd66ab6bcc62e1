// Loads an ONNX model, optimizes it with saturn's library API and saves the
// result as ONNX. README.md shows the part between the two "snippet" marks;
// tests/cli/readme_snippet.sh checks that the two stay the same.
//
//   build/examples/optimize_onnx IN.onnx OUT.onnx
#include <cstdio>
#include <string>

#include "fmt/format.h"
#include "saturn/saturn.h"
#include "saturn/onnx/onnx.h"

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: optimize_onnx IN.onnx OUT.onnx\n"), 2;
  const std::string in = argv[1], out = argv[2];
  // snippet begin
  using namespace saturn;
  absl::StatusOr<tensor::Graph> graph = tensor::load_onnx_model(in);
  if (!graph.ok()) return fmt::print(stderr, "{}\n", graph.status().ToString()), 1;

  OptimizeOptions options;          // MCTS search by default
  options.budget.max_nodes = 2000;  // the e-graph's memory budget
  options.cost_model = cost_model_by_name("roofline:gpu-a100").value();  // A100 latency
  absl::StatusOr<OptimizeResult> result = optimize(*graph, options);
  if (!result.ok()) return fmt::print(stderr, "{}\n", result.status().ToString()), 1;

  fmt::print("{}: cost {:.1f} -> {:.1f} ({:.1f}% lower)\n", graph->name, result->cost_before,
             result->cost_after, result->improvement_percent());
  if (absl::Status s = tensor::save_onnx_model(result->graph, out); !s.ok())
    return fmt::print(stderr, "{}\n", s.ToString()), 1;
  // snippet end
  return 0;
}

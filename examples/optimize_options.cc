// Optimizes a model through the library with options given by name, as the
// command line and the Python module take them, and writes the model and
// the report `saturn optimize --report` writes.
//
//   build/examples/optimize_options IN.onnx OUT.onnx REPORT.json search=greedy budget-nodes=500
#include <cstdio>
#include <string>
#include <string_view>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/base/file.h"
#include "saturn/saturn.h"

int main(int argc, char** argv) {
  if (argc < 4)
    return std::fprintf(stderr, "usage: optimize_options IN OUT REPORT.json [NAME=VALUE ...]\n"), 2;
  using namespace saturn;
  OptimizeOptions options;  // the defaults of `saturn optimize`
  for (int i = 4; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const std::size_t eq = arg.find('=');
    absl::Status s = eq == std::string_view::npos
                         ? set_option(options, arg, "true")  // a flag
                         : set_option(options, arg.substr(0, eq), arg.substr(eq + 1));
    if (!s.ok()) return fmt::print(stderr, "{}\n", std::string(s.message())), 2;
  }
  absl::StatusOr<tensor::Graph> graph = tensor::load_model(argv[1]);
  if (!graph.ok()) return fmt::print(stderr, "{}\n", std::string(graph.status().message())), 1;
  absl::StatusOr<OptimizeResult> result = optimize(*graph, options);
  if (!result.ok()) return fmt::print(stderr, "{}\n", std::string(result.status().message())), 1;
  if (absl::Status s = save_result(*result, argv[2]); !s.ok())
    return fmt::print(stderr, "{}\n", std::string(s.message())), 1;
  const std::string report = optimize_report(*graph, *result, options).dump(2) + "\n";
  if (absl::Status s = write_text_file(argv[3], report); !s.ok())
    return fmt::print(stderr, "{}\n", std::string(s.message())), 1;
  fmt::print("{}: cost {:.2f} -> {:.2f}\n", graph->name, result->cost_before, result->cost_after);
  return 0;
}

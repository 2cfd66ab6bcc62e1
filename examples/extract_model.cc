// Builds a small model with the GraphBuilder, puts it into an e-graph with
// the shape analysis, extracts it again under the roofline cost model of
// this machine and checks that the extracted graph computes the same
// outputs. The skeleton of any saturn pipeline: rewrites go between
// add_graph and the extraction.
//
//   build/examples/extract_model [ZOO_MODEL]   (default: a small MLP)
#include <cstdio>
#include <string>

#include "saturn/base/status.h"
#include "saturn/costmodel/cost_model.h"
#include "saturn/extract/extractor.h"
#include "fmt/format.h"
#include "saturn/tensor/analysis.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/zoo/zoo.h"

using namespace saturn;
using namespace saturn::tensor;

namespace {

absl::StatusOr<Graph> mlp() {
  GraphBuilder b("mlp");
  Value x = b.input("x", {8, 256});
  Value h = b.relu(b.linear("fc1", x, 512));
  b.output(b.linear("fc2", h, 10), "logits");
  return b.build();
}

int fail(const absl::Status& s) {
  fmt::print(stderr, "extract_model: {}\n", message(s));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<Graph> graph = argc > 1 ? build_zoo_model(argv[1]) : mlp();
  if (!graph.ok()) return fail(graph.status());

  TensorLanguage lang;
  TensorAnalysis shapes;
  EGraph egraph(lang, &shapes);
  absl::StatusOr<std::vector<Id>> ids = add_graph(egraph, *graph);
  if (!ids.ok()) return fail(ids.status());
  // ... a search would apply rewrite rules here ...

  absl::StatusOr<DeviceProfile> profile = shipped_device_profile("cpu-2core");
  if (!profile.ok()) return fail(profile.status());
  RooflineCostModel cost(*profile);
  std::vector<Id> roots;
  std::vector<ClassOutput> outputs;
  for (const GraphOutput& o : graph->outputs) {
    roots.push_back((*ids)[o.node]);
    outputs.push_back({(*ids)[o.node], o.name});
  }
  ExtractionProblem problem =
      problem_from_egraph(egraph, roots, egraph_cost_function(cost, egraph, shapes));
  ExtractionResult result = IlpExtractor(IlpOptions{.time_limit_seconds = 10}).extract(problem);

  absl::StatusOr<Graph> extracted =
      graph_from_egraph(egraph, *graph, outputs, chosen_enodes(egraph, problem, result.selection));
  if (!extracted.ok()) return fail(extracted.status());

  Inputs inputs = random_inputs(*graph, 1);
  absl::StatusOr<std::vector<Tensor>> before = evaluate(*graph, inputs);
  absl::StatusOr<std::vector<Tensor>> after = evaluate(*extracted, inputs);
  if (!before.ok()) return fail(before.status());
  if (!after.ok()) return fail(after.status());
  double worst = 0;
  for (std::size_t i = 0; i < before->size(); ++i)
    worst = std::max(worst, max_error_ratio((*after)[i], (*before)[i], 1e-5, 1e-6));
  fmt::print(
      "{}: {} e-nodes, {} classes; extracted {} ops, estimated {:.1f} us on {} ({}); outputs {}\n",
      graph->name, egraph.num_nodes(), egraph.num_classes(), total_ops(*extracted), result.dag_cost,
      profile->name, to_string(result.status), worst <= 1 ? "match" : "DIFFER");
  return worst <= 1 ? 0 : 1;
}

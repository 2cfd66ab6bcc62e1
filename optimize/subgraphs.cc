// The subgraphs of control-flow nodes optimized as models of their own
// (optimize_internal.h).
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "saturn/base/status.h"
#include "saturn/optimize/optimize_internal.h"
#include "saturn/onnx/onnx.h"

namespace saturn {

namespace {

// One subgraph read, optimized and, where its run found a cheaper graph,
// put back into `graph`.
SubgraphSummary optimize_subgraph(tensor::Graph& graph, const tensor::Subgraph& sub,
                                  const OptimizeOptions& options) {
  SubgraphSummary s{.node = graph.nodes[static_cast<std::size_t>(sub.node)].name,
                    .attribute = sub.attribute};
  if (!sub.why.empty()) {
    s.note = fmt::format("not optimized: {}", sub.why);
    return s;
  }
  const std::string where = fmt::format("the {} of '{}'", sub.attribute, s.node);
  tensor::OnnxImportOptions sized;
  for (const auto& [symbol, size] : graph.symbols.sizes) sized.dims[symbol] = size;
  absl::StatusOr<tensor::Graph> g = tensor::parse_onnx_model(sub.model, where, sized);
  if (!g.ok()) {
    s.note = fmt::format("not optimized: {}", message(g.status()));
    return s;
  }
  // Standard operators only: the enclosing model imports the domains it
  // used, and a subgraph's run is not timed on its own (the whole model is).
  OptimizeOptions nested = options;
  nested.measure = false;
  nested.target = Target::kOnnx;
  absl::StatusOr<OptimizeResult> r = optimize(*g, nested);
  if (!r.ok()) {
    s.note = fmt::format("not optimized: {}", message(r.status()));
    return s;
  }
  s.ops_before = tensor::total_ops(*g);
  s.ops_after = tensor::total_ops(r->graph);
  s.cost_before = r->cost_before;
  s.cost_after = r->cost_after;
  if (r->kept_input()) {
    s.note = "kept: nothing cheaper found";
    return s;
  }
  if (absl::Status st = tensor::replace_subgraph(graph, sub, r->graph); !st.ok()) {
    s.note = fmt::format("kept: {}", message(st));
    return s;
  }
  s.replaced = true;
  s.note = fmt::format("self-check: {}", r->self_check);
  return s;
}

}  // namespace

void optimize_subgraphs(const OptimizeOptions& options, OptimizeResult& result) {
  const std::vector<tensor::Subgraph> subgraphs = tensor::subgraphs_of(result.graph);
  if (subgraphs.empty()) return;
  const tensor::Graph before = result.graph;
  bool replaced = false;
  for (const tensor::Subgraph& sub : subgraphs) {
    result.subgraphs.push_back(optimize_subgraph(result.graph, sub, options));
    replaced = replaced || result.subgraphs.back().replaced;
  }
  if (!replaced) return;
  // The enclosing model must still export: at symbolic sizes its exporter
  // types the control-flow node's outputs at other sizes by ONNX's shape
  // inference, which the new subgraph must not defeat.
  if (absl::StatusOr<std::string> bytes = tensor::to_onnx_model(result.graph); !bytes.ok()) {
    result.graph = before;
    for (SubgraphSummary& s : result.subgraphs) {
      if (!s.replaced) continue;
      s.replaced = false;
      s.note = fmt::format("kept: the model does not export with it: {}", message(bytes.status()));
    }
    return;
  }
  if (result.kept_input()) {
    // The enclosing graph as it came, its subgraphs optimized: a candidate
    // of its own, which the timing in onnxruntime decides.
    reopen(result, "the enclosing graph as it came, its subgraphs optimized");
    result.self_check = "the enclosing graph kept; each subgraph replaced was checked in its own run";
  }
}

}  // namespace saturn

// A graph as onnxruntime runs it: with the fusions its graph optimizer makes
// when it loads a model. A measured cost table prices single operators, so
// an input that spells out a LayerNorm (nine operators, Pow among them, which
// alone takes 629 us on BERT-base's [1,128,768]) would be priced far above
// what the runtime runs, and every result that names the fused operator
// would look like a gain. Pricing the input as the runtime loads it keeps
// the predicted gain to what the rewrites change.
//
//   absl::StatusOr<tensor::Graph> view = as_onnxruntime_loads(graph);
//   absl::StatusOr<double> before = graph_cost(measured, *view, {});
#pragma once

#include "absl/status/statusor.h"
#include "saturn/tensor/graph.h"

namespace saturn {

// `graph` with the fusions onnxruntime's CPU provider (1.30, optimization
// level "all") makes at load: LayerNormFusion (the opset-13 spelling of a
// LayerNorm), SimplifiedLayerNormFusion (PyTorch's RMSNorm spelling),
// GeluFusion (the erf spelling, the half first or last), and then
// SkipLayerNormFusion: a LayerNorm or RMSNorm whose input is an Add of two
// equally shaped values that nothing else reads becomes one
// SkipLayerNormalization (or SkipSimplifiedLayerNormalization). Each fusion
// was seen in onnxruntime's profiler on the fixtures. `skip_normalizations`
// false leaves out the last (for a table that has not timed those kernels).
absl::StatusOr<tensor::Graph> as_onnxruntime_loads(const tensor::Graph& graph,
                                                   bool skip_normalizations = true);

// Whether onnxruntime's SkipLayerNormFusion applies to the model it runs
// for `graph` (Graph::skip_normalizations_at_load: a typed ONNX source).
bool skip_normalizations_fuse(const tensor::Graph& graph);

}  // namespace saturn

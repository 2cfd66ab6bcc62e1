// ONNX models: any bytes are parsed (protobuf), imported into saturn's graph
// and type-checked, or refused with an error; a small graph that imports
// then runs in the interpreter on seeded inputs, at the given sizes and at
// the sizes the self-check tries (every symbol 2 larger), and is written
// back as ONNX (the exporter reads what the importer made of any input).
// Nothing may crash.
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/onnx/onnx.h"
#include "saturn/tests/fuzz/harness.h"

namespace {

using namespace saturn;

// The interpreter runs graphs whose values add up to at most this many
// bytes: the seeds include models of a few GFLOP, which would take seconds.
constexpr std::int64_t kMaxEvaluatedGraphBytes = std::int64_t{1} << 22;

void evaluate_and_export_if_small(const tensor::Graph& graph) {
  absl::StatusOr<std::vector<tensor::ValueType>> types = tensor::infer_types(graph);
  if (!types.ok()) return;
  std::int64_t bytes = 0;
  for (const tensor::ValueType& t : *types) {
    if (__builtin_add_overflow(bytes, t.num_bytes(), &bytes) || bytes > kMaxEvaluatedGraphBytes)
      return;
  }
  (void)tensor::evaluate(graph, tensor::random_inputs(graph, 1));
  (void)tensor::to_onnx_model(graph);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tensor::OnnxImportOptions options;
  options.dims["batch"] = 1;  // the corpus's symbolic dimensions
  options.dims["seq"] = 4;
  const std::string_view bytes = fuzz::as_text(data, size);
  absl::StatusOr<tensor::Graph> graph = tensor::parse_onnx_model(bytes, "fuzz.onnx", options);
  if (!graph.ok()) return 0;
  evaluate_and_export_if_small(*graph);
  tensor::OnnxImportOptions other;  // as OtherSizesCheck reads the model
  for (const auto& [symbol, at] : graph->symbols.sizes) other.dims[symbol] = at + 2;
  absl::StatusOr<tensor::Graph> resized = tensor::parse_onnx_model(bytes, "fuzz.onnx", other);
  if (resized.ok()) evaluate_and_export_if_small(*resized);
  return 0;
}

// ONNX models: any bytes are parsed (protobuf), imported into saturn's graph
// and type-checked, or refused with an error; nothing may crash.
#include "saturn/tensor/infer.h"
#include "saturn/tensor/onnx/onnx.h"
#include "saturn/tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace saturn;
  tensor::OnnxImportOptions options;
  options.dims["batch"] = 1;  // the corpus's symbolic dimensions
  options.dims["seq"] = 4;
  absl::StatusOr<tensor::Graph> graph =
      tensor::parse_onnx_model(fuzz::as_text(data, size), "fuzz.onnx", options);
  if (graph.ok()) (void)tensor::infer_types(*graph);
  return 0;
}

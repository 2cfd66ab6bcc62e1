// saturn's JSON models: parsed, then type-checked, or refused.
#include "saturn/tensor/json/json_model.h"
#include "saturn/tensor/infer.h"
#include "saturn/tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace saturn;
  absl::StatusOr<tensor::Graph> graph =
      tensor::parse_json_model(fuzz::as_text(data, size), "fuzz.json");
  if (graph.ok()) (void)tensor::infer_types(*graph);
  return 0;
}

// Measured cost tables (saturn calibrate's output): parsed, then asked for
// the costs of a small model's operators.
#include "saturn/costmodel/cost_model.h"
#include "saturn/tensor/builder.h"
#include "saturn/tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace saturn;
  static const DeviceProfile profile = *parse_device_profile(
      R"({"name": "fuzz", "peak_gflops": 10, "bandwidth_gbs": 10, "launch_overhead_us": 1,
          "cache_mb": 8})",
      "fuzz-profile.json");
  static const tensor::Graph model = [] {
    tensor::GraphBuilder b("fuzz");
    tensor::Value x = b.input("x", {1, 4, 8, 8});
    tensor::Value h = b.relu(b.conv2d("c", x, {.out_channels = 4, .kernel = {3, 3}}));
    b.output(b.add(h, x), "y");
    return *b.build();
  }();
  absl::StatusOr<std::unique_ptr<MeasuredCostModel>> table = parse_measured_cost_model(
      fuzz::as_text(data, size), "fuzz-table.json", RooflineCostModel(profile));
  if (table.ok()) (void)graph_node_costs(**table, model);
  return 0;
}

// The ProfilerCorrection: its measurement on chains of tiny operators, and
// its line. See runtime.h.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "ort/harness_internal.h"
#include "ort/runtime.h"
#include "tensor/builder.h"
#include "tensor/graph.h"
#include "tensor/onnx/onnx.h"

namespace saturn::ort {

using tensor::Graph;

absl::StatusOr<ProfilerCorrection> measure_profiler_correction(const TempDir& dir,
                                                               const CalibrationOptions& options) {
  constexpr int kShort = 16, kLong = 216, kRounds = 5;
  std::vector<std::string> files;
  for (int length : {kShort, kLong}) {
    tensor::GraphBuilder b(fmt::format("chain{}", length));
    tensor::Value v = b.input("x", {1, 64});
    for (int i = 0; i < length; ++i) v = i % 2 == 0 ? b.relu(v) : b.tanh(v);
    b.output(v, "y");
    absl::StatusOr<Graph> g = b.build();
    if (!g.ok()) return g.status();
    files.push_back((dir.path() / (g->name + ".onnx")).string());
    if (absl::Status s = tensor::save_onnx_model(*g, files.back()); !s.ok()) return s;
  }
  RuntimeOptions timing = options.runtime;
  timing.runs = std::max(options.runtime.runs, 100);  // runs of 20-200 us
  timing.kernel_offset_us = timing.kernel_floor_us = 0;
  auto per_operator = [&](bool profile, const char* key) -> absl::StatusOr<double> {
    timing.profile = profile;
    absl::StatusOr<nlohmann::json> timed = time_models(files, timing);
    if (!timed.ok()) return timed.status();
    const std::optional<double> short_us = reported_us((*timed)[0], key);
    const std::optional<double> long_us = reported_us((*timed)[1], key);
    if (!short_us || !long_us)
      return absl::InternalError("onnxruntime could not time the chains that measure its profiler");
    return (*long_us - *short_us) / (kLong - kShort);
  };
  std::vector<double> excess, floor;
  for (int round = 0; round < kRounds; ++round) {
    absl::StatusOr<double> kernel = per_operator(true, "kernel_us");
    if (!kernel.ok()) return kernel.status();
    absl::StatusOr<double> wall = per_operator(false, "median_us");
    if (!wall.ok()) return wall.status();
    excess.push_back(*kernel - *wall);
    floor.push_back(*wall);
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return std::max(0.0, v[v.size() / 2]);
  };
  return ProfilerCorrection{median(excess), median(floor)};
}

std::string describe(const ProfilerCorrection& c) {
  return fmt::format("each kernel's time less {:.2f} us that the profiler adds, at least {:.2f} us",
                     c.excess_us, c.floor_us);
}

}  // namespace saturn::ort

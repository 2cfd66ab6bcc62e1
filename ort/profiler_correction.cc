// The ProfilerCorrection: its measurement on chains of tiny operators, and
// its line. See runtime.h.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/ort/harness_internal.h"
#include "saturn/ort/runtime.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/graph.h"
#include "saturn/onnx/onnx.h"

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
  // Each round times the pair in fresh sessions; all rounds share one
  // harness process per mode, since starting onnxruntime costs seconds.
  std::vector<std::string> rounds;
  for (int round = 0; round < kRounds; ++round) rounds.insert(rounds.end(), files.begin(), files.end());
  RuntimeOptions timing = options.runtime;
  timing.kernel_offset_us = timing.kernel_floor_us = 0;
  // Per operator, in each round: the long chain's time less the short one's.
  auto per_operator = [&](bool profile, const char* key) -> absl::StatusOr<std::vector<double>> {
    timing.profile = profile;
    // The wall-clock runs last 20-200 us, so their median needs many; the
    // profiled runs' kernel sums vary little, and the profiler's trace of
    // every kernel makes each run costly to read back.
    timing.runs = std::max(options.runtime.runs, profile ? 30 : 100);
    absl::StatusOr<nlohmann::json> timed = time_models(rounds, timing);
    if (!timed.ok()) return timed.status();
    std::vector<double> us;
    for (int round = 0; round < kRounds; ++round) {
      const std::optional<double> short_us = reported_us((*timed)[2 * round], key);
      const std::optional<double> long_us = reported_us((*timed)[2 * round + 1], key);
      if (!short_us || !long_us)
        return absl::InternalError("onnxruntime could not time the chains that measure its profiler");
      us.push_back((*long_us - *short_us) / (kLong - kShort));
    }
    return us;
  };
  absl::StatusOr<std::vector<double>> kernel = per_operator(true, "kernel_us");
  if (!kernel.ok()) return kernel.status();
  absl::StatusOr<std::vector<double>> wall = per_operator(false, "median_us");
  if (!wall.ok()) return wall.status();
  std::vector<double> excess, floor = *wall;
  for (int round = 0; round < kRounds; ++round) excess.push_back((*kernel)[round] - (*wall)[round]);
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

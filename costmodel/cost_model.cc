// What every cost model shares: the operators that cost nothing, and the
// models by name. The models and the costs of graphs are in:
//
//   roofline.cc      the work of an operator and the roofline model
//   profiles.cc      device profiles
//   measured.cc      measured tables and the measured model
//   layout_kinds.cc  where operators run as far as onnxruntime's
//                    convolutions go (OpContext, ValueKinds)
//   graph_costs.cc   held weights, e-graph and graph costs
#include "saturn/costmodel/cost_model.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/base/embedded.h"
#include "saturn/base/file.h"
#include "saturn/base/machine.h"

namespace saturn {

std::span<const EmbeddedFile> shipped_cost_tables();  // generated (CMakeLists.txt)

using tensor::Op;

bool is_free_operator(Op op) {
  switch (op) {
    case Op::kInput:
    case Op::kWeight:
    case Op::kConstant:
    case Op::kIdentity:
    case Op::kDropout:
    case Op::kReshape:
    case Op::kFlatten:
    case Op::kTuple:
    case Op::kTupleGet:
      return true;
    default:
      return false;
  }
}

namespace {

// The file name of a table timed at `threads` intra-op threads.
std::string table_file_name(int threads) {
  return threads == 1 ? "onnxruntime-cpu-1thread.json"
                      : fmt::format("onnxruntime-cpu-{}threads.json", threads);
}

// The shipped table timed nearest to `threads` (they are timed at 1 and 2)
// and its text (compiled in).
std::string shipped_table_name(int threads) {
  return "costmodel/tables/" + table_file_name(threads <= 1 ? 1 : 2);
}
std::string_view shipped_cost_table(const std::string& name) {
  for (const EmbeddedFile& f : shipped_cost_tables())
    if (f.name == name) return f.text;
  return {};
}

// The table calibrated here at `threads`: its file, or "" without one. A
// table of an earlier saturn (onnxruntime-cpu.json, which calibrate timed at
// 2 threads unless told otherwise) serves for 2 threads.
std::string this_machines_table(int threads) {
  const std::string path = calibrated_table_path(threads);
  if (path.empty() || std::filesystem::exists(path)) return path;
  const std::string earlier = user_cache_dir() + "/onnxruntime-cpu.json";
  return threads == 2 && std::filesystem::exists(earlier) ? earlier : "";
}

}  // namespace

absl::StatusOr<std::shared_ptr<const CostModel>> cost_model_by_name(std::string_view spec) {
  if (spec == "opcount") return std::make_shared<const OpCountCostModel>();
  auto profile_of = [](std::string_view name) {
    // A name without a slash or ".json" is a shipped profile.
    if (name.find('/') == std::string_view::npos && !name.ends_with(".json"))
      return shipped_device_profile(name);
    return load_device_profile(std::string(name));
  };
  if (spec == "roofline" || spec.starts_with("roofline:")) {
    absl::StatusOr<DeviceProfile> profile =
        profile_of(spec == "roofline" ? std::string_view("cpu-2core") : spec.substr(9));
    if (!profile.ok()) return profile.status();
    return std::make_shared<const RooflineCostModel>(*profile);
  }
  const bool runtime = spec == "onnxruntime" || spec.starts_with("onnxruntime:");
  if (spec.starts_with("measured:") || runtime) {
    absl::StatusOr<DeviceProfile> profile = profile_of("cpu-2core");
    if (!profile.ok()) return profile.status();
    absl::StatusOr<std::unique_ptr<MeasuredCostModel>> model;
    if (!runtime) {
      model = load_measured_cost_model(std::string(spec.substr(9)), RooflineCostModel(*profile));
    } else {
      absl::StatusOr<int> threads = onnxruntime_threads(spec);
      if (!threads.ok()) return threads.status();
      const std::string path = this_machines_table(*threads);
      const std::string shipped = shipped_table_name(*threads);
      model = !path.empty() ? load_measured_cost_model(path, RooflineCostModel(*profile))
                            : parse_measured_cost_model(shipped_cost_table(shipped), shipped,
                                                        RooflineCostModel(*profile));
    }
    if (!model.ok()) return model.status();
    return std::shared_ptr<const CostModel>(std::move(*model));
  }
  return absl::InvalidArgumentError(fmt::format(
      "unknown cost model '{}' (use onnxruntime, onnxruntime:THREADS, opcount, roofline, "
      "roofline:PROFILE or measured:FILE)",
      spec));
}

absl::StatusOr<int> onnxruntime_threads(std::string_view spec) {
  if (spec == "onnxruntime") return usable_cores();
  int threads = 0;
  const std::string_view digits = spec.substr(std::min<std::size_t>(12, spec.size()));
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), threads);
  if (!spec.starts_with("onnxruntime:") || error != std::errc() ||
      end != digits.data() + digits.size() || threads < 1 || threads > 256)
    return absl::InvalidArgumentError(fmt::format(
        "cost model '{}': onnxruntime's threads must be a whole number from 1 to 256", spec));
  return threads;
}

std::string calibrated_table_path(int threads) {
  const std::string dir = user_cache_dir();
  return dir.empty() ? "" : dir + "/" + table_file_name(threads);
}

std::string cost_model_source(const CostModel& model) {
  if (const auto* measured = dynamic_cast<const MeasuredCostModel*>(&model))
    return measured->source();
  if (const DeviceProfile* device = model.device()) return "roofline of " + device->name;
  return std::string(model.name());
}

}  // namespace saturn

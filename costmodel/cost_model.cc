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

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/base/embedded.h"
#include "saturn/base/file.h"

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

constexpr std::string_view kShippedTable = "costmodel/tables/onnxruntime-cpu.json";

// The shipped table's text (compiled in).
std::string_view shipped_cost_table() {
  for (const EmbeddedFile& f : shipped_cost_tables())
    if (f.name == kShippedTable) return f.text;
  return {};
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
  if (spec.starts_with("measured:") || spec == "onnxruntime") {
    absl::StatusOr<DeviceProfile> profile = profile_of("cpu-2core");
    if (!profile.ok()) return profile.status();
    std::string path(spec == "onnxruntime" ? calibrated_table_path() : spec.substr(9));
    absl::StatusOr<std::unique_ptr<MeasuredCostModel>> model =
        !path.empty() && (spec != "onnxruntime" || std::filesystem::exists(path))
            ? load_measured_cost_model(path, RooflineCostModel(*profile))
            : parse_measured_cost_model(shipped_cost_table(), std::string(kShippedTable),
                                        RooflineCostModel(*profile));
    if (!model.ok()) return model.status();
    return std::shared_ptr<const CostModel>(std::move(*model));
  }
  return absl::InvalidArgumentError(fmt::format(
      "unknown cost model '{}' (use onnxruntime, opcount, roofline, roofline:PROFILE or "
      "measured:FILE)",
      spec));
}

std::string calibrated_table_path() {
  const std::string dir = user_cache_dir();
  return dir.empty() ? "" : dir + "/onnxruntime-cpu.json";
}

std::string cost_model_source(const CostModel& model) {
  if (const auto* measured = dynamic_cast<const MeasuredCostModel*>(&model))
    return measured->source();
  if (const DeviceProfile* device = model.device()) return "roofline of " + device->name;
  return std::string(model.name());
}

}  // namespace saturn

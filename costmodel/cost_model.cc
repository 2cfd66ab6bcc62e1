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

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"

namespace saturn {

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
  if (spec.starts_with("measured:")) {
    absl::StatusOr<DeviceProfile> profile = profile_of("cpu-2core");
    if (!profile.ok()) return profile.status();
    absl::StatusOr<std::unique_ptr<MeasuredCostModel>> model =
        load_measured_cost_model(std::string(spec.substr(9)), RooflineCostModel(*profile));
    if (!model.ok()) return model.status();
    return std::shared_ptr<const CostModel>(std::move(*model));
  }
  return absl::InvalidArgumentError(fmt::format(
      "unknown cost model '{}' (use opcount, roofline, roofline:PROFILE or measured:FILE)", spec));
}

}  // namespace saturn

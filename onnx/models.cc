#include "saturn/onnx/models.h"

#include <filesystem>

#include "fmt/format.h"
#include "saturn/tensor/json/json_model.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

absl::StatusOr<Graph> load_model(const std::string& name, const OnnxImportOptions& onnx) {
  if (name.ends_with(".onnx")) return load_onnx_model(name, onnx);
  if (name.ends_with(".json")) return load_json_model(name);
  if (name.find('/') != std::string::npos || std::filesystem::exists(name))
    return absl::InvalidArgumentError(
        fmt::format("{}: unknown model format (expected .onnx or .json)", name));
  return build_zoo_model(name);
}

absl::Status save_model(const Graph& graph, const std::string& path) {
  if (path.ends_with(".onnx")) return save_onnx_model(graph, path);
  if (path.ends_with(".json")) return save_json_model(graph, path);
  return absl::InvalidArgumentError(
      fmt::format("{}: unknown output format (use .onnx or .json)", path));
}

}  // namespace saturn::tensor

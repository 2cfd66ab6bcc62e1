#include "saturn/tools/model_files.h"

#include <filesystem>

#include "CLI/CLI.hpp"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace saturn::tools {

namespace {

// Whether paths `a` and `b` name one file: the same file when both exist
// (links and "./" included), otherwise the same normalized path.
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

}  // namespace

absl::Status check_outputs(const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].empty()) continue;
    for (const std::string& in : inputs) {
      if (!in.empty() && same_file(outputs[i], in))
        return absl::InvalidArgumentError(
            fmt::format("{}: will not overwrite the input file {}", outputs[i], in));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (!outputs[j].empty() && same_file(outputs[i], outputs[j]))
        return absl::InvalidArgumentError(
            fmt::format("{}: named for two outputs of one command", outputs[i]));
    }
  }
  return absl::OkStatus();
}

std::string cost_file(std::string_view spec) {
  const std::size_t colon = spec.find(':');
  return colon == std::string_view::npos ? "" : std::string(spec.substr(colon + 1));
}

absl::StatusOr<std::shared_ptr<const CostModel>> cost_model_for(std::string_view spec) {
  absl::StatusOr<std::shared_ptr<const CostModel>> model = cost_model_by_name(spec);
  if (!model.ok()) return model;
  const auto* measured = dynamic_cast<const MeasuredCostModel*>(model->get());
  if (measured != nullptr && !measured->measured_on().empty()) {
    const std::string here = machine_description();
    if (measured->measured_on() != here) {
      fmt::print(stderr,
                 "saturn: note: {} was measured on {}, this machine is {} (saturn calibrate "
                 "--refresh times its entries here)\n",
                 measured->source(), measured->measured_on(), here);
    }
  }
  if (absl::StatusOr<int> threads = onnxruntime_threads(spec);
      threads.ok() && measured != nullptr && measured->timed_threads() != *threads) {
    fmt::print(stderr,
               "saturn: note: {} was timed at {} onnxruntime threads, the model runs at {} "
               "(saturn calibrate --runtime-threads {} times them so)\n",
               measured->source(),
               measured->timed_threads() == 0 ? std::string("unrecorded")
                                              : std::to_string(measured->timed_threads()),
               *threads, *threads);
  }
  return model;
}

int fail(const absl::Status& status) {
  fmt::print(stderr, "saturn: {}\n", message(status));
  return 1;
}

void note_default_sizes(const tensor::Graph& graph, const tensor::OnnxImportOptions& onnx) {
  std::vector<std::string> unsized;
  for (const auto& [symbol, size] : graph.symbols.sizes) {
    if (!onnx.dims.contains(symbol)) unsized.push_back(symbol);
  }
  if (unsized.empty()) return;
  fmt::print(stderr,
             "saturn: note: symbolic dimension{} {} sized {} for costing (--dim NAME=SIZE sizes "
             "{}); the written model keeps {} symbolic\n",
             unsized.size() == 1 ? "" : "s", fmt::join(unsized, ", "), tensor::kDefaultSymbolSize,
             unsized.size() == 1 ? "it" : "them", unsized.size() == 1 ? "it" : "them");
}

}  // namespace saturn::tools

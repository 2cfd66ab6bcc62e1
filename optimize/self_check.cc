#include "saturn/optimize/self_check.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "saturn/base/status.h"
#include "saturn/costmodel/cost_model.h"
#include "fmt/format.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/ort/runtime.h"
#include "saturn/onnx/onnx.h"

namespace saturn {

namespace {

constexpr std::uint64_t kSeed = 0x5e1fc4ec;
constexpr double kRtol = 1e-3, kAtol = 1e-4;
constexpr double kHalfRtol = 1e-2, kHalfAtol = 1e-2;
// The absolute tolerance grows with the output's largest magnitude: a sum
// reordered by the rules rounds by a few units in the last place of its
// largest terms, and an element that cancels to near zero keeps that error.
// Measured on PaddleOCR's text-direction classifier (random weights, its
// own BatchNorm statistics): outputs up to 2,000 and reordered sums off by
// up to 1.3e-3 at elements near zero, 7e-7 of the output's L2 norm.
constexpr double kScaledAtol = 1e-5;

// The largest magnitude among a float tensor's elements (0 for others).
double largest_magnitude(const tensor::Tensor& t) {
  if (t.dtype() == tensor::DType::kFloat16) return largest_magnitude(tensor::widened(t));
  if (t.dtype() != tensor::DType::kFloat32) return 0;
  double most = 0;
  for (float x : t.floats()) {
    if (std::isfinite(x)) most = std::max(most, static_cast<double>(std::abs(x)));
  }
  return most;
}

// The floating-point operations of one evaluation, or an error when the
// graph does not type-check.
absl::StatusOr<double> flops(const tensor::Graph& graph) {
  absl::StatusOr<std::vector<tensor::ValueType>> types = tensor::infer_types(graph);
  if (!types.ok()) return types.status();
  double total = 0;
  std::vector<tensor::ValueType> inputs;
  for (int i = 0; i < graph.size(); ++i) {
    const tensor::Node& n = graph.nodes[i];
    inputs.clear();
    for (int in : n.inputs) inputs.push_back((*types)[in]);
    total += op_work(n.op, n.attributes, inputs, (*types)[i]).flops;
  }
  return total;
}

std::string rules_list(std::span<const RuleApplication> rules) {
  std::string list;
  for (const RuleApplication& r : rules)
    list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", r.name, r.count);
  return list.empty() ? "none" : list;
}

}  // namespace

absl::StatusOr<SelfCheck> self_check(const tensor::Graph& input, const tensor::Graph& output,
                                     std::span<const RuleApplication> rules_applied) {
  absl::StatusOr<double> work = flops(input);
  if (!work.ok()) return SelfCheck{false, fmt::format("not checked: {}", message(work.status()))};
  if (*work > kSelfCheckMaxFlops)
    return SelfCheck{false, fmt::format("not checked: {:.1f} GFLOP to interpret (at most {:.0f})",
                                        *work / 1e9, kSelfCheckMaxFlops / 1e9)};
  const tensor::Inputs inputs = tensor::random_inputs(input, kSeed);
  absl::StatusOr<std::vector<tensor::Tensor>> want = tensor::evaluate(input, inputs);
  if (!want.ok())
    return SelfCheck{false, fmt::format("not checked: the interpreter cannot run '{}': {}",
                                        input.name, message(want.status()))};
  absl::StatusOr<std::vector<tensor::Tensor>> got = tensor::evaluate(output, inputs);
  if (!got.ok() || got->size() != want->size())
    return absl::InternalError(fmt::format(
        "the optimized '{}' does not run in the interpreter ({}); rules applied: {}", input.name,
        got.ok() ? "another number of outputs" : std::string(message(got.status())),
        rules_list(rules_applied)));
  for (std::size_t i = 0; i < got->size(); ++i) {
    // float16 keeps 11 significant bits: each operator rounds by up to 5e-4
    // of its result, and reordered sums round differently.
    const bool half = (*want)[i].dtype() == tensor::DType::kFloat16;
    const double atol = (half ? kHalfAtol : kAtol) + kScaledAtol * largest_magnitude((*want)[i]);
    const double ratio =
        (*got)[i].type() == (*want)[i].type()
            ? tensor::max_error_ratio((*got)[i], (*want)[i], half ? kHalfRtol : kRtol, atol)
            : -1;
    if (ratio < 0 || ratio > 1)
      return absl::InternalError(fmt::format(
          "the optimized '{}' does not compute what its input computes: output {} ('{}') "
          "differs ({}) on seeded inputs in the interpreter; rules applied: {}",
          input.name, i, input.outputs[i].name,
          ratio < 0 ? "another type" : fmt::format("error ratio {:.3g}", ratio),
          rules_list(rules_applied)));
  }
  return SelfCheck{true, fmt::format("{} output{} of '{}' matched in the interpreter", got->size(),
                                     got->size() == 1 ? "" : "s", input.name)};
}

OtherSizesCheck::OtherSizesCheck(const tensor::Graph& input) : input_(input) {
  for (const auto& [symbol, size] : input.symbols.sizes) other_.dims[symbol] = size + 2;
}

std::string OtherSizesCheck::fails(const tensor::Graph& output,
                                   std::span<const RuleApplication> rules_applied) {
  // Written to a file and read back mapped, its weights read in place: in
  // memory the model would be held twice more (its bytes and their parse).
  const ort::TempDir dir;
  if (absl::Status s = dir.status(); !s.ok()) return std::string(message(s));
  const std::string file = (dir.path() / "optimized.onnx").string();
  auto named = [&](const absl::Status& s) {  // the file is ours, not the user's
    std::string why(message(s));
    for (std::size_t at; (at = why.find(file)) != std::string::npos;)
      why.replace(at, file.size(), "the optimized model");
    return why;
  };
  if (absl::Status s = tensor::save_onnx_model(output, file); !s.ok()) return named(s);
  absl::StatusOr<tensor::Graph> resized_output = tensor::load_onnx_model(file, other_);
  if (!resized_output.ok()) return named(resized_output.status());
  if (!resized_input_) {
    if (!input_.source.empty()) {
      resized_input_ = tensor::load_onnx_model(input_.source, other_);
    } else {
      absl::StatusOr<std::string> input_bytes = tensor::to_onnx_model(input_);
      resized_input_ = input_bytes.ok()
                           ? tensor::parse_onnx_model(*input_bytes, "the input model", other_)
                           : absl::StatusOr<tensor::Graph>(input_bytes.status());
    }
  }
  if (!resized_input_->ok()) return std::string(message(resized_input_->status()));
  absl::StatusOr<SelfCheck> check = self_check(**resized_input_, *resized_output, rules_applied);
  if (!check.ok()) return std::string(message(check.status()));
  return "";
}

std::string fails_at_other_sizes(const tensor::Graph& input, const tensor::Graph& output,
                                 std::span<const RuleApplication> rules_applied) {
  return OtherSizesCheck(input).fails(output, rules_applied);
}

}  // namespace saturn

// The tensor rule set: conditions the tensor rules use, where the shipped
// rule files are, and the soundness verifier.
//
//   TensorLanguage lang;
//   ConditionRegistry conditions = tensor_conditions();
//   absl::StatusOr<RuleSet> rules = load_tensor_rules(lang, conditions);
//   RuleVerdict v = verify_rule((*rules)[0], lang);
//   if (v.outcome == VerifyOutcome::kFailed) fmt::print("{}\n", v.detail);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/base/embedded.h"
#include "saturn/rules/condition.h"
#include "saturn/rules/rule.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/tensor.h"

namespace saturn {

// Conditions over classes of a tensor e-graph (its analysis must be a
// tensor::TensorAnalysis): is-weight, same-shape, rank-2, ...
ConditionRegistry tensor_conditions();

// `(dtype-int8 ?z)`, `(dtype-uint8 ?z)`, ...: the class holds elements of
// that type (one condition per element type the value operators read).
inline constexpr std::string_view kDTypeConditionPrefix = "dtype-";
// (dtype-quantized ?q): the class holds int8, uint8, int16 or uint16
// elements, the types QuantizeLinear writes; the verifier draws the rule at
// each of them (every such variable of a draw at the same one).
inline constexpr std::string_view kQuantizedCondition = "dtype-quantized";
inline constexpr tensor::DType kQuantizedDTypes[] = {tensor::DType::kInt8, tensor::DType::kUInt8,
                                                     tensor::DType::kInt16, tensor::DType::kUInt16};
// (float-values ?x): the class holds floating-point elements. The tensor
// rule loaders make it every rule's root condition (Rule::root_condition)
// unless the rule has a dtype condition: a rule holds for the types it is
// verified at, float32 unless it says.
inline constexpr std::string_view kFloatValuesCondition = "float-values";

// A condition that reads the values of its first argument, a weight, not only
// its type (such a condition holds only for weights whose values the model
// file gives), and how the verifier makes a drawn value satisfy it:
// `make_hold` changes the values in place, or returns false when the shape
// cannot satisfy it.
struct ValueCondition {
  std::string_view name;
  bool (*make_hold)(tensor::Tensor& values);
};
std::span<const ValueCondition> value_conditions();

// SAME padding (ONNX SAME_UPPER) of a stride-1 convolution by a kernel of
// these dimensions ([top, left, bottom, right]); nullopt unless 4-D.
std::optional<std::vector<std::int64_t>> same_pads(std::span<const std::int64_t> kernel);

// The shipped rule files (rules/tensor/*.rules, compiled in), and all of
// them in one set.
std::span<const EmbeddedFile> shipped_tensor_rules();
absl::StatusOr<RuleSet> load_tensor_rules(const tensor::TensorLanguage& language,
                                          const ConditionRegistry& conditions);
// The rules of `files` in one set; a name defined twice is an error.
absl::StatusOr<RuleSet> load_tensor_rule_files(const std::vector<std::string>& files,
                                               const tensor::TensorLanguage& language,
                                               const ConditionRegistry& conditions);

// The rules whose right sides build no operator that needs onnxruntime's
// domain in a model at default-domain `opset` (tensor::needs_runtime_domain):
// what `--target onnx` searches with.
RuleSet standard_onnx_rules(const RuleSet& rules, std::int64_t opset);

enum class VerifyOutcome : std::uint8_t { kVerified, kFailed, kUnverified };

struct RuleVerdict {
  VerifyOutcome outcome = VerifyOutcome::kUnverified;
  int draws = 0;       // instantiations that type-checked and were compared
  std::string detail;  // the counterexample, or why nothing could be instantiated
  // Where the draws came from, how many had unequal shapes, and what each
  // condition refused.
  std::string coverage;
};

struct VerifyOptions {
  // Successful draws per rule (default 50): random shapes related as rules
  // relate their operands, one-dimension variations of the draws that passed
  // (operands a rule assumes equal come apart), and every small shape for
  // rules with at most two tensor variables.
  int draws = 50;
  int attempts = 20000;  // default 20,000 tries to find them
  double rtol = 1e-4, atol = 1e-5;
  std::uint64_t seed = 1;
};

// Instantiates both sides of `rule` on random shapes and attribute values
// for which its left side type-checks and its conditions hold, evaluates
// them with the reference interpreter on random values and compares.
// The rule's conditions were resolved when it was parsed.
RuleVerdict verify_rule(const Rule& rule, const tensor::TensorLanguage& language,
                        const VerifyOptions& options = {});

}  // namespace saturn

// The tensor rule set's files: the shipped ones (embedded at build time)
// and a user's, each rule typed for the values it was verified on, and the
// rules whose right sides are standard ONNX at an opset. The conditions the
// rules may name are in conditions.cc.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/rules/parser.h"
#include "saturn/rules/tensor/tensor_rules.h"

namespace saturn {

RuleSet standard_onnx_rules(const RuleSet& rules, std::int64_t opset) {
  RuleSet out;
  for (const Rule& rule : rules.rules()) {
    bool standard = true;
    for (const Pattern& p : rule.rhs) {
      for (const PatternNode& n : p.nodes)
        standard = standard &&
                   (n.is_var() || !tensor::needs_runtime_domain(tensor::TensorLanguage::op(n.op), opset));
    }
    if (standard) out.add(rule);
  }
  return out;
}

namespace {

// Appends `rules`, read from `file`, to `all`; a name `all` has is an error.
// A rule with no dtype condition holds for floating-point values: the
// verifier checks it on float32 draws, and integer arithmetic differs (it
// wraps, and its Div truncates), so the rule matches floating-point classes
// only (kFloatValuesCondition).
absl::Status append_rules(RuleSet& all, const RuleSet& rules, std::string_view file,
                          const ConditionRegistry& conditions) {
  const ConditionRegistry::Entry* floats = conditions.find(kFloatValuesCondition);
  for (Rule r : rules.rules()) {
    if (all.find(r.name) != nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("{}: rule '{}' is also defined in another file", file, r.name));
    }
    const bool typed = std::ranges::any_of(r.conditions, [](const RuleCondition& c) {
      return c.predicate->name.starts_with(kDTypeConditionPrefix);
    });
    if (!typed) r.root_condition = floats;
    all.add(std::move(r));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RuleSet> load_tensor_rules(const tensor::TensorLanguage& language,
                                          const ConditionRegistry& conditions) {
  RuleSet all;
  for (const EmbeddedFile& file : shipped_tensor_rules()) {
    absl::StatusOr<RuleSet> rules = parse_rules(file.text, file.name, language, conditions);
    if (!rules.ok()) return rules.status();
    if (absl::Status s = append_rules(all, *rules, file.name, conditions); !s.ok()) return s;
  }
  return all;
}

absl::StatusOr<RuleSet> load_tensor_rule_files(const std::vector<std::string>& files,
                                               const tensor::TensorLanguage& language,
                                               const ConditionRegistry& conditions) {
  RuleSet all;
  for (const std::string& file : files) {
    absl::StatusOr<RuleSet> rules = load_rules(file, language, conditions);
    if (!rules.ok()) return rules.status();
    if (absl::Status s = append_rules(all, *rules, file, conditions); !s.ok()) return s;
  }
  return all;
}

}  // namespace saturn

// Rule files: parsed against the tensor language and its conditions; a rule
// that parses is verified with a few draws (building and evaluating both of
// its sides on shapes the verifier picks).
#include "saturn/rules/parser.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace saturn;
  static const tensor::TensorLanguage language;
  static const ConditionRegistry conditions = tensor_conditions();
  absl::StatusOr<RuleSet> rules =
      parse_rules(fuzz::as_text(data, size), "fuzz.rules", language, conditions);
  if (!rules.ok()) return 0;
  for (const Rule& rule : rules->rules())
    (void)verify_rule(rule, language, VerifyOptions{.draws = 2, .attempts = 200});
  return 0;
}

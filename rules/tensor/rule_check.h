// User rule files checked before a search uses them: every rule goes
// through the soundness verifier (verify_rule), and a file with a rule that
// fails is refused, naming the rule, its file:line and the counterexample.
// A file whose rules all pass is remembered by a hash of its content (and
// the verifier's version) in a cache directory, so that the next run that
// loads the same text does not verify it again.
//
//   absl::StatusOr<RuleFileCheck> c =
//       check_rule_files({"my.rules"}, lang, conditions, default_rule_cache_dir());
//   if (!c.ok()) return c.status();  // an unsound rule, or a file that does not parse
//   for (const std::string& r : c->unverified) warn(r);
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/rules/condition.h"
#include "saturn/tensor/ops.h"

namespace saturn {

struct RuleFileCheck {
  int verified = 0;  // rules checked on random shapes and values (now or in the cache)
  // Rules the verifier could not instantiate: "file:line: name: why".
  std::vector<std::string> unverified;
  int files_from_cache = 0;  // files whose verdicts the cache held
};

// user_cache_dir() (base/file.h); "" when none of its variables is set
// (nothing is cached then).
std::string default_rule_cache_dir();

// Verifies every rule of `files` (or takes their verdicts from `cache_dir`;
// "" caches nothing). A rule that fails is an error naming it, file:line and
// the counterexample; so is a file that does not load. The cache is only
// ever a speed-up: a cache that cannot be read or written is ignored.
absl::StatusOr<RuleFileCheck> check_rule_files(const std::vector<std::string>& files,
                                               const tensor::TensorLanguage& language,
                                               const ConditionRegistry& conditions,
                                               const std::string& cache_dir);

}  // namespace saturn

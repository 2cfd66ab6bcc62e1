// The rule language (`.rules` files).
//
//   # comments run to the end of the line
//   group algebra                       # later rules belong to this group
//   rule comm-add:   (+ ?a ?b) => (+ ?b ?a)
//   rule assoc-add:  (+ ?a (+ ?b ?c)) <=> (+ (+ ?a ?b) ?c)   # both directions
//   rule cancel-div: (/ ?a ?a) => 1 if (is-nonzero ?a)
//   rule merge-mm:   (matmul ?x ?w1), (matmul ?x ?w2)         # multi-pattern
//                 => (split0 (matmul ?x (concat ?w1 ?w2))), (split1 ...)
//
// `<=>` defines NAME (left to right) and NAME-rev (right to left). Errors
// name file:line:column: syntax, unknown operators and conditions, arity
// mismatches, right-hand variables the left side does not bind, duplicate
// rule names.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "saturn/egraph/language.h"
#include "saturn/rules/condition.h"
#include "saturn/rules/rule.h"

namespace saturn {

absl::StatusOr<RuleSet> parse_rules(std::string_view text, std::string_view file,
                                    const Language& language, const ConditionRegistry& conditions);
// Reads and parses a rule file.
absl::StatusOr<RuleSet> load_rules(const std::string& path, const Language& language,
                                   const ConditionRegistry& conditions);

}  // namespace saturn

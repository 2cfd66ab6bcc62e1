// A small math language for the engine's tests and benchmark, after egg's
// math suite: + - * / pow ln sqrt sin cos, derivatives (d x e) and
// integrals (i e x), numbers and symbols; constant folding as an analysis;
// the conditions its rules use.
//
//   MathLanguage lang;
//   ConstantFolding folding(lang);
//   EGraph egraph(lang, &folding);
//   ConditionRegistry conditions = math_conditions(lang);
//   RuleSet rules = *load_math_rules(lang, conditions);
#pragma once

#include <optional>
#include <string>

#include "saturn/egraph/analysis.h"
#include "saturn/egraph/language.h"
#include "absl/status/statusor.h"
#include "saturn/rules/condition.h"
#include "saturn/rules/rule.h"

namespace saturn {

class MathLanguage final : public Language {
 public:
  MathLanguage();

  // Numbers `2`, `-1`, `0.5` become num{value=...}; other words sym{name=...}.
  std::optional<Leaf> parse_leaf(std::string_view token) const override;
  std::string node_label(Symbol op, const Attributes& attributes) const override;

  Symbol num, sym, add, sub, mul, div, pow, ln, sqrt, sin, cos, d, i;
};

// Folds + - * / over known constants; a class with a constant also holds the
// number node. With `prune` (egg's ConstantFold in its tests/math.rs), such a
// class then keeps only its leaves (EGraph::keep_leaves): e-matching no
// longer sees how the constant was computed.
class ConstantFolding final : public TypedAnalysis<std::optional<double>> {
 public:
  explicit ConstantFolding(const MathLanguage& language, bool prune = false)
      : lang_(language), prune_(prune) {}

  std::optional<double> constant(Id canonical) const { return data(canonical); }
  void modify(EGraph& egraph, Id id) override;

 protected:
  std::optional<std::optional<double>> make_data(const EGraph& egraph, const ENode& node) override;
  JoinResult join(std::optional<double>& into, const std::optional<double>& from) override;
  bool is_top(const std::optional<double>& data) const override { return data.has_value(); }

 private:
  const MathLanguage& lang_;
  bool prune_;
};

// The math rules' conditions: not-zero, is-const, is-sym,
// is-const-or-distinct-var. They read the e-graph's ConstantFolding.
ConditionRegistry math_conditions(const MathLanguage& language);

// The seven start terms of egg's math_ematching_bench (egg's src/test.rs).
inline constexpr const char* kEggBenchTerms[] = {
    "(i (ln x) x)",
    "(i (+ x (cos x)) x)",
    "(i (* (cos x) x) x)",
    "(d x (+ 1 (* 2 x)))",
    "(d x (- (pow x 3) (* 7 (pow x 2))))",
    "(+ (* y (+ x y)) (- (+ x 2) (+ x x)))",
    "(/ 1 (- (/ (+ 1 (sqrt five)) 2) (/ (- 1 (sqrt five)) 2)))",
};

// Adds kEggBenchTerms to `egraph` and rebuilds it.
absl::Status add_egg_bench_terms(EGraph& egraph);

// The shipped math rules (rules/math/math.rules, compiled in).
absl::StatusOr<RuleSet> load_math_rules(const MathLanguage& language,
                                        const ConditionRegistry& conditions);

}  // namespace saturn

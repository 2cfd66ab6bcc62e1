// A math e-graph with constant folding and the math rules loaded: the setup
// the engine tests share.
//
//   MathSetup m;
//   add_term(m.eg, "(+ x 0)");
//   Runner().run(m.eg, m.rules);
#pragma once

#include "saturn/egraph/egraph.h"
#include "gtest/gtest.h"
#include "saturn/rules/math/math_language.h"
#include "saturn/rules/parser.h"

namespace saturn {

struct MathSetup {
  // `prune`: constant folding as egg's tests/math.rs (see ConstantFolding).
  explicit MathSetup(bool prune = false)
      : folding(lang, prune), eg(lang, &folding), conditions(math_conditions(lang)) {
    auto loaded = load_math_rules(lang, conditions);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (loaded.ok()) rules = *std::move(loaded);
  }
  MathLanguage lang;
  ConstantFolding folding;
  EGraph eg;
  ConditionRegistry conditions;
  RuleSet rules;
};

}  // namespace saturn

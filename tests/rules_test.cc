// Rule language tests: parsing, error positions for malformed files,
// e-matching and multi-pattern joins.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "saturn/egraph/term.h"
#include "gtest/gtest.h"
#include "saturn/rules/machine.h"
#include "saturn/rules/math/math_language.h"
#include "saturn/rules/parser.h"
#include "saturn/rules/rewrite.h"
#include "saturn/rules/runner.h"
#include "saturn/tests/math_setup.h"

namespace saturn {
namespace {

TEST(RuleParser, ParsesTheMathRules) {
  MathLanguage lang;
  ConditionRegistry conditions = math_conditions(lang);
  auto rules = load_math_rules(lang, conditions);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_EQ(rules->size(), 36u);
  const Rule* d = rules->find("d-constant");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->group, "calculus");
  EXPECT_EQ(d->conditions.size(), 2u);
  EXPECT_EQ(d->to_string(lang),
            "rule d-constant: (d ?x ?c) => 0 if (is-sym ?x) (is-const-or-distinct-var ?c ?x)");
}

TEST(RuleParser, BothDirectionsAndMultiPatterns) {
  MathLanguage lang;
  ConditionRegistry conditions = math_conditions(lang);
  auto rules = parse_rules(
      "group g1\n"
      "rule assoc: (+ ?a (+ ?b ?c)) <=> (+ (+ ?a ?b) ?c)\n"
      "rule pair: (+ ?x ?y), (* ?x ?z)\n"
      "        => (+ ?y ?x), (* ?z ?x)\n",
      "inline.rules", lang, conditions);
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 3u);
  EXPECT_EQ((*rules)[1].name, "assoc-rev");
  EXPECT_EQ((*rules)[1].to_string(lang), "rule assoc-rev: (+ (+ ?a ?b) ?c) => (+ ?a (+ ?b ?c))");
  EXPECT_TRUE((*rules)[2].is_multi());
  EXPECT_EQ((*rules)[2].group, "g1");
}

// A definition names a pattern; a call stands for it with its arguments in
// place of the parameters, in later definitions and on either side.
TEST(RuleParser, DefinitionsExpandWhereTheyAreCalled) {
  MathLanguage lang;
  ConditionRegistry conditions = math_conditions(lang);
  auto rules = parse_rules(
      "define (twice ?x): (+ ?x ?x)\n"
      "define (four-times ?x): (twice (twice ?x))\n"
      "rule r: (four-times (* ?a ?b)) => (* (twice ?b) (twice ?a))\n",
      "inline.rules", lang, conditions);
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 1u);
  EXPECT_EQ((*rules)[0].to_string(lang),
            "rule r: (+ (+ (* ?a ?b) (* ?a ?b)) (+ (* ?a ?b) (* ?a ?b))) => "
            "(* (+ ?b ?b) (+ ?a ?a))");
}

// Each file in tests/data/bad_rules starts with "# expect: LINE:COL: MESSAGE".
TEST(RuleParser, MalformedFilesGiveTheirErrors) {
  MathLanguage lang;
  ConditionRegistry conditions = math_conditions(lang);
  const std::filesystem::path dir = std::filesystem::path(SATURN_TEST_DATA) / "bad_rules";
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    std::string first;
    std::getline(in, first);
    const std::string prefix = "# expect: ";
    ASSERT_EQ(first.rfind(prefix, 0), 0u) << entry.path();
    const std::string expected = entry.path().string() + ":" + first.substr(prefix.size());
    auto rules = load_rules(entry.path().string(), lang, conditions);
    ASSERT_FALSE(rules.ok()) << entry.path() << " parsed";
    EXPECT_EQ(std::string(rules.status().message()), expected);
    ++checked;
  }
  EXPECT_GE(checked, 10u);
}

TEST(RuleParser, MissingFileIsAnError) {
  MathLanguage lang;
  ConditionRegistry conditions;
  auto rules = load_rules("/nonexistent/x.rules", lang, conditions);
  ASSERT_FALSE(rules.ok());
  EXPECT_NE(std::string(rules.status().message()).find("/nonexistent/x.rules"), std::string::npos);
}

TEST(Matching, FindsEveryMatchWithRepeatedVariables) {
  MathLanguage lang;
  EGraph eg(lang);
  ConditionRegistry conditions;
  ASSERT_TRUE(add_term(eg, "(+ a a)").ok());
  ASSERT_TRUE(add_term(eg, "(+ a b)").ok());
  ASSERT_TRUE(add_term(eg, "(* (+ b b) c)").ok());
  eg.rebuild();
  auto rules = parse_rules("rule r: (+ ?x ?x) => ?x\nrule s: (+ ?x ?y) => ?x\n", "t.rules", lang,
                           conditions);
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(search_rule(eg, (*rules)[0]).size(), 2u);  // (+ a a), (+ b b)
  EXPECT_EQ(search_rule(eg, (*rules)[1]).size(), 3u);
}

// Every match of pattern node `n` at class `cls` that extends `in`, found by
// trying every node of every class on the way: the reference the compiled
// matcher is checked against.
std::vector<std::vector<Id>> naive_matches(const EGraph& eg, const Pattern& p, std::uint32_t n,
                                           Id cls, const std::vector<Id>& in) {
  const PatternNode& pn = p.nodes[n];
  if (pn.is_var()) {
    if (!in[pn.var].valid()) {
      std::vector<Id> bound = in;
      bound[pn.var] = cls;
      return {bound};
    }
    if (in[pn.var] == cls) return {in};
    return {};
  }
  std::vector<std::vector<Id>> out;
  const std::optional<AttrId> attrs = eg.attrs().find(pn.attributes);
  for (const ENode& node : eg.nodes(cls)) {
    if (node.op != pn.op || !attrs || node.attrs != *attrs ||
        node.children.size() != pn.children.size()) {
      continue;
    }
    std::vector<std::vector<Id>> partial{in};
    for (std::size_t k = 0; k < pn.children.size(); ++k) {
      std::vector<std::vector<Id>> next;
      for (const auto& s : partial) {
        for (auto& e : naive_matches(eg, p, pn.children[k], node.children[k], s)) {
          next.push_back(std::move(e));
        }
      }
      partial = std::move(next);
    }
    for (auto& s : partial) out.push_back(std::move(s));
  }
  return out;
}

// The compiled matcher (ground subterms looked up, known first children
// jumped to, classes skipped by their operator bits) finds exactly the
// matches of a naive search, for every math rule, in an e-graph grown by
// the math rules (large classes, constants, repeated variables) and then
// rolled back from one more iteration.
TEST(Matching, CompiledMatcherAgreesWithNaiveSearch) {
  MathSetup m;
  EGraph& eg = m.eg;
  const RuleSet& rules = m.rules;
  ASSERT_GT(rules.size(), 0u);
  for (const char* term : {"(i (* (cos x) x) x)", "(d x (- (pow x 3) (* 7 (pow x 2))))",
                           "(+ (* y (+ x y)) (- (+ x 2) (+ x x)))", "(* x (/ 1 x))"}) {
    ASSERT_TRUE(add_term(eg, term).ok());
  }
  Runner().with_iteration_limit(4).run(eg, rules);
  ASSERT_GT(eg.num_nodes(), 1000u);
  // Checked after a rollback too: the classes' operator bits come back.
  eg.mark();
  Runner().with_iteration_limit(1).run(eg, rules);
  eg.rollback();
  std::size_t total = 0;
  for (std::size_t r = 0; r < rules.size(); ++r) {
    const Rule& rule = rules[r];
    for (const Pattern& pattern : rule.lhs) {
      PatternMatches found;
      search_pattern(eg, pattern, rule.num_vars(), found);
      std::vector<std::vector<Id>> got, want;
      for (std::size_t m = 0; m < found.size(); ++m) {
        std::vector<Id> row{found.roots[m]};
        for (Id v : found.subst(m)) row.push_back(v);
        got.push_back(std::move(row));
      }
      for (Id cls : eg.class_ids()) {
        std::vector<Id> none(rule.num_vars(), Id());
        for (auto& s : naive_matches(eg, pattern, pattern.nodes.size() - 1, cls, none)) {
          s.insert(s.begin(), cls);
          want.push_back(std::move(s));
        }
      }
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      EXPECT_EQ(got, want) << rule.name;
      total += want.size();
    }
  }
  EXPECT_GT(total, 1000u);
}

TEST(Matching, MultiPatternJoinsOnSharedVariables) {
  MathLanguage lang;
  EGraph eg(lang);
  ConditionRegistry conditions;
  Id a = *add_term(eg, "(sin x)");
  Id b = *add_term(eg, "(cos x)");
  Id c = *add_term(eg, "(cos y)");
  eg.rebuild();
  auto rules = parse_rules("rule m: (sin ?v), (cos ?v) => (cos ?v), (sin ?v)\n", "m.rules", lang,
                           conditions);
  ASSERT_TRUE(rules.ok()) << rules.status();
  RuleMatches m = search_rule(eg, (*rules)[0]);
  ASSERT_EQ(m.size(), 1u);  // only x appears under both
  EXPECT_EQ(m.roots_of(0)[0], eg.find(a));
  EXPECT_EQ(m.roots_of(0)[1], eg.find(b));
  apply_rule(eg, (*rules)[0], m);
  eg.rebuild();
  EXPECT_EQ(eg.find(a), eg.find(b));
  EXPECT_NE(eg.find(c), eg.find(a));
}

// Patterns that a variable renaming swaps are interchangeable: of the
// matches that differ only by the order of those patterns, one remains.
TEST(Matching, InterchangeablePatternsMatchOnce) {
  MathLanguage lang;
  EGraph eg(lang);
  ConditionRegistry conditions;
  conditions.add("ordered", 2, [](const EGraph&, std::span<const Id>) { return true; });
  for (const char* t : {"(* x k)", "(* y k)", "(* z k)", "(+ x w)"})
    ASSERT_TRUE(add_term(eg, t).ok());
  eg.rebuild();
  auto rules = parse_rules(
      "rule two: (* ?a ?c), (* ?b ?c) => (* ?c ?a), (* ?c ?b) if (distinct ?a ?b)\n"
      "rule three: (* ?a ?d), (* ?b ?d), (* ?c ?d) => (* ?d ?a), (* ?d ?b), (* ?d ?c)\n"
      "rule asymmetric: (* ?a ?c), (* ?b ?c) => (* ?c ?a), (* ?c ?b) if (ordered ?a ?b)\n"
      "rule shapes-differ: (* ?a ?c), (+ ?b ?c) => (* ?c ?a), (+ ?c ?b)\n"
      "rule third-uses-a: (* ?a ?c), (* ?b ?c), (+ ?a ?d) => (* ?c ?a), (* ?c ?b), (+ ?d ?a)\n",
      "sym.rules", lang, conditions);
  ASSERT_TRUE(rules.ok()) << rules.status();
  using Pairs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
  EXPECT_EQ(rules->find("two")->interchangeable, (Pairs{{0, 1}}));
  EXPECT_EQ(rules->find("three")->interchangeable, (Pairs{{0, 1}, {0, 2}, {1, 2}}));
  EXPECT_TRUE(rules->find("asymmetric")->interchangeable.empty());
  EXPECT_TRUE(rules->find("shapes-differ")->interchangeable.empty());
  EXPECT_TRUE(rules->find("third-uses-a")->interchangeable.empty());

  // Three products of k: 3 unordered pairs (not 6 ordered ones), 1 triple
  // (not 6), each with its pattern roots in increasing class order.
  RuleMatches two = search_rule(eg, *rules->find("two"));
  ASSERT_EQ(two.size(), 3u);
  for (std::size_t m = 0; m < two.size(); ++m) EXPECT_LT(two.roots_of(m)[0], two.roots_of(m)[1]);
  EXPECT_EQ(search_rule(eg, *rules->find("three")).size(), 1u);
  EXPECT_EQ(search_rule(eg, *rules->find("asymmetric")).size(), 9u);    // a = b included
  EXPECT_EQ(search_rule(eg, *rules->find("third-uses-a")).size(), 3u);  // a = x, b any
}

TEST(Matching, AttributeVariablesBindAndAgree) {
  MathLanguage lang;
  EGraph eg(lang);
  ConditionRegistry conditions;
  Id same = *add_term(eg, "(+ 3 3)");
  Id other = *add_term(eg, "(+ 3 4)");
  Id doubled = *add_term(eg, "(* 2 3)");
  eg.rebuild();
  auto rules = parse_rules("rule double: (+ num{value=?v} num{value=?v}) => (* 2 num{value=?v})\n",
                           "a.rules", lang, conditions);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_EQ((*rules)[0].to_string(lang),
            "rule double: (+ num{value=?v} num{value=?v}) => (* 2 num{value=?v})");
  RuleMatches m = search_rule(eg, (*rules)[0]);
  ASSERT_EQ(m.size(), 1u);  // (+ 3 4) has two different values
  EXPECT_EQ(m.roots_of(0)[0], eg.find(same));
  EXPECT_EQ(apply_rule(eg, (*rules)[0], m).applied, 1u);
  eg.rebuild();
  EXPECT_EQ(eg.find(same), eg.find(doubled));
  EXPECT_NE(eg.find(other), eg.find(doubled));
}

TEST(Matching, AttributeVariablesJoinAcrossPatterns) {
  MathLanguage lang;
  EGraph eg(lang);
  ConditionRegistry conditions;
  Id a = *add_term(eg, "(sin 5)");
  Id b = *add_term(eg, "(cos 5)");
  Id c = *add_term(eg, "(cos 6)");
  eg.rebuild();
  auto rules = parse_rules(
      "rule m: (sin num{value=?v}), (cos num{value=?v}) => (cos num{value=?v}), (sin "
      "num{value=?v})\n",
      "m.rules", lang, conditions);
  ASSERT_TRUE(rules.ok()) << rules.status();
  RuleMatches m = search_rule(eg, (*rules)[0]);
  ASSERT_EQ(m.size(), 1u);
  apply_rule(eg, (*rules)[0], m);
  eg.rebuild();
  EXPECT_EQ(eg.find(a), eg.find(b));
  EXPECT_NE(eg.find(c), eg.find(a));
}

TEST(Rewrite, ConditionsGateApplication) {
  MathLanguage lang;
  ConstantFolding folding(lang);
  EGraph eg(lang, &folding);
  ConditionRegistry conditions = math_conditions(lang);
  Id zero = *add_term(eg, "(/ 0 0)");
  Id two = *add_term(eg, "(/ 2 2)");
  auto rules =
      parse_rules("rule cancel: (/ ?a ?a) => 1 if (not-zero ?a)\n", "c.rules", lang, conditions);
  ASSERT_TRUE(rules.ok());
  Runner().with_iteration_limit(3).run(eg, *rules);
  Id one = *add_term(eg, "1");
  eg.rebuild();
  EXPECT_EQ(eg.find(two), eg.find(one));
  EXPECT_NE(eg.find(zero), eg.find(one));
}

TEST(Runner, ReportsIterationsAndSaturation) {
  MathLanguage lang;
  EGraph eg(lang);
  ConditionRegistry conditions;
  ASSERT_TRUE(add_term(eg, "(+ a (+ b c))").ok());
  auto rules = parse_rules("rule comm: (+ ?a ?b) => (+ ?b ?a)\n", "c.rules", lang, conditions);
  ASSERT_TRUE(rules.ok());
  RunReport r = Runner().with_scheduler(std::make_unique<SimpleScheduler>()).run(eg, *rules);
  EXPECT_EQ(r.stop_reason, StopReason::kSaturated);
  ASSERT_GE(r.iterations.size(), 2u);
  EXPECT_EQ(r.iterations.back().applied, 0u);
  EXPECT_EQ(eg.num_nodes(), 7u);  // a b c, (+ b c) (+ c b), (+ a _) (+ _ a)
  EXPECT_GT(r.rules[0].applied, 0u);
}

TEST(Runner, BackoffBansRulesThatMatchTooMuch) {
  MathLanguage lang;
  EGraph eg(lang);
  ConditionRegistry conditions;
  ASSERT_TRUE(add_term(eg, "(+ p (+ q (+ r (+ s t))))").ok());
  auto rules = parse_rules(
      "rule comm: (+ ?a ?b) => (+ ?b ?a)\nrule assoc: (+ ?a (+ ?b ?c)) => "
      "(+ (+ ?a ?b) ?c)\n",
      "c.rules", lang, conditions);
  ASSERT_TRUE(rules.ok());
  RunReport r = Runner()
                    .with_iteration_limit(12)
                    .with_scheduler(std::make_unique<BackoffScheduler>(3, 2))
                    .run(eg, *rules);
  bool some_skipped = false;
  for (const auto& it : r.iterations) some_skipped |= it.rules_searched < 2;
  EXPECT_TRUE(some_skipped);
}

// The loop alone: a Saturation that changes something for three iterations
// and refuses the first chance to stop (as a scheduler lifting bans does).
class CountingSaturation final : public Saturation {
 public:
  explicit CountingSaturation(std::size_t changes, std::optional<StopReason> stop_at = {})
      : changes_(changes), stop_at_(stop_at) {}
  IterationStep iterate(std::size_t iteration) override {
    ++calls;
    if (stop_at_ && iteration + 1 == changes_) return {.changed = true, .stop = stop_at_};
    return {.changed = iteration < changes_};
  }
  bool can_stop(std::size_t) override { return !std::exchange(refuse_once_, false); }
  std::size_t calls = 0;

 private:
  std::size_t changes_;
  std::optional<StopReason> stop_at_;
  bool refuse_once_ = true;
};

TEST(Runner, DrivesAnySaturationUnderItsLimits) {
  std::size_t iterations = 0;
  CountingSaturation fixpoint(3);
  // Changes at 0, 1, 2; no change at 3 but may not stop; stops at 4.
  EXPECT_EQ(Runner().drive(fixpoint, &iterations), StopReason::kSaturated);
  EXPECT_EQ(iterations, 5u);
  EXPECT_EQ(fixpoint.calls, 5u);

  CountingSaturation limited(10);
  EXPECT_EQ(Runner().with_iteration_limit(4).drive(limited, &iterations),
            StopReason::kIterationLimit);
  EXPECT_EQ(iterations, 4u);

  CountingSaturation full(10, StopReason::kByteLimit);
  EXPECT_EQ(Runner().drive(full, &iterations), StopReason::kByteLimit);
  EXPECT_EQ(iterations, 10u);
}

}  // namespace
}  // namespace saturn

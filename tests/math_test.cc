// Proof goals from egg's math test suite: after saturating with the math
// rules, the two terms of each goal share an e-class.
#include "saturn/egraph/term.h"
#include "gtest/gtest.h"
#include "saturn/rules/math/math_language.h"
#include "saturn/rules/runner.h"
#include "saturn/tests/math_setup.h"

namespace saturn {
namespace {

struct Goal {
  const char* name;
  const char* start;
  const char* goal;
};

const Goal kGoals[] = {
    {"comm_assoc_add", "(+ a (+ b c))", "(+ c (+ b a))"},
    {"comm_assoc_mul", "(* a (* b c))", "(* c (* b a))"},
    {"associate_adds", "(+ 1 (+ 2 (+ 3 (+ 4 (+ 5 (+ 6 7))))))",
     "(+ 7 (+ 6 (+ 5 (+ 4 (+ 3 (+ 2 1))))))"},
    {"simplify_add", "(+ x (+ x (+ x x)))", "(* 4 x)"},
    {"powers", "(* (pow 2 x) (pow 2 y))", "(pow 2 (+ x y))"},
    {"simplify_const", "(+ 1 (- a (* (- 2 1) a)))", "1"},
    {"simplify_root", "(/ 1 (- (/ (+ 1 (sqrt five)) 2) (/ (- 1 (sqrt five)) 2)))",
     "(/ 1 (sqrt five))"},
    {"simplify_factor", "(* (+ x 3) (+ x 1))", "(+ (+ (* x x) (* 4 x)) 3)"},
    {"cancel_sub", "(- (* a b) (* a b))", "0"},
    {"pow_square", "(pow x 2)", "(* x x)"},
    {"diff_same", "(d x x)", "1"},
    {"diff_different", "(d x y)", "0"},
    {"diff_simple1", "(d x (+ 1 (* 2 x)))", "2"},
    {"diff_simple2", "(d x (+ 1 (* y x)))", "y"},
    {"diff_ln", "(d x (ln x))", "(/ 1 x)"},
    {"diff_sin", "(d x (sin x))", "(cos x)"},
    {"diff_cos", "(d x (cos x))", "(* -1 (sin x))"},
    {"diff_power_simple", "(d x (pow x 3))", "(* 3 (pow x 2))"},
    {"integ_one", "(i 1 x)", "x"},
    {"integ_sin", "(i (cos x) x)", "(sin x)"},
    {"integ_cos", "(i (sin x) x)", "(* -1 (cos x))"},
    {"integ_x", "(i (pow x 1) x)", "(/ (pow x 2) 2)"},
    {"integ_part1", "(i (* x (cos x)) x)", "(+ (* x (sin x)) (cos x))"},
    {"integ_part3", "(i (ln x) x)", "(- (* x (ln x)) x)"},
};

class MathGoal : public ::testing::TestWithParam<Goal> {};

TEST_P(MathGoal, Proves) {
  const Goal& g = GetParam();
  MathSetup m;
  EGraph& eg = m.eg;
  auto start = add_term(eg, g.start);
  auto goal = add_term(eg, g.goal);
  ASSERT_TRUE(start.ok() && goal.ok());
  RunReport report =
      Runner()
          .with_iteration_limit(60)
          .with_node_limit(100'000)
          .with_time_limit(std::chrono::seconds(60))
          .with_goal([&](const EGraph& e) { return e.find(*start) == e.find(*goal); })
          .run(eg, m.rules);
  EXPECT_EQ(eg.find(*start), eg.find(*goal))
      << g.start << " vs " << g.goal << " stopped: " << to_string(report.stop_reason) << " nodes "
      << eg.num_nodes();
}

INSTANTIATE_TEST_SUITE_P(EggMath, MathGoal, ::testing::ValuesIn(kGoals),
                         [](const auto& info) { return std::string(info.param.name); });

// egg's math_ematching_bench (bench/engine_math --egg) for 3 iterations:
// every rule every iteration, constant classes pruned to their leaves.
RunReport run_egg_workload(MathSetup& m, std::size_t iterations) {
  EXPECT_TRUE(add_egg_bench_terms(m.eg).ok());
  return Runner()
      .with_iteration_limit(iterations)
      .with_node_limit(2'000'000)
      .with_scheduler(std::make_unique<SimpleScheduler>())
      .run(m.eg, m.rules);
}

TEST(EggWorkload, CountsMatchEggsAfterThreeIterations) {
  MathSetup m(/*prune=*/true);
  RunReport report = run_egg_workload(m, 3);
  // egg f94c346 counts 35, 137 and 321 e-nodes before its first three
  // iterations and 611 before the fourth, in 194 classes.
  ASSERT_EQ(report.iterations.size(), 3u);
  EXPECT_EQ(report.initial_visible_nodes, 35u);
  EXPECT_EQ(report.iterations[0].visible_nodes, 137u);
  EXPECT_EQ(report.iterations[1].visible_nodes, 321u);
  EXPECT_EQ(report.iterations[2].visible_nodes, 611u);
  EXPECT_EQ(m.eg.num_classes(), 194u);
  // The pruned nodes are still in the hash-cons.
  EXPECT_GT(m.eg.num_nodes(), m.eg.num_visible_nodes());
  EXPECT_TRUE(m.eg.check_invariants().ok()) << m.eg.check_invariants();
}

TEST(EggWorkload, PruningRollsBackExactly) {
  MathSetup m(/*prune=*/true);
  run_egg_workload(m, 2);
  const std::string before = m.eg.dump();
  const std::size_t nodes = m.eg.num_nodes(), visible = m.eg.num_visible_nodes();
  m.eg.mark();
  RunReport more = Runner()
                       .with_iteration_limit(2)
                       .with_scheduler(std::make_unique<SimpleScheduler>())
                       .run(m.eg, m.rules);
  EXPECT_GT(m.eg.num_visible_nodes(), visible);
  m.eg.rollback();
  EXPECT_EQ(m.eg.dump(), before);
  EXPECT_EQ(m.eg.num_nodes(), nodes);
  EXPECT_EQ(m.eg.num_visible_nodes(), visible);
  EXPECT_TRUE(m.eg.check_invariants().ok()) << m.eg.check_invariants();
  // The same steps again give the same e-graph.
  RunReport again = Runner()
                        .with_iteration_limit(2)
                        .with_scheduler(std::make_unique<SimpleScheduler>())
                        .run(m.eg, m.rules);
  EXPECT_EQ(again.iterations.back().visible_nodes, more.iterations.back().visible_nodes);
  EXPECT_EQ(again.iterations.back().nodes, more.iterations.back().nodes);
}

}  // namespace
}  // namespace saturn

// Rules over the tensor language: attributes in patterns are normalized
// (defaults filled in), attribute variables carry a convolution's settings
// into its rewrite, and the rewritten, extracted graph computes the same
// outputs.
#include <gtest/gtest.h>

#include "saturn/costmodel/cost_model.h"
#include "saturn/base/status.h"
#include "saturn/extract/extractor.h"
#include "saturn/rules/parser.h"
#include "saturn/rules/runner.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/analysis.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {
namespace {

constexpr const char* kFusion = R"(
# Relu after a convolution becomes the convolution's fused activation.
rule fuse-conv-relu: (Relu (Conv{strides=?s, pads=?p, dilations=?d, group=?g} ?x ?w ?b))
  => (Conv{strides=?s, pads=?p, dilations=?d, group=?g, activation=relu} ?x ?w ?b)
)";

TEST(TensorRules, PatternAttributesAreNormalized) {
  TensorLanguage lang;
  ConditionRegistry conditions;
  absl::StatusOr<RuleSet> rules =
      parse_rules("rule r: (Conv{group=1} ?x ?w) => (Conv ?x ?w)\n", "n.rules", lang, conditions);
  ASSERT_TRUE(rules.ok()) << message(rules.status());
  const PatternNode& lhs = (*rules)[0].lhs[0].root();
  const PatternNode& rhs = (*rules)[0].rhs[0].root();
  EXPECT_EQ(lhs.attributes, rhs.attributes);  // both spell the default convolution
  EXPECT_EQ(lhs.attributes.get_ints("strides")->size(), 2u);
  absl::StatusOr<RuleSet> bad =
      parse_rules("rule r: (Conv{stride=2} ?x ?w) => ?x\n", "b.rules", lang, conditions);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(message(bad.status())), "b.rules:1:10: Conv has no attribute 'stride'");
  bad =
      parse_rules("rule r: (Transpose{perm=?p, perm2=?q} ?x) => ?x\n", "b.rules", lang, conditions);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(message(bad.status())).find("Transpose has no attribute 'perm2'"),
            std::string::npos);
}

TEST(TensorRules, ConvReluFusionEndToEnd) {
  GraphBuilder b("convs");
  Value x = b.input("x", {1, 3, 16, 16});
  Value h = b.relu(b.conv2d("c1", x, {.out_channels = 8}));
  h = b.relu(b.conv2d("c2", h, {.out_channels = 8, .stride = {2, 2}}));
  h = b.conv2d("c3", h, {.out_channels = 4, .kernel = {1, 1}, .group = 2});  // no relu: stays as is
  b.output(b.relu(b.add(h, h)), "y");                                        // not after a conv
  Graph g = *b.build();

  TensorLanguage lang;
  TensorAnalysis shapes;
  EGraph egraph(lang, &shapes);
  std::vector<Id> ids = *add_graph(egraph, g);
  ConditionRegistry conditions;
  absl::StatusOr<RuleSet> rules = parse_rules(kFusion, "fusion.rules", lang, conditions);
  ASSERT_TRUE(rules.ok()) << message(rules.status());
  RunReport report = Runner().with_iteration_limit(5).run(egraph, *rules);
  EXPECT_EQ(report.stop_reason, StopReason::kSaturated);
  EXPECT_TRUE(egraph.check_invariants().ok());

  Id root = ids[g.outputs[0].node];
  OpCountCostModel opcount;
  ExtractionProblem p = problem_from_egraph(egraph, std::span<const Id>(&root, 1),
                                            egraph_cost_function(opcount, egraph, shapes));
  ExtractionResult r = IlpExtractor().extract(p);
  std::vector<ClassOutput> outputs{{root, "y"}};
  absl::StatusOr<Graph> fused =
      graph_from_egraph(egraph, g, outputs, chosen_enodes(egraph, p, r.selection));
  ASSERT_TRUE(fused.ok()) << message(fused.status());
  EXPECT_EQ(total_ops(g), 7);       // Conv Relu Conv Relu Conv Add Relu
  EXPECT_EQ(total_ops(*fused), 5);  // two relus fused
  EXPECT_EQ(op_counts(*fused)[Op::kRelu], 1);
  Inputs in = random_inputs(g, 3);
  EXPECT_LE(max_error_ratio((*evaluate(*fused, in))[0], (*evaluate(g, in))[0], 1e-5, 1e-6), 1.0);
}

// A convolution merged from several (a Split of its output feeding each
// former reader through its own Relu) gets its activation back: split-relu
// moves the Relus in front of the Split, where fuse-conv-relu takes them.
TEST(TensorRules, MergedConvolutionKeepsItsActivationFused) {
  GraphBuilder b("merged");
  Value x = b.input("x", {1, 4, 8, 8});
  Value h = b.conv2d("c", x, {.out_channels = 8, .kernel = {1, 1}});
  std::vector<Value> parts = b.split(h, 1, {3, 5});
  b.output(b.relu(parts[0]), "a");
  b.output(b.relu(parts[1]), "b");
  Graph g = *b.build();

  TensorLanguage lang;
  ConditionRegistry conditions = tensor_conditions();
  RuleSet rules = *load_tensor_rules(lang, conditions);
  TensorAnalysis shapes;
  EGraph egraph(lang, &shapes);
  std::vector<Id> ids = *add_graph(egraph, g);
  Runner().with_iteration_limit(4).with_node_limit(20'000).run(egraph, rules);
  EXPECT_TRUE(egraph.check_invariants().ok());

  std::vector<Id> roots{ids[g.outputs[0].node], ids[g.outputs[1].node]};
  OpCountCostModel opcount;
  ExtractionProblem p =
      problem_from_egraph(egraph, roots, egraph_cost_function(opcount, egraph, shapes));
  ExtractionResult r = IlpExtractor().extract(p);
  std::vector<ClassOutput> outputs{{roots[0], "a"}, {roots[1], "b"}};
  absl::StatusOr<Graph> fused =
      graph_from_egraph(egraph, g, outputs, chosen_enodes(egraph, p, r.selection));
  ASSERT_TRUE(fused.ok()) << message(fused.status());
  EXPECT_EQ(op_counts(*fused)[Op::kRelu], 0);
  EXPECT_EQ(op_counts(*fused)[Op::kConv], 1);
  EXPECT_EQ(op_counts(*fused)[Op::kSplit], 1);
  Inputs in = random_inputs(g, 5);
  std::vector<Tensor> want = *evaluate(g, in), got = *evaluate(*fused, in);
  ASSERT_EQ(got.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_LE(max_error_ratio(got[i], want[i], 1e-5, 1e-6), 1.0);
}

TEST(TensorRules, EveryShippedRuleVerifies) {
  TensorLanguage lang;
  ConditionRegistry conditions = tensor_conditions();
  absl::StatusOr<RuleSet> rules = load_tensor_rules(lang, conditions);
  ASSERT_TRUE(rules.ok()) << message(rules.status());
  EXPECT_GE(rules->size(), 100u);
  for (const Rule& rule : rules->rules()) {
    RuleVerdict v = verify_rule(rule, lang);
    EXPECT_EQ(v.outcome, VerifyOutcome::kVerified) << rule.name << ": " << v.detail;
    EXPECT_GE(v.draws, 1) << rule.name;
  }
}

TEST(TensorRules, WrongRulesAreRejectedWithCounterexamples) {
  TensorLanguage lang;
  ConditionRegistry conditions = tensor_conditions();
  // wrong_quantization.rules: a zero point moved into int16 (saturating
  // elsewhere) and one moved on one side only, checked on integer draws.
  for (const char* file : {SATURN_TEST_DATA "/wrong.rules", SATURN_TEST_DATA "/wrong_quantization.rules"}) {
    absl::StatusOr<RuleSet> rules = load_rules(file, lang, conditions);
    ASSERT_TRUE(rules.ok()) << message(rules.status());
    ASSERT_GE(rules->size(), 2u);
    for (const Rule& rule : rules->rules()) {
      RuleVerdict v = verify_rule(rule, lang);
      EXPECT_EQ(v.outcome, VerifyOutcome::kFailed) << rule.name << ": " << v.detail;
      EXPECT_NE(v.detail.find("with ?"), std::string::npos) << rule.name << ": " << v.detail;
      EXPECT_NE(v.detail.find("differs"), std::string::npos) << rule.name << ": " << v.detail;
    }
  }
}

// TENSAT's two concat-of-convolutions rules hold only for kernels with equal
// output channels; the verifier's varied draws find that on every seed.
TEST(TensorRules, VerifierFindsShapeCounterexamplesOnEverySeed) {
  TensorLanguage lang;
  ConditionRegistry conditions = tensor_conditions();
  absl::StatusOr<RuleSet> rules =
      load_rules(SATURN_TEST_DATA "/tensat_concat_conv.rules", lang, conditions);
  ASSERT_TRUE(rules.ok()) << message(rules.status());
  ASSERT_EQ(rules->size(), 2u);
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    for (const Rule& rule : rules->rules()) {
      RuleVerdict v = verify_rule(rule, lang, VerifyOptions{.seed = seed});
      EXPECT_EQ(v.outcome, VerifyOutcome::kFailed) << rule.name << " seed " << seed;
    }
  }
}

// A bias that broadcasts over a product's columns is not one the merged
// linear layer can concatenate: the shipped merges ask for matching sizes.
TEST(TensorRules, LinearMergesRefuseBroadcastBiases) {
  TensorLanguage lang;
  ConditionRegistry conditions = tensor_conditions();
  absl::StatusOr<RuleSet> rules = parse_rules(
      "rule unguarded: (Add ?p (MatMul ?a ?b)), (Add ?q (MatMul ?a ?c))\n"
      "  => (TupleGet{index=0} (Split{axis=-1, split=(last-dims ?b ?c)} (Add (MatMul ?a "
      "(Concat{axis=-1} ?b ?c)) (Concat{axis=0} ?p ?q)))),\n"
      "     (TupleGet{index=1} (Split{axis=-1, split=(last-dims ?b ?c)} (Add (MatMul ?a "
      "(Concat{axis=-1} ?b ?c)) (Concat{axis=0} ?p ?q))))\n"
      "  if (is-weight ?b) (is-weight ?c) (rank-1 ?p) (rank-1 ?q) (distinct ?b ?c)\n",
      "unguarded.rules", lang, conditions);
  ASSERT_TRUE(rules.ok()) << message(rules.status());
  EXPECT_EQ(verify_rule((*rules)[0], lang).outcome, VerifyOutcome::kFailed);
}

TEST(TensorRules, ZooModelsSaturateUnderABudget) {
  TensorLanguage lang;
  ConditionRegistry conditions = tensor_conditions();
  RuleSet rules = *load_tensor_rules(lang, conditions);
  for (const ZooModel& model : zoo_models()) {
    Graph g = *model.build();
    TensorAnalysis shapes;
    EGraph egraph(lang, &shapes);
    ASSERT_TRUE(add_graph(egraph, g).ok()) << model.name;
    RunReport report = Runner()
                           .with_node_limit(50'000)
                           .with_iteration_limit(8)
                           .with_time_limit(std::chrono::seconds(20))
                           .run(egraph, rules);
    EXPECT_LE(egraph.num_nodes(), 50'000u) << model.name;
    EXPECT_TRUE(egraph.check_invariants().ok()) << model.name;
    std::size_t matched = 0;
    for (const RuleStats& stats : report.rules) matched += stats.matches > 0 ? 1 : 0;
    EXPECT_GE(matched, 3u) << model.name;
    std::printf("%-14s %6zu e-nodes  %3zu rules matched  stop: %s\n",
                std::string(model.name).c_str(), egraph.num_nodes(), matched,
                std::string(to_string(report.stop_reason)).c_str());
  }
}

}  // namespace
}  // namespace saturn::tensor

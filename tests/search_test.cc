// The four strategies and optimize(): budgets are never exceeded (a graph
// too large for one is cut smaller), a seed and thread count fix the result,
// every strategy's graph computes what the input graph computes, MCTS stops
// at saturation's fixpoint, and the input is kept where the result gains too
// little. The environment itself: environment_test.cc.
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "saturn/optimize/optimize.h"
#include "saturn/optimize/optimize_internal.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn {
namespace {

using tensor::Graph;
using tensor::GraphBuilder;
using tensor::Value;
using tensor::ValueType;

// Settings small enough for a test: few simulations and steps, a short ILP.
OptimizeOptions quick_options(Strategy strategy, std::size_t nodes) {
  OptimizeOptions o;
  o.search.strategy = strategy;
  o.search.threads = 2;
  o.search.seed = 3;
  o.search.mcts.simulations = 24;
  o.search.mcts.max_steps = 6;
  o.search.mcts.rollout_depth = 3;
  o.search.taso.max_popped = 8;
  o.budget.max_nodes = nodes;
  o.budget.time_limit_seconds = 60;
  o.seconds_per_op = 0;  // the time limit alone: no result depends on the clock
  o.ilp_seconds = 2;
  o.cost_model = std::make_shared<OpCountCostModel>();
  o.self_check = false;  // the tests that keep outputs check them themselves
  return o;
}

class SearchTest : public ::testing::TestWithParam<Strategy> {};

// A zoo model's outputs on seeded inputs, evaluated once for all the
// strategies (BERT takes seconds in the interpreter).
const absl::StatusOr<std::vector<tensor::Tensor>>& zoo_outputs(const std::string& name,
                                                               const Graph& g,
                                                               const tensor::Inputs& inputs) {
  static std::map<std::string, absl::StatusOr<std::vector<tensor::Tensor>>> outputs;
  auto it = outputs.find(name);
  if (it == outputs.end()) it = outputs.emplace(name, tensor::evaluate(g, inputs)).first;
  return it->second;
}

TEST_P(SearchTest, StaysInTheNodeBudgetAndKeepsTheOutputs) {
  for (const char* name : {"squeezenet", "nasrnn", "bert"}) {
    Graph g = *tensor::build_zoo_model(name);
    const std::size_t budget = 1200;
    absl::StatusOr<OptimizeResult> r = optimize(g, quick_options(GetParam(), budget));
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    EXPECT_LE(r->stats.peak_nodes, budget) << name;
    EXPECT_GT(r->stats.peak_nodes, 0u) << name;
    EXPECT_LE(r->cost_after, r->cost_before) << name;

    tensor::Inputs inputs = tensor::random_inputs(g, 11);
    const absl::StatusOr<std::vector<tensor::Tensor>>& before = zoo_outputs(name, g, inputs);
    absl::StatusOr<std::vector<tensor::Tensor>> after = tensor::evaluate(r->graph, inputs);
    ASSERT_TRUE(before.ok() && after.ok()) << name;
    ASSERT_EQ(before->size(), after->size());
    for (std::size_t i = 0; i < before->size(); ++i)
      EXPECT_LE(tensor::max_error_ratio((*after)[i], (*before)[i], 1e-3, 1e-4), 1.0)
          << name << " output " << i;
  }
}

TEST_P(SearchTest, StaysInTheByteBudget) {
  for (const char* name : {"squeezenet", "bert"}) {
    Graph g = *tensor::build_zoo_model(name);
    OptimizeOptions o = quick_options(GetParam(), 1'000'000);
    o.budget.max_bytes = 300'000;
    o.search.mcts.max_steps = 30;  // enough steps to reach the cap
    o.regions.target_ops = 0;      // one e-graph under the whole budget
    absl::StatusOr<OptimizeResult> r = optimize(g, o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_LE(r->stats.peak_bytes, o.budget.max_bytes) << name;
  }
}

// The byte budget is a hard cap for every zoo model, whatever grows (the
// e-graph's nodes, attribute sets, analysis data joined by merges): a model
// that does not fit is kept unsearched, and the search (greedy, which fills
// the budget fastest; the cap is the environment's, shared by every
// strategy) never passes it.
TEST(Search, EveryZooModelStaysInTheByteBudget) {
  for (const tensor::ZooModel& model : tensor::zoo_models()) {
    Graph g = *model.build();
    for (std::size_t bytes : {300'000, 1'000'000, 3'000'000}) {
      OptimizeOptions o = quick_options(Strategy::kGreedy, 1'000'000);
      o.budget.max_bytes = bytes;
      o.regions.target_ops = 0;
      o.ilp_seconds = 0;
      absl::StatusOr<OptimizeResult> r = optimize(g, o);
      ASSERT_TRUE(r.ok()) << model.name << " at " << bytes << ": " << r.status();
      if (!r->not_searched.empty()) {
        EXPECT_NE(r->not_searched.find("does not fit the search budget"), std::string::npos)
            << model.name << " at " << bytes << ": " << r->not_searched;
        EXPECT_TRUE(r->kept_input());
        continue;
      }
      EXPECT_LE(r->stats.peak_bytes, bytes) << model.name;
    }
  }
}

TEST_P(SearchTest, SameSeedAndThreadsGiveTheSameResult) {
  Graph g = *tensor::build_zoo_model("nasrnn");
  OptimizeOptions o = quick_options(GetParam(), 1500);
  o.ilp_seconds = 0;  // the greedy extraction is deterministic; CBC's timing is not
  absl::StatusOr<OptimizeResult> a = optimize(g, o);
  absl::StatusOr<OptimizeResult> b = optimize(g, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->cost_after, b->cost_after);
  EXPECT_EQ(a->stats.rule_applications, b->stats.rule_applications);
  EXPECT_EQ(a->stats.peak_nodes, b->stats.peak_nodes);
  EXPECT_EQ(tensor::op_counts(a->graph), tensor::op_counts(b->graph));
}

// Not even one operator fits in 2 e-nodes: the graph is cut down to single
// operators, each kept, and the result says why.
TEST_P(SearchTest, ABudgetTooSmallForAnyOperatorKeepsTheInputAndSaysWhy) {
  Graph g = *tensor::build_zoo_model("squeezenet");
  OptimizeOptions o = quick_options(GetParam(), 2);
  o.regions.target_ops = 0;
  absl::StatusOr<OptimizeResult> r = optimize(g, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->kept_input());
  EXPECT_EQ(r->cost_after, r->cost_before);
  EXPECT_GT(r->cost_before, 0);
  EXPECT_EQ(tensor::op_counts(r->graph), tensor::op_counts(g));
  EXPECT_NE(r->not_searched.find("does not fit the search budget (2 e-nodes"),
            std::string::npos)
      << r->not_searched;
}

// A budget limits the work and never refuses a model: a graph (or a region)
// too large for its search is cut in two, again and again, and every part
// is searched.
TEST_P(SearchTest, AGraphTooLargeForTheBudgetIsCutSmallerAndSearched) {
  Graph g = *tensor::build_zoo_model("squeezenet");
  OptimizeOptions o = quick_options(GetParam(), 40);
  o.regions.target_ops = 0;
  absl::StatusOr<OptimizeResult> r = optimize(g, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->not_searched, "");
  EXPECT_GT(r->regions, 1u);
  EXPECT_LE(r->stats.peak_nodes, 40u);
  EXPECT_LT(r->cost_found, r->cost_before) << "the parts are searched";
  const tensor::Inputs inputs = tensor::random_inputs(g, 2);
  absl::StatusOr<std::vector<tensor::Tensor>> want = tensor::evaluate(g, inputs);
  absl::StatusOr<std::vector<tensor::Tensor>> got = tensor::evaluate(r->graph, inputs);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_LE(tensor::max_error_ratio((*got)[0], (*want)[0], 1e-3, 1e-4), 1.0);
}

// The same in a graph cut into regions: a region that does not fit is cut
// smaller, and the byte budget's share of each search is never exceeded.
TEST(Search, ARegionTooLargeForTheBudgetIsCutSmallerAndSearched) {
  Graph g = *tensor::build_zoo_model("squeezenet");
  OptimizeOptions o = quick_options(Strategy::kGreedy, 1'000'000);
  o.regions = {.target_ops = 16, .max_ops = 40};
  o.budget.max_bytes = 60'000;
  absl::StatusOr<OptimizeResult> r = optimize(g, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GT(r->regions, 1u);
  EXPECT_EQ(r->not_searched, "");
  // Two threads, each search kRegionTrees e-graphs: a quarter each.
  EXPECT_LE(r->stats.peak_bytes, 60'000u / 4);
  EXPECT_LT(r->cost_found, r->cost_before) << "the parts are searched";
}

// `blocks` residual MLP blocks of one structure: x + fc2(relu(fc1(x))).
Graph residual_blocks(int blocks) {
  GraphBuilder b("blocks");
  Value x = b.input("x", {8, 32});
  for (int i = 0; i < blocks; ++i) {
    const std::string name = fmt::format("block{}", i);
    Value h = b.relu(b.linear(name + ".fc1", x, 32));
    x = b.add(x, b.linear(name + ".fc2", h, 32));
  }
  b.output(x, "y");
  return *b.build();
}

void expect_same_graph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.size(), b.size());
  for (int i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a.nodes[i].op, b.nodes[i].op) << "node " << i;
    EXPECT_EQ(a.nodes[i].inputs, b.nodes[i].inputs) << "node " << i;
    EXPECT_EQ(a.nodes[i].attributes, b.nodes[i].attributes) << "node " << i;
  }
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (std::size_t i = 0; i < a.outputs.size(); ++i)
    EXPECT_EQ(a.outputs[i].node, b.outputs[i].node);
}

TEST_P(SearchTest, RegionsKeepTheOutputsAndSearchEachStructureOnce) {
  const Graph g = residual_blocks(6);
  OptimizeOptions o = quick_options(GetParam(), 1200);
  o.regions = {.target_ops = 6, .max_ops = 10};
  absl::StatusOr<OptimizeResult> r = optimize(g, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->regions, 6u);
  ASSERT_EQ(r->region_summaries.size(), 1u);
  EXPECT_EQ(r->region_summaries[0].copies, 6);
  EXPECT_EQ(r->region_cache_hits(), 5u);
  EXPECT_LE(r->cost_after, r->cost_before);
  const tensor::Inputs inputs = tensor::random_inputs(g, 4);
  absl::StatusOr<std::vector<tensor::Tensor>> before = tensor::evaluate(g, inputs);
  absl::StatusOr<std::vector<tensor::Tensor>> after = tensor::evaluate(r->graph, inputs);
  ASSERT_TRUE(before.ok() && after.ok());
  ASSERT_EQ(before->size(), after->size());
  EXPECT_LE(tensor::max_error_ratio((*after)[0], (*before)[0], 1e-3, 1e-4), 1.0);
}

TEST_P(SearchTest, RegionResultsDoNotDependOnTheThreadCount) {
  const Graph g = *tensor::build_zoo_model("llama:3");
  OptimizeOptions o = quick_options(GetParam(), 1200);
  o.regions = {.target_ops = 20, .max_ops = 50};
  o.ilp_seconds = 0;  // CBC's timing is not deterministic
  o.search.threads = 1;
  absl::StatusOr<OptimizeResult> one = optimize(g, o);
  o.search.threads = 2;
  absl::StatusOr<OptimizeResult> two = optimize(g, o);
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_GT(one->regions, 2u);
  EXPECT_EQ(one->cost_after, two->cost_after);
  expect_same_graph(one->graph, two->graph);
}

INSTANTIATE_TEST_SUITE_P(Strategies, SearchTest, ::testing::ValuesIn(kAllStrategies),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(Search, MctsFindsWhatGreedyFindsOnSqueezeNet) {
  Graph g = *tensor::build_zoo_model("squeezenet");
  OptimizeOptions o = quick_options(Strategy::kMcts, 2000);
  absl::StatusOr<OptimizeResult> mcts = optimize(g, o);
  o.search.strategy = Strategy::kGreedy;
  absl::StatusOr<OptimizeResult> greedy = optimize(g, o);
  ASSERT_TRUE(mcts.ok() && greedy.ok());
  EXPECT_LT(mcts->cost_after, mcts->cost_before);
  EXPECT_LE(mcts->cost_after, greedy->cost_after);
  EXPECT_GT(mcts->stats.simulations, 0u);
  EXPECT_FALSE(mcts->rules_applied.empty());
}

// Where greedy saturation reaches a fixpoint inside the budget, its e-graph
// holds every graph the rules reach: MCTS takes it and runs no simulation.
TEST(Search, MctsStopsWhereSaturationReachesAFixpoint) {
  GraphBuilder b("small");
  Value x = b.input("x", {4, 8});
  Value y = b.input("y", {4, 8});
  b.output(b.relu(b.add(x, y)), "z");
  const Graph g = *b.build();
  absl::StatusOr<OptimizeResult> r = optimize(g, quick_options(Strategy::kMcts, 2000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stats.stop_reason, StopReason::kSaturated);
  EXPECT_TRUE(r->stats.saturation_taken);
  EXPECT_EQ(r->stats.simulations, 0u);
  EXPECT_LT(r->stats.peak_nodes, 2000u);
}

// A result replaces the input only when it is cheaper by the minimum gain;
// otherwise the input comes back and the better graph's cost is reported.
TEST(Search, GainsBelowTheMinimumKeepTheInput) {
  Graph g = *tensor::build_zoo_model("squeezenet");
  OptimizeOptions o = quick_options(Strategy::kGreedy, 2000);
  absl::StatusOr<OptimizeResult> taken = optimize(g, o);
  ASSERT_TRUE(taken.ok()) << taken.status();
  ASSERT_FALSE(taken->kept_input());
  const double gain = 1 - taken->cost_after / taken->cost_before;
  ASSERT_GT(gain, 0.01);
  EXPECT_EQ(taken->cost_found, taken->cost_after);

  o.min_gain = gain * 0.99;
  absl::StatusOr<OptimizeResult> still = optimize(g, o);
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_FALSE(still->kept_input());
  EXPECT_EQ(still->cost_after, taken->cost_after);

  o.min_gain = gain * 1.01;
  absl::StatusOr<OptimizeResult> kept = optimize(g, o);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(kept->kept_input());
  EXPECT_EQ(kept->cost_after, kept->cost_before);
  // The decision names the gate and its evidence: the predicted gain
  // passed, then refused (squeezenet has no symbolic sizes, and a zoo
  // model is not timed).
  ASSERT_NE(taken->decision.deciding(), nullptr);
  EXPECT_EQ(taken->decision.verdicts.front().gate, Gate::kPredictedGain);
  EXPECT_TRUE(taken->decision.verdicts.front().passed);
  const Verdict* refused = kept->decision.deciding();
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->gate, Gate::kPredictedGain);
  EXPECT_FALSE(refused->passed);
  EXPECT_NE(refused->evidence.find("needed"), std::string::npos) << refused->evidence;
  EXPECT_TRUE(kept->decision.summary().starts_with("kept the input (predicted gain: "))
      << kept->decision.summary();
  EXPECT_EQ(kept->cost_found, taken->cost_after);
  EXPECT_EQ(tensor::op_counts(kept->graph), tensor::op_counts(g));

  o.min_gain = 1;
  absl::StatusOr<OptimizeResult> bad = optimize(g, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("minimum gain"), std::string::npos) << bad.status();
}

// Three products of x merge into one over [w0 w1 w2], but a sum still reads
// w0 alone: merging holds w0 twice. Where the weights fit in the cache that
// is free and the merge pays (launches saved); on a device with a tiny cache
// the extra bytes are streamed every time and the merge must be refused.
Graph held_weights_graph() {
  GraphBuilder b("held");
  Value x = b.input("x", {1, 256});
  Value h = b.input("h", {256, 256});
  std::vector<Value> w;
  for (int i = 0; i < 3; ++i) w.push_back(b.weight(fmt::format("w{}", i), {256, 256}));
  for (int i = 0; i < 3; ++i) b.output(b.matmul(x, w[i]), fmt::format("y{}", i));
  b.output(b.add(h, w[0]), "z");
  return *b.build();
}

std::shared_ptr<const CostModel> slow_launches(double cache_mb) {
  return std::make_shared<RooflineCostModel>(DeviceProfile{.name = "slow launches",
                                                           .peak_gflops = 100,
                                                           .bandwidth_gbs = 1,
                                                           .launch_overhead_us = 60,
                                                           .cache_mb = cache_mb});
}

TEST(Search, MergesThatOutgrowTheCacheAreRefused) {
  const Graph g = held_weights_graph();
  auto optimized_with_cache = [&](double cache_mb) {
    OptimizeOptions o = quick_options(Strategy::kGreedy, 2000);
    o.cost_model = slow_launches(cache_mb);
    absl::StatusOr<OptimizeResult> r = optimize(g, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return *r;
  };
  const std::int64_t weights = 3 * 256 * 256 * 4;
  OptimizeResult roomy = optimized_with_cache(100);
  EXPECT_EQ(roomy.weight_bytes_before, weights);
  EXPECT_GT(roomy.weight_bytes_after, weights);  // the merged copy and w0
  EXPECT_EQ(roomy.weight_spill, 0.0);
  EXPECT_LT(roomy.cost_after, roomy.cost_before);

  OptimizeResult tight = optimized_with_cache(0.1);
  EXPECT_LE(tight.weight_bytes_after, weights);
  EXPECT_EQ(tight.weight_spill, 0.0);
  EXPECT_LE(tight.cost_after, tight.cost_before);
  absl::StatusOr<std::vector<ValueType>> types = tensor::infer_types(tight.graph);
  ASSERT_TRUE(types.ok());
  EXPECT_EQ(tensor::resident_weight_bytes(tight.graph, *types), tight.weight_bytes_after);
}

// The search itself sees the charge: the step that merges the products is
// rewarded where the weights fit and penalized where they do not.
TEST(Search, RewardsChargeWeightsBeyondTheCache) {
  const Graph g = held_weights_graph();
  tensor::TensorLanguage language;
  ConditionRegistry conditions = tensor_conditions();
  RuleSet rules = *load_tensor_rules(language, conditions);
  auto best_step = [&](double cache_mb) {
    std::shared_ptr<const CostModel> model = slow_launches(cache_mb);
    std::unique_ptr<Environment> env = *Environment::create(
        {.graph = &g, .rules = &rules, .cost_model = model.get(), .budget = {.max_nodes = 2000}});
    std::pair<double, double> best{-1e300, 0};  // reward, cost after
    for (std::size_t action : env->legal_actions()) {
      if (action == env->stop_action()) continue;
      env->checkpoint();
      const double reward = env->step(action).reward;
      if (reward > best.first) best = {reward, env->cost()};
      env->restore();
    }
    return best;
  };
  const auto [roomy_reward, roomy_cost] = best_step(100);
  EXPECT_GT(roomy_reward, 0);
  const auto [tight_reward, tight_cost] = best_step(0.1);
  EXPECT_LE(tight_reward, 0);
  EXPECT_GT(tight_cost, roomy_cost);
}

TEST(Search, UnknownRuleFileIsAnError) {
  Graph g = *tensor::build_zoo_model("squeezenet");
  OptimizeOptions o = quick_options(Strategy::kGreedy, 2000);
  o.rule_files = {"/nonexistent/x.rules"};
  absl::StatusOr<OptimizeResult> r = optimize(g, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/x.rules"), std::string::npos);
}

TEST(Search, UnsoundRuleFileIsRefusedUnlessAllowed) {
  // A user's rules are verified before the search; wrong.rules' first rule
  // (line 5) is unsound.
  Graph g = *tensor::build_zoo_model("squeezenet");
  OptimizeOptions o = quick_options(Strategy::kGreedy, 2000);
  o.rule_files = {SATURN_TEST_DATA "/wrong.rules"};
  o.rule_cache_dir = "";
  absl::StatusOr<OptimizeResult> r = optimize(g, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(message(r.status()).find("wrong.rules:5: rule 'wrong-transpose-perm' is unsound"),
            std::string::npos)
      << message(r.status());
  o.unverified_rules = true;
  r = optimize(g, o);
  ASSERT_TRUE(r.ok()) << message(r.status());
  EXPECT_EQ(r->rule_check.verified, 0);
  EXPECT_EQ(r->rule_check.unverified.size(), 8u);  // every rule of the file
}

// A wrong rule let in unverified changes the outputs: the self-check
// refuses the result and names the rule; without the check it is returned.
TEST(Search, SelfCheckRefusesAResultThatComputesSomethingElse) {
  const std::string file = ::testing::TempDir() + "/drop_relu.rules";
  ASSERT_TRUE(write_text_file(file, "rule drop-relu: (Relu ?x) => ?x\n").ok());
  Graph g = *tensor::build_zoo_model("squeezenet");
  OptimizeOptions o = quick_options(Strategy::kGreedy, 2000);
  o.rule_files = {file};
  o.unverified_rules = true;
  o.self_check = true;
  absl::StatusOr<OptimizeResult> r = optimize(g, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(message(r.status()).find("does not compute what its input computes"), std::string::npos)
      << message(r.status());
  EXPECT_NE(message(r.status()).find("drop-relu (26)"), std::string::npos) << message(r.status());
  o.self_check = false;
  r = optimize(g, o);
  ASSERT_TRUE(r.ok()) << message(r.status());
  EXPECT_EQ(r->self_check, "off");
  EXPECT_EQ(tensor::op_counts(r->graph).count(tensor::Op::kRelu), 0u);

  // The shipped rules pass it, and the result says what was checked.
  o.rule_files.clear();
  o.self_check = true;
  r = optimize(g, o);
  ASSERT_TRUE(r.ok()) << message(r.status());
  EXPECT_EQ(r->self_check, "1 output of 'squeezenet' matched in the interpreter");
}

// A rule with no dtype condition holds for the floating-point values the
// verifier checks it at; integer arithmetic differs (Div truncates), so
// such a rule rewrites a float graph and leaves the same graph in int64 as
// it came: x / c * c is x for real numbers, not for integers.
TEST(Search, ARuleWithoutADTypeConditionRewritesFloatValuesOnly) {
  const std::string file = ::testing::TempDir() + "/divide_multiply.rules";
  ASSERT_TRUE(write_text_file(file, "rule divide-multiply: (Mul (Div ?x ?c) ?c) => ?x\n").ok());
  for (const tensor::DType dtype : {tensor::DType::kFloat32, tensor::DType::kInt64}) {
    GraphBuilder b("divide_multiply");
    Value x = b.input("x", {4, 8}, dtype);
    Value c = b.input("c", {4, 8}, dtype);
    b.output(b.mul(b.div(x, c), c), "y");
    absl::StatusOr<Graph> g = b.build();
    ASSERT_TRUE(g.ok()) << message(g.status());
    OptimizeOptions o = quick_options(Strategy::kGreedy, 2000);
    o.rule_files = {file};
    o.unverified_rules = true;
    absl::StatusOr<OptimizeResult> r = optimize(*g, o);
    ASSERT_TRUE(r.ok()) << message(r.status());
    const bool floats = dtype == tensor::DType::kFloat32;
    EXPECT_EQ(r->kept_input(), !floats) << tensor::dtype_name(dtype);
    EXPECT_EQ(tensor::op_counts(r->graph).count(tensor::Op::kDiv), floats ? 0u : 1u);
  }
}

// Regions whose results do not hold together at other sizes: each result
// with a gain is tried largest gain first, and kept only where the graph
// with it and those kept before still holds; a result without a gain is
// never tried.
TEST(RegionResults, ThoseThatHoldAtOtherSizesAreTakenLargestGainFirst) {
  const std::vector<double> gains = {1.0, 0.0, 5.0, 3.0};
  std::vector<std::size_t> tried;
  // Result 2 holds only at the given size; 0 and 3 hold, but not together.
  std::vector<char> taken = take_while_holding(gains, [&](const std::vector<char>& with,
                                                          std::size_t s) {
    tried.push_back(s);
    return !with[2] && !(with[0] && with[3]);
  });
  EXPECT_EQ(tried, (std::vector<std::size_t>{2, 3, 0}));
  EXPECT_EQ(taken, (std::vector<char>{0, 0, 0, 1}));
}

}  // namespace
}  // namespace saturn

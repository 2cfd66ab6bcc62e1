// The ONNX fixtures optimized: each imports, optimizes with every strategy,
// exports (the checker runs) and computes what the original computes; the
// BERT fixture's LayerNorms and GELUs are fused; `saturn verify` tells a
// changed weight; an input's default survives the optimization.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <sys/wait.h>

#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "saturn/costmodel/cost_model.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "saturn/optimize/optimize.h"
#include "saturn/search/search.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/onnx/onnx.h"
#include "saturn/tests/onnx_models.h"

namespace saturn::tensor {
namespace {

namespace fs = std::filesystem;

TEST(OnnxOptimize, AnInputDefaultSurvivesTheOptimization) {
  onnx::ModelProto m = add_with_default_model();
  absl::StatusOr<Graph> graph = parse_onnx_model(bytes_of(m), "defaults.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  OptimizeOptions options;
  options.search.strategy = Strategy::kGreedy;
  options.ilp_seconds = 0;
  absl::StatusOr<OptimizeResult> r = optimize(*graph, options);
  ASSERT_TRUE(r.ok()) << r.status();
  auto it = r->graph.input_defaults.find("b");
  ASSERT_NE(it, r->graph.input_defaults.end());
  EXPECT_EQ(std::vector<float>(it->second->floats().begin(), it->second->floats().end()),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

// `saturn verify` in onnxruntime: a model matches itself, and a model with
// one weight changed is reported as a mismatch with a non-zero exit.
TEST(OnnxRuntime, VerifyDetectsAChangedWeight) {
  absl::StatusOr<Graph> g = load_onnx_model(std::string(SATURN_FIXTURES) + "/squeezenet1_1.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  const fs::path dir = fs::temp_directory_path() / "saturn-onnx-test-verify";
  fs::create_directories(dir);
  const std::string good = (dir / "good.onnx").string(), bad = (dir / "bad.onnx").string();
  ASSERT_TRUE(save_onnx_model(*g, good).ok());
  // Change the last convolution's kernel.
  std::string changed;
  for (const Node& n : g->nodes) {
    if (n.op == Op::kWeight && n.attributes.get_ints("shape")->size() == 4)
      changed = *n.attributes.get_string("name");
  }
  ASSERT_FALSE(changed.empty());
  absl::StatusOr<Tensor> w =
      materialize_weight(*g, *std::find_if(g->nodes.begin(), g->nodes.end(), [&](const Node& n) {
        return n.op == Op::kWeight && *n.attributes.get_string("name") == changed;
      }));
  ASSERT_TRUE(w.ok());
  g->weights[changed] =
      WeightInit{std::make_shared<const Tensor>(random_tensor(w->type(), /*seed=*/99, 0.5f, 1.0f))};
  ASSERT_TRUE(save_onnx_model(*g, bad).ok());
  auto run = [&](const std::string& a, const std::string& b) {
    const std::string log = (dir / "log.txt").string();
    const std::string cmd =
        fmt::format("'{}' verify '{}' '{}' --runs 1 --warmup 0 > '{}' 2>&1", SATURN_CLI, a, b, log);
    const int status = std::system(cmd.c_str());
    return std::pair{WIFEXITED(status) ? WEXITSTATUS(status) : -1, *read_text_file(log)};
  };
  auto [same_code, same_text] = run(good, good);
  EXPECT_EQ(same_code, 0) << same_text;
  EXPECT_NE(same_text.find("outputs match"), std::string::npos) << same_text;
  auto [bad_code, bad_text] = run(good, bad);
  EXPECT_EQ(bad_code, 1) << bad_text;
  EXPECT_NE(bad_text.find("MISMATCH"), std::string::npos) << bad_text;
  fs::remove_all(dir);
}

// Each fixture: import, optimize with every strategy, export (the checker
// runs), import again, and compute what the original computes.
class Fixtures : public ::testing::TestWithParam<std::string> {};

TEST_P(Fixtures, OptimizeWithEveryStrategyExportAndEvaluate) {
  const std::string path = fmt::format("{}/{}.onnx", SATURN_FIXTURES, GetParam());
  absl::StatusOr<Graph> g = load_onnx_model(path);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(op_counts(*g).count(Op::kOpaque), 0u) << "every fixture operator maps to the IR";
  Inputs inputs = random_inputs(*g, 7);
  absl::StatusOr<std::vector<Tensor>> want = evaluate(*g, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  for (Strategy strategy : kAllStrategies) {
    SCOPED_TRACE(std::string(to_string(strategy)));
    OptimizeOptions options;
    options.search.strategy = strategy;
    options.search.threads = 1;
    // What is tested is that each strategy's rewrites import, export and
    // compute the same, not how far a search gets: short searches.
    options.search.mcts.simulations = 32;
    options.search.mcts.max_steps = 8;
    options.search.taso.max_popped = 16;
    options.budget.max_nodes = 3000;
    options.budget.time_limit_seconds = 10;
    options.ilp_seconds = 0.25;  // per region: CBC's warm start is the greedy extraction
    options.self_check = false;  // this test runs both graphs itself, below
    options.measure = false;     // the search's graph is what is tested
    absl::StatusOr<OptimizeResult> r = optimize(*g, options);
    ASSERT_TRUE(r.ok()) << r.status();
    absl::StatusOr<std::string> bytes = to_onnx_model(r->graph);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ASSERT_TRUE(check_onnx_model(*bytes, path).ok());
    absl::StatusOr<Graph> back = parse_onnx_model(*bytes, path + " (optimized)");
    ASSERT_TRUE(back.ok()) << back.status();
    // The original opsets, and onnxruntime's domain for its fused operators.
    Opsets opsets = g->opsets;
    bool runtime = false;
    for (const Node& n : back->nodes) runtime = runtime || is_runtime_operator(n.op);
    if (runtime) opsets.emplace_back("com.microsoft", 1);
    EXPECT_EQ(back->opsets, opsets) << "the original opsets are kept";
    EXPECT_EQ(op_counts(*back).count(Op::kOpaque), 0u) << "fused operators import back";
    auto input_names = [](const Graph& graph) {
      std::vector<std::string> names;
      for (const Node& n : graph.nodes) {
        if (n.op == Op::kInput) names.push_back(*n.attributes.get_string("name"));
      }
      return names;
    };
    EXPECT_EQ(input_names(*back), input_names(*g)) << "the inputs keep their order";
    absl::StatusOr<std::vector<Tensor>> got = evaluate(*back, inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), want->size());
    for (std::size_t i = 0; i < got->size(); ++i)
      EXPECT_LE(max_error_ratio((*got)[i], (*want)[i], 1e-3, 1e-4), 1.0) << "output " << i;
  }
}

// The BERT fixture spells LayerNorm and GELU in primitives, as an opset-13
// export does: the rules fuse all of them, the fused graph computes the same,
// and the export (still opset 13) spells them out again.
TEST(FixtureRewrites, BertFusesEveryLayerNormAndGelu) {
  const std::string path = fmt::format("{}/bert_base.onnx", SATURN_FIXTURES);
  absl::StatusOr<Graph> g = load_onnx_model(path);
  ASSERT_TRUE(g.ok()) << g.status();
  OptimizeOptions options;
  options.search.strategy = Strategy::kGreedy;
  options.search.threads = 1;
  options.budget.max_nodes = 5000;
  options.cost_model = std::make_shared<OpCountCostModel>();
  options.ilp_seconds = 0;
  options.measure = false;  // the fusions are what is tested
  absl::StatusOr<OptimizeResult> r = optimize(*g, options);
  ASSERT_TRUE(r.ok()) << r.status();
  std::map<Op, int> ops = op_counts(r->graph);
  // A region may keep a LayerNorm twice: once as its output, once with a
  // bias folded into its beta (equal cost under opcount). Some take their
  // residual Add along (SkipLayerNormalization, one operator fewer).
  EXPECT_GE(ops[Op::kLayerNorm] + ops[Op::kSkipLayerNorm], 24);
  EXPECT_EQ(ops[Op::kGelu], 12);
  EXPECT_EQ(ops[Op::kSqrt], 0);
  EXPECT_EQ(ops[Op::kPow], 0);
  EXPECT_EQ(ops[Op::kReduceMean], 0);
  EXPECT_EQ(ops[Op::kErf], 0);
  Inputs inputs = random_inputs(*g, 5);
  absl::StatusOr<std::vector<Tensor>> want = evaluate(*g, inputs);
  absl::StatusOr<std::vector<Tensor>> got = evaluate(r->graph, inputs);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_LE(max_error_ratio((*got)[0], (*want)[0], 1e-3, 1e-4), 1.0);
  absl::StatusOr<std::string> bytes = to_onnx_model(r->graph);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<Graph> back = parse_onnx_model(*bytes, path + " (optimized)");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(op_counts(*back)[Op::kLayerNorm], 0)
      << "LayerNormalization is an operator from opset 17";
  got = evaluate(*back, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_LE(max_error_ratio((*got)[0], (*want)[0], 1e-3, 1e-4), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Onnx, Fixtures,
                         ::testing::Values("resnet50", "inception_v3", "squeezenet1_1",
                                           "mobilenet_v2", "bert_base", "llama_decoder",
                                           "llama_block", "vit_encoder", "swin_like"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace saturn::tensor

// Transformer patterns and onnxruntime's fused operators: each recognition
// rule of rules/tensor/transformer.rules fires on the spelling PyTorch
// exports and on another spelling, and the rewritten graph computes what the
// original computes in the interpreter; each fused operator, run by
// onnxruntime's kernel, computes what the standard operators it replaces
// compute there; the fused operators import back from the ONNX saturn
// writes.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "saturn/costmodel/cost_model.h"
#include "saturn/extract/extractor.h"
#include "saturn/optimize/runtime_view.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "saturn/rules/runner.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/analysis.h"
#include "saturn/tensor/blocks.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/json/json_model.h"
#include "saturn/onnx/onnx.h"

namespace saturn::tensor {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kSeq = 8, kHeads = 2, kHead = 16, kHidden = 32;
constexpr std::int64_t kEnd = std::numeric_limits<std::int64_t>::max();

// How a test spells a pattern: as PyTorch exports it (the fixtures'), or
// otherwise.
enum class Spelling { kExported, kOther };

// RMSNorm over the last axis. Exported: x / sqrt(mean(x^2) + eps) * w;
// other: w * (x * (1 / sqrt(mean(x^2) + eps))), as Hugging Face's LLaMA.
Value rms_norm(GraphBuilder& b, Value x, Value w, Spelling s) {
  Value root = b.sqrt(b.add(b.reduce_mean(b.pow(x, b.constant(2)), {-1}), b.constant(1e-6f)));
  if (s == Spelling::kExported) return b.mul(b.div(x, root), w);
  return b.mul(w, b.mul(x, b.div(b.constant(1), root)));
}

// LayerNorm over the last axis. Exported: (x - mean) / sqrt(var + eps) * g + b
// in primitives, as opset 13 exports it; other: the LayerNormalization
// operator, as opset 17 exports it.
Value layer_norm(GraphBuilder& b, Value x, Value g, Value beta, Spelling s) {
  if (s == Spelling::kOther) return b.layer_norm(x, g, beta, -1, 1e-5f);
  Value centred = b.sub(x, b.reduce_mean(x, {-1}));
  Value var = b.reduce_mean(b.pow(centred, b.constant(2)), {-1});
  return b.add(b.mul(b.div(centred, b.sqrt(b.add(var, b.constant(1e-5f)))), g), beta);
}

// Rotary tables [kSeq, kHead]: each row repeats its first half.
Tensor rotary_table(std::uint64_t seed) {
  Tensor half = random_tensor(TensorType{DType::kFloat32, {kSeq, kHead / 2}}, seed, -1, 1);
  Tensor full(TensorType{DType::kFloat32, {kSeq, kHead}});
  for (std::int64_t r = 0; r < kSeq; ++r) {
    for (std::int64_t i = 0; i < kHead; ++i)
      full.mutable_floats()[r * kHead + i] = half.floats()[r * kHead / 2 + i % (kHead / 2)];
  }
  return full;
}

// x * cos + rotate_half(x) * sin on x [1, heads, seq, head]. Exported:
// slices to the end on axis -1, in that order, and -x2 as Neg (PyTorch's
// export); other: the slices' exact bounds on axis 3, -x2 as x2 * -1, and
// every product and the sum the other way round.
Value rotary(GraphBuilder& b, Value x, Value cos, Value sin, Spelling s) {
  const bool exported = s == Spelling::kExported;
  const Dims axes = {exported ? -1 : 3};
  Value second = b.slice(x, {kHead / 2}, {exported ? kEnd : kHead}, axes, {1});
  Value first = b.slice(x, {0}, {kHead / 2}, axes, {1});
  Value negated = exported ? b.neg(second) : b.mul(second, b.constant(-1));
  Value rotated = b.concat({negated, first}, -1);
  if (exported) return b.add(b.mul(x, cos), b.mul(rotated, sin));
  return b.add(b.mul(sin, rotated), b.mul(cos, x));
}

// A causal mask [kSeq, kSeq]: 0 on and below the diagonal, -1e4 above.
Tensor causal_mask() {
  Tensor m(TensorType{DType::kFloat32, {kSeq, kSeq}});
  for (std::int64_t i = 0; i < kSeq; ++i) {
    for (std::int64_t j = 0; j < kSeq; ++j) m.mutable_floats()[i * kSeq + j] = j > i ? -1e4f : 0.0f;
  }
  return m;
}

// softmax(q k^T / sqrt(head) + mask) v with heads merged, on q, k, v
// [1, heads, seq, head]. Exported: divided by sqrt(head); other: multiplied
// by its reciprocal.
Value causal_attention(GraphBuilder& b, Value q, Value k, Value v, Value mask, Spelling s) {
  Value scores = b.matmul(q, b.transpose(k, {0, 1, 3, 2}));
  const float root = std::sqrt(static_cast<float>(kHead));
  scores = s == Spelling::kExported ? b.div(scores, b.constant(root))
                                    : b.mul(scores, b.constant(1 / root));
  Value context = b.matmul(b.softmax(b.add(scores, mask)), v);
  return b.reshape(b.transpose(context, {0, 2, 1, 3}), {1, kSeq, kHeads * kHead});
}

// The graph the shipped rules reach from `g` in a few iterations, extracted
// by operator count; fails the test unless it holds `op`.
// `g`'s e-graph after a few iterations of the shipped rules.
struct Grown {
  explicit Grown(const Graph& g) : egraph(lang, &shapes) {
    rules = *load_tensor_rules(lang, conditions);
    ids = *add_graph(egraph, g);
    Runner().with_iteration_limit(3).with_node_limit(30'000).run(egraph, rules);
  }
  // Whether some e-node is an `op`.
  bool holds(Op op) const {
    for (Id c : egraph.class_ids()) {
      for (const ENode& n : egraph.nodes(c)) {
        if (TensorLanguage::op(n.op) == op) return true;
      }
    }
    return false;
  }
  TensorLanguage lang;
  ConditionRegistry conditions = tensor_conditions();
  RuleSet rules;
  TensorAnalysis shapes;
  EGraph egraph;
  std::vector<Id> ids;
};

Graph rewritten(const Graph& g, Op op) {
  Grown grown(g);
  const EGraph& egraph = grown.egraph;
  const std::vector<Id>& ids = grown.ids;
  std::vector<Id> roots;
  std::vector<ClassOutput> outputs;
  for (const GraphOutput& o : g.outputs) {
    roots.push_back(ids[o.node]);
    outputs.push_back({ids[o.node], o.name});
  }
  OpCountCostModel opcount;
  ExtractionProblem p =
      problem_from_egraph(egraph, roots, egraph_cost_function(opcount, egraph, grown.shapes));
  ExtractionResult r = IlpExtractor().extract(p);
  absl::StatusOr<Graph> out =
      graph_from_egraph(egraph, g, outputs, chosen_enodes(egraph, p, r.selection));
  EXPECT_TRUE(out.ok()) << message(out.status());
  if (!out.ok()) return g;
  EXPECT_GE(op_counts(*out)[op], 1) << op_name(op) << " not reached";
  return *out;
}

void expect_same_outputs(const Graph& a, const Graph& b) {
  Inputs in = random_inputs(a, 11);
  std::vector<Tensor> want = *evaluate(a, in), got = *evaluate(b, in);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(max_error_ratio(got[i], want[i], 1e-4, 1e-5), 1.0) << "output " << i;
}

class Spellings : public ::testing::TestWithParam<Spelling> {};

TEST_P(Spellings, RmsNormBecomesOneOperator) {
  GraphBuilder b("rmsnorm");
  Value x = b.input("x", {1, kSeq, kHidden});
  b.output(rms_norm(b, x, b.weight("w", {kHidden}, 0.5f, 1.5f), GetParam()), "y");
  Graph g = *b.build();
  Graph out = rewritten(g, Op::kSimplifiedLayerNorm);
  EXPECT_EQ(total_ops(out), 1);
  expect_same_outputs(g, out);
}

// The dynamo exporter's RMSNorm, w * (x * Reciprocal(sqrt(mean(x^2) + eps))),
// reaches the same fusion through the quotient's canonical forms.
TEST(Transformer, RmsNormWithAReciprocalBecomesOneOperator) {
  GraphBuilder b("rmsnorm-reciprocal");
  Value x = b.input("x", {1, kSeq, kHidden});
  Value root = b.sqrt(b.add(b.reduce_mean(b.pow(x, b.constant(2)), {-1}), b.constant(1e-6f)));
  Value w = b.weight("w", {kHidden}, 0.5f, 1.5f);
  b.output(b.mul(w, b.mul(x, b.node(Op::kReciprocal, {root}))), "y");
  Graph g = *b.build();
  Graph out = rewritten(g, Op::kSimplifiedLayerNorm);
  EXPECT_EQ(total_ops(out), 1);
  expect_same_outputs(g, out);
}

TEST_P(Spellings, ResidualAndRmsNormBecomeOneKernel) {
  GraphBuilder b("skip");
  Value x = b.input("x", {1, kSeq, kHidden});
  Value h = b.input("h", {1, kSeq, kHidden});
  Value sum = b.add(x, h);
  b.output(rms_norm(b, sum, b.weight("w", {kHidden}, 0.5f, 1.5f), GetParam()), "y");
  b.output(sum, "residual");
  Graph g = *b.build();
  Graph out = rewritten(g, Op::kSkipSimplifiedLayerNorm);
  EXPECT_EQ(op_counts(out)[Op::kAdd], 0);
  expect_same_outputs(g, out);
}

TEST_P(Spellings, ResidualAndLayerNormBecomeOneKernel) {
  GraphBuilder b("skip-layernorm");
  Value x = b.input("x", {1, kSeq, kHidden});
  Value h = b.input("h", {1, kSeq, kHidden});
  Value sum = b.add(x, h);
  Value g = b.weight("g", {kHidden}, 0.5f, 1.5f), beta = b.weight("beta", {kHidden});
  b.output(layer_norm(b, sum, g, beta, GetParam()), "y");
  b.output(sum, "residual");
  Graph graph = *b.build();
  Graph out = rewritten(graph, Op::kSkipLayerNorm);
  EXPECT_EQ(op_counts(out)[Op::kAdd], 0);
  expect_same_outputs(graph, out);
}

TEST_P(Spellings, RotaryEmbeddingBecomesOneOperator) {
  GraphBuilder b("rotary");
  Value x = b.input("x", {1, kHeads, kSeq, kHead});
  Value cos = b.weight("cos_table", rotary_table(1));
  Value sin = b.weight("sin_table", rotary_table(2));
  b.output(rotary(b, x, cos, sin, GetParam()), "y");
  Graph g = *b.build();
  Graph out = rewritten(g, Op::kRotaryEmbedding);
  // What is left besides is the tables' halves, sliced once at load time.
  std::map<Op, int> ops = op_counts(out);
  EXPECT_EQ(ops[Op::kMul] + ops[Op::kAdd] + ops[Op::kConcat], 0);
  expect_same_outputs(g, out);
}

TEST_P(Spellings, CausalAttentionBecomesOneKernel) {
  GraphBuilder b("attention");
  Value q = b.input("q", {1, kHeads, kSeq, kHead});
  Value k = b.input("k", {1, kHeads, kSeq, kHead});
  Value v = b.input("v", {1, kHeads, kSeq, kHead});
  b.output(causal_attention(b, q, k, v, b.weight("mask_table", causal_mask()), GetParam()), "y");
  Graph g = *b.build();
  Graph out = rewritten(g, Op::kGroupQueryAttention);
  std::map<Op, int> ops = op_counts(out);
  EXPECT_EQ(ops[Op::kSoftmax] + ops[Op::kMatMul], 0);
  expect_same_outputs(g, out);
}

// A block is counted once, spelled out or fused: rotary on the queries,
// causal attention, then RMSNorm; and a LayerNorm beside them (spelled out
// in primitives, or the LayerNormalization operator).
TEST_P(Spellings, BlocksAreCountedSpelledOutAndFused) {
  GraphBuilder b("blocks");
  Value x = b.input("x", {1, kHeads, kSeq, kHead});
  Value q = rotary(b, x, b.weight("cos_table", rotary_table(1)), b.weight("sin_table", rotary_table(2)),
                   GetParam());
  Value k = b.input("k", {1, kHeads, kSeq, kHead});
  Value v = b.input("v", {1, kHeads, kSeq, kHead});
  Value context = causal_attention(b, q, k, v, b.weight("mask_table", causal_mask()), GetParam());
  b.output(rms_norm(b, context, b.weight("w", {kHidden}, 0.5f, 1.5f), GetParam()), "y");
  Value h = b.input("h", {1, kSeq, kHidden});
  b.output(layer_norm(b, h, b.weight("g", {kHidden}, 0.5f, 1.5f), b.weight("beta", {kHidden}), GetParam()),
           "z");
  Graph g = *b.build();
  const bool layer_norm_fused = GetParam() == Spelling::kOther;
  BlockCounts before = count_blocks(g);
  EXPECT_EQ(before[BlockKind::kAttention].spelled, 1);
  EXPECT_EQ(before[BlockKind::kRotary].spelled, 1);
  EXPECT_EQ(before[BlockKind::kNormalization].spelled, layer_norm_fused ? 1 : 2);
  EXPECT_EQ(before[BlockKind::kNormalization].fused, layer_norm_fused ? 1 : 0);
  BlockCounts after = count_blocks(rewritten(g, Op::kGroupQueryAttention));
  for (BlockKind kind : kBlockKinds) {
    EXPECT_EQ(after[kind].spelled, 0) << to_string(kind);
    EXPECT_EQ(after[kind].fused, before[kind].present()) << to_string(kind);
  }
}

INSTANTIATE_TEST_SUITE_P(Transformer, Spellings,
                         ::testing::Values(Spelling::kExported, Spelling::kOther),
                         [](const auto& info) {
                           return info.param == Spelling::kExported ? "Exported" : "Other";
                         });

// Tables whose halves differ are not rotary tables: the rule leaves them.
TEST(Transformer, RotaryNeedsTablesWithEqualHalves) {
  GraphBuilder b("not-rotary");
  Value x = b.input("x", {1, kHeads, kSeq, kHead});
  Value cos = b.weight("cos_table", random_tensor(TensorType{DType::kFloat32, {kSeq, kHead}}, 1, -1, 1));
  Value sin = b.weight("sin_table", rotary_table(2));
  b.output(rotary(b, x, cos, sin, Spelling::kExported), "y");
  EXPECT_FALSE(Grown(*b.build()).holds(Op::kRotaryEmbedding));
}

// A mask that lets a query see a later key is not causal: the rule leaves it.
TEST(Transformer, AttentionNeedsACausalMask) {
  GraphBuilder b("not-causal");
  Value q = b.input("q", {1, kHeads, kSeq, kHead});
  Tensor mask = causal_mask();
  mask.mutable_floats()[1] = 0;  // query 0 sees key 1
  b.output(causal_attention(b, q, q, q, b.weight("mask_table", mask), Spelling::kExported), "y");
  EXPECT_FALSE(Grown(*b.build()).holds(Op::kGroupQueryAttention));
}

// --target onnx searches without the rules that build runtime operators,
// except those written as standard operators at the model's opset (causal
// attention as opset 23's Attention).
TEST(Transformer, StandardOnnxRulesBuildNoRuntimeOperator) {
  TensorLanguage lang;
  ConditionRegistry conditions = tensor_conditions();
  RuleSet all = *load_tensor_rules(lang, conditions);
  RuleSet standard = standard_onnx_rules(all, 17);
  EXPECT_LT(standard.size(), all.size());
  EXPECT_EQ(standard.find("rotary-half-split"), nullptr);
  EXPECT_EQ(standard.find("skip-rmsnorm"), nullptr);
  EXPECT_EQ(standard.find("causal-attention"), nullptr);
  EXPECT_NE(standard.find("div-by-constant"), nullptr);
  EXPECT_EQ(standard.find("skip-layernorm"), nullptr);
  EXPECT_NE(standard.find("rmsnorm-div"), nullptr) << "RMSNorm is written as standard operators";
  RuleSet at_23 = standard_onnx_rules(all, 23);
  EXPECT_NE(at_23.find("causal-attention"), nullptr);
  EXPECT_EQ(at_23.find("skip-rmsnorm"), nullptr);
}

// In onnxruntime: a graph with the fused operator against the same
// computation in standard operators (which the interpreter computes as
// ONNX defines them), on the harness's random inputs.
void expect_onnxruntime_agrees(const Graph& standard, const Graph& fused, const std::string& stem) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("saturn-transformer-{}", stem);
  fs::create_directories(dir);
  const std::string a = (dir / "standard.onnx").string(), b = (dir / "fused.onnx").string();
  ASSERT_TRUE(save_onnx_model(standard, a).ok());
  ASSERT_TRUE(save_onnx_model(fused, b).ok());
  absl::StatusOr<Graph> back = load_onnx_model(b);
  ASSERT_TRUE(back.ok()) << back.status();
  for (const auto& [op, count] : op_counts(fused)) {
    if (is_runtime_operator(op)) {
      EXPECT_EQ(op_counts(*back)[op], count) << op_name(op) << " imports back";
    }
  }
  const std::string log = (dir / "log.txt").string();
  const std::string cmd = fmt::format("'{}' verify '{}' '{}' --runs 1 --warmup 0 --threads 1 > '{}' 2>&1",
                                      SATURN_CLI, a, b, log);
  const int status = std::system(cmd.c_str());
  const std::string text = *read_text_file(log);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_NE(text.find("outputs match"), std::string::npos) << text;
  fs::remove_all(dir);
}

TEST(TransformerOnnxruntime, RotaryEmbeddingKernelAgrees) {
  auto build = [](bool fused) {
    GraphBuilder b("rotary");
    Value x = b.input("x", {1, kHeads, kSeq, kHead});
    Tensor cos = rotary_table(1), sin = rotary_table(2);
    Value y;
    if (fused) {
      auto half = [&](const Tensor& t, const char* name) {
        return b.slice(b.weight(name, t), {0}, {kHead / 2}, {-1}, {1});
      };
      y = b.node(Op::kRotaryEmbedding, {x, half(cos, "cos_table"), half(sin, "sin_table")});
    } else {
      y = rotary(b, x, b.weight("cos_table", cos), b.weight("sin_table", sin), Spelling::kExported);
    }
    b.output(y, "y");
    return *b.build();
  };
  expect_same_outputs(build(false), build(true));
  expect_onnxruntime_agrees(build(false), build(true), "rotary");
}

TEST(TransformerOnnxruntime, SkipSimplifiedLayerNormKernelAgrees) {
  auto build = [](bool fused) {
    GraphBuilder b("skip");
    Value x = b.input("x", {1, kSeq, kHidden});
    Value h = b.input("h", {1, kSeq, kHidden});
    Value w = b.weight("w", {kHidden}, 0.5f, 1.5f);
    if (fused) {
      Value both = b.node(Op::kSkipSimplifiedLayerNorm, {x, h, w}, {{"epsilon", 1e-6}});
      b.output(b.node(Op::kTupleGet, {both}, {{"index", std::int64_t{0}}}), "y");
      b.output(b.node(Op::kTupleGet, {both}, {{"index", std::int64_t{1}}}), "residual");
    } else {
      Value sum = b.add(x, h);
      b.output(rms_norm(b, sum, w, Spelling::kExported), "y");
      b.output(sum, "residual");
    }
    return *b.build();
  };
  expect_same_outputs(build(false), build(true));
  expect_onnxruntime_agrees(build(false), build(true), "skip");
}

TEST(TransformerOnnxruntime, SkipLayerNormKernelAgrees) {
  auto build = [](bool fused) {
    GraphBuilder b("skip-layernorm");
    Value x = b.input("x", {1, kSeq, kHidden});
    Value h = b.input("h", {1, kSeq, kHidden});
    Value g = b.weight("g", {kHidden}, 0.5f, 1.5f), beta = b.weight("beta", {kHidden});
    if (fused) {
      Value both = b.node(Op::kSkipLayerNorm, {x, h, g, beta}, {{"epsilon", 1e-5}});
      b.output(b.node(Op::kTupleGet, {both}, {{"index", std::int64_t{0}}}), "y");
      b.output(b.node(Op::kTupleGet, {both}, {{"index", std::int64_t{1}}}), "residual");
    } else {
      Value sum = b.add(x, h);
      b.output(layer_norm(b, sum, g, beta, Spelling::kExported), "y");
      b.output(sum, "residual");
    }
    return *b.build();
  };
  expect_same_outputs(build(false), build(true));
  expect_onnxruntime_agrees(build(false), build(true), "skip-layernorm");
}

TEST(TransformerOnnxruntime, SimplifiedLayerNormAgrees) {
  auto build = [](bool fused) {
    GraphBuilder b("rmsnorm");
    Value x = b.input("x", {1, kSeq, kHidden});
    Value w = b.weight("w", {kHidden}, 0.5f, 1.5f);
    b.output(fused ? b.node(Op::kSimplifiedLayerNorm, {x, w}, {{"epsilon", 1e-6}})
                   : rms_norm(b, x, w, Spelling::kOther),
             "y");
    return *b.build();
  };
  expect_same_outputs(build(false), build(true));
  expect_onnxruntime_agrees(build(false), build(true), "rmsnorm");
}

TEST(TransformerOnnxruntime, GroupQueryAttentionKernelAgrees) {
  auto build = [](bool fused) {
    GraphBuilder b("attention");
    Value q = b.input("q", {1, kHeads, kSeq, kHead});
    Value k = b.input("k", {1, kHeads, kSeq, kHead});
    Value v = b.input("v", {1, kHeads, kSeq, kHead});
    Value y;
    if (fused) {
      auto merged = [&](Value x) {
        return b.reshape(b.transpose(x, {0, 2, 1, 3}), {1, kSeq, kHeads * kHead});
      };
      y = b.node(Op::kGroupQueryAttention, {merged(q), merged(k), merged(v)},
                 {{"num_heads", kHeads}, {"kv_num_heads", kHeads}});
    } else {
      y = causal_attention(b, q, k, v, b.weight("mask_table", causal_mask()), Spelling::kExported);
    }
    b.output(y, "y");
    return *b.build();
  };
  expect_same_outputs(build(false), build(true));
  expect_onnxruntime_agrees(build(false), build(true), "attention");
}

// Grouped heads: query head h reads key and value head h / 2.
TEST(TransformerOnnxruntime, GroupedKeyValueHeadsAgree) {
  auto build = [](bool fused) {
    GraphBuilder b("grouped");
    Value q = b.input("q", {1, kSeq, 4 * kHead});
    Value k = b.input("k", {1, kSeq, 2 * kHead});
    Value v = b.input("v", {1, kSeq, 2 * kHead});
    if (fused) {
      b.output(b.node(Op::kGroupQueryAttention, {q, k, v}, {{"num_heads", std::int64_t{4}},
                                                             {"kv_num_heads", std::int64_t{2}}}),
               "y");
      return *b.build();
    }
    auto heads = [&](Value x, std::int64_t n) {
      return b.transpose(b.reshape(x, {1, kSeq, n, kHead}), {0, 2, 1, 3});
    };
    // Each key/value head serves two query heads in a row.
    auto repeated = [&](Value x) {
      std::vector<Value> parts = b.split(heads(x, 2), 1, {1, 1});
      return b.concat({parts[0], parts[0], parts[1], parts[1]}, 1);
    };
    Value qh = heads(q, 4), kh = repeated(k), vh = repeated(v);
    Value scores = b.div(b.matmul(qh, b.transpose(kh, {0, 1, 3, 2})),
                         b.constant(std::sqrt(static_cast<float>(kHead))));
    Value context = b.matmul(b.softmax(b.add(scores, b.weight("mask_table", causal_mask()))), vh);
    b.output(b.reshape(b.transpose(context, {0, 2, 1, 3}), {1, kSeq, 4 * kHead}), "y");
    return *b.build();
  };
  expect_same_outputs(build(false), build(true));
  expect_onnxruntime_agrees(build(false), build(true), "grouped");
}

// The input as onnxruntime loads it (the price a measured table gives the
// input): a post-norm block's residual sum and LayerNorm become one
// SkipLayerNormalization, the erf GELU one Gelu, and the view computes what
// the graph computes.
TEST(RuntimeView, PostNormBlockIsFusedAsOnnxruntimeLoadsIt) {
  GraphBuilder b("post-norm");
  Value x = b.input("x", {1, kSeq, kHidden});
  Value h = b.input("h", {1, kSeq, kHidden});
  Value g = b.weight("g", {kHidden}, 0.5f, 1.5f), beta = b.weight("beta", {kHidden});
  Value normed = layer_norm(b, b.add(x, h), g, beta, Spelling::kExported);
  Value half = b.mul(normed, b.constant(0.5f));
  b.output(b.mul(half, b.add(b.erf(b.div(normed, b.constant(1.4142135381698608f))),
                             b.constant(1))),
           "y");
  Graph graph = *b.build();
  // Built in saturn or read from JSON, it runs as saturn writes it; read
  // from the ONNX file saturn writes for it (typed), as that file loads.
  EXPECT_FALSE(skip_normalizations_fuse(graph));
  absl::StatusOr<Graph> json = parse_json_model(to_json_model(graph), "post-norm.json");
  ASSERT_TRUE(json.ok()) << message(json.status());
  EXPECT_FALSE(skip_normalizations_fuse(*json));
  const fs::path file = fs::temp_directory_path() / "saturn-transformer-post-norm.onnx";
  ASSERT_TRUE(save_onnx_model(graph, file.string()).ok());
  absl::StatusOr<Graph> onnx_file = load_onnx_model(file.string());
  fs::remove(file);
  ASSERT_TRUE(onnx_file.ok()) << message(onnx_file.status());
  EXPECT_TRUE(skip_normalizations_fuse(*onnx_file));
  graph.skip_normalizations_at_load = true;
  absl::StatusOr<Graph> view = as_onnxruntime_loads(graph);
  ASSERT_TRUE(view.ok()) << message(view.status());
  EXPECT_EQ(op_counts(*view), (std::map<Op, int>{{Op::kSkipLayerNorm, 1}, {Op::kGelu, 1}}));
  expect_same_outputs(graph, *view);
  absl::StatusOr<Graph> unskipped = as_onnxruntime_loads(graph, /*skip_normalizations=*/false);
  ASSERT_TRUE(unskipped.ok());
  const std::map<Op, int> apart = {{Op::kAdd, 1}, {Op::kLayerNorm, 1}, {Op::kGelu, 1}};
  EXPECT_EQ(op_counts(*unskipped), apart);
  // A source onnxruntime cannot type at load (symbolic sizes, no
  // value_info: BERT-base as torch.onnx exports it): the LayerNorm is fused,
  // the sum stays apart.
  graph.skip_normalizations_at_load = false;
  EXPECT_FALSE(skip_normalizations_fuse(graph));
  absl::StatusOr<Graph> untyped = as_onnxruntime_loads(graph);
  ASSERT_TRUE(untyped.ok());
  EXPECT_EQ(op_counts(*untyped), apart);
}

// The fused normalizations take rank 2 or 3: a Swin block's LayerNorm over
// [N, H, W, C] after its residual sum stays a LayerNorm.
TEST(RuntimeView, ARank4SumAndNormalizationStayApart) {
  GraphBuilder b("swin-norm");
  Value x = b.input("x", {1, 7, 7, kHidden});
  Value h = b.input("h", {1, 7, 7, kHidden});
  b.output(b.layer_norm(b.add(x, h), b.weight("g", {kHidden}, 0.5f, 1.5f),
                        b.weight("beta", {kHidden})),
           "y");
  Graph graph = *b.build();
  absl::StatusOr<Graph> view = as_onnxruntime_loads(graph);
  ASSERT_TRUE(view.ok()) << message(view.status());
  EXPECT_EQ(op_counts(*view), (std::map<Op, int>{{Op::kAdd, 1}, {Op::kLayerNorm, 1}}));
}

// A pre-norm block's sum is read again by the next residual: onnxruntime
// fuses the LayerNorm alone. An RMSNorm spelled with the reciprocal is not
// one of its patterns and stays as it is; PyTorch's spelling is fused.
TEST(RuntimeView, OnlyOnnxruntimesOwnPatternsAreFused) {
  GraphBuilder b("pre-norm");
  Value x = b.input("x", {1, kSeq, kHidden});
  Value h = b.input("h", {1, kSeq, kHidden});
  Value sum = b.add(x, h);
  Value normed = layer_norm(b, sum, b.weight("g", {kHidden}, 0.5f, 1.5f), b.weight("beta", {kHidden}),
                            Spelling::kExported);
  Value next = b.add(sum, normed);
  b.output(rms_norm(b, next, b.weight("w1", {kHidden}, 0.5f, 1.5f), Spelling::kExported), "y");
  b.output(rms_norm(b, next, b.weight("w2", {kHidden}, 0.5f, 1.5f), Spelling::kOther), "z");
  Graph graph = *b.build();
  absl::StatusOr<Graph> view = as_onnxruntime_loads(graph);
  ASSERT_TRUE(view.ok()) << message(view.status());
  std::map<Op, int> ops = op_counts(*view);
  EXPECT_EQ(ops[Op::kLayerNorm], 1);
  EXPECT_EQ(ops[Op::kSkipLayerNorm], 0);
  EXPECT_EQ(ops[Op::kSimplifiedLayerNorm], 1);
  EXPECT_EQ(ops[Op::kPow], 1) << "the reciprocal spelling's square";
  expect_same_outputs(graph, *view);
}

}  // namespace
}  // namespace saturn::tensor

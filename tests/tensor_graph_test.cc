// Graphs: the builder, whole-graph evaluation, the JSON model format (round
// trip and errors that name the place) and the shape analysis in an e-graph.
#include <cstring>
#include <memory>
#include <span>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "saturn/egraph/egraph.h"
#include "saturn/base/status.h"
#include "saturn/tensor/analysis.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/json/json_model.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {
namespace {

using Ints = std::vector<std::int64_t>;

// x -> (x @ w1 + b1) split in two -> relu(a) * sigmoid(b) -> transpose
Graph small_model() {
  GraphBuilder b("small");
  Value x = b.input("x", {2, 4});
  Value h = b.linear("fc", x, 6);
  std::vector<Value> parts = b.split(h, 1, {3, 3});
  Value g = b.mul(b.relu(parts[0]), b.sigmoid(parts[1]));
  Value scale =
      b.weight("scale", Tensor(TensorType{DType::kFloat32, {3}}, std::vector<float>{1, 2, 3}));
  b.output(b.transpose(b.mul(g, scale), {1, 0}), "y");
  b.output(parts[0], "first");
  absl::StatusOr<Graph> graph = b.build();
  EXPECT_TRUE(graph.ok()) << message(graph.status());
  return *graph;
}

void expect_same_outputs(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_LE(max_error_ratio(a[i], b[i], 1e-6, 1e-6), 1.0) << "output " << i;
}

// A borrowing tensor reads its owner's bytes in place, keeps them alive,
// and copies them before a write; bytes not aligned for floats are copied
// when first read.
TEST(Tensor, BorrowsBytesAndCopiesBeforeAWrite) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{0, 1, 2, 3, 4});
  const auto all = std::as_bytes(std::span(*owner));
  const TensorType type{DType::kFloat32, {2, 2}};
  Tensor t = Tensor::borrowing(type, all.subspan(sizeof(float)), owner);
  EXPECT_EQ(t.floats().data(), owner->data() + 1);
  Tensor kept = t;
  const std::weak_ptr<std::vector<float>> watch = owner;
  owner.reset();
  EXPECT_FALSE(watch.expired());  // the tensors keep it
  kept = Tensor();
  t.mutable_floats()[0] = 9;       // the only user: copied, then written
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(std::vector<float>(t.floats().begin(), t.floats().end()), (std::vector<float>{9, 2, 3, 4}));

  std::vector<std::byte> unaligned(1 + 4 * sizeof(float));
  const float values[] = {5, 6, 7, 8};
  std::memcpy(unaligned.data() + 1, values, sizeof(values));
  auto holder = std::make_shared<std::vector<std::byte>>(unaligned);
  Tensor u = Tensor::borrowing(type, std::span(*holder).subspan(1), holder);
  EXPECT_EQ(std::vector<float>(u.floats().begin(), u.floats().end()), (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(u.floats().data()) % alignof(float), 0u);
  const Tensor shared = u;  // aligned once, for every copy
  EXPECT_EQ(shared.floats().data(), u.floats().data());
}

TEST(TensorGraph, BuilderReportsTheFirstError) {
  GraphBuilder b("broken");
  Value x = b.input("x", {2, 3});
  Value y = b.matmul(x, b.weight("w", {4, 5}));
  Value z = b.relu(y);  // placeholder after the error
  b.output(z, "z");
  absl::StatusOr<Graph> g = b.build();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(message(g.status()).find("broken node MatMul: MatMul: inner dimensions differ"),
            std::string_view::npos)
      << message(g.status());
  GraphBuilder dup("dup");
  dup.input("x", {1});
  dup.input("x", {1});
  EXPECT_NE(message(dup.status()).find("used twice"), std::string_view::npos);
}

TEST(TensorGraph, EvaluatesWithTuplesAndWeights) {
  Graph g = small_model();
  EXPECT_EQ(total_ops(g), 8);  // MatMul Add Split Relu Sigmoid Mul Mul Transpose
  Inputs in = random_inputs(g, 3);
  absl::StatusOr<std::vector<Tensor>> out = evaluate(g, in);
  ASSERT_TRUE(out.ok()) << message(out.status());
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].dims(), (Dims{3, 2}));
  EXPECT_EQ((*out)[1].dims(), (Dims{2, 3}));
  // The same inputs give the same outputs; another seed gives others.
  expect_same_outputs(*out, *evaluate(g, in));
  EXPECT_GT(max_error_ratio((*out)[0], (*evaluate(g, random_inputs(g, 4)))[0], 1e-6, 1e-6), 1.0);
  // Missing and mistyped inputs are errors.
  EXPECT_FALSE(evaluate(g, {}).ok());
  Inputs wrong{{"x", Tensor(TensorType{DType::kFloat32, {4, 2}})}};
  EXPECT_NE(message(evaluate(g, wrong).status()).find("input 'x' must be float32[2,4]"),
            std::string_view::npos);
}

TEST(TensorGraph, WeightOnlyNodes) {
  GraphBuilder b("w");
  Value x = b.input("x", {2, 3});
  Value w = b.weight("w", {3, 3});
  Value wt = b.transpose(w, {1, 0});
  Value y = b.matmul(x, wt);
  b.output(y, "y");
  Graph g = *b.build();
  std::vector<bool> flags = weight_only_nodes(g);
  EXPECT_FALSE(flags[x.node]);
  EXPECT_TRUE(flags[w.node]);
  EXPECT_TRUE(flags[wt.node]);
  EXPECT_FALSE(flags[y.node]);
}

TEST(TensorGraph, JsonRoundTrip) {
  Graph g = small_model();
  std::string text = to_json_model(g);
  absl::StatusOr<Graph> back = parse_json_model(text, "small.json");
  ASSERT_TRUE(back.ok()) << message(back.status());
  EXPECT_EQ(op_counts(*back), op_counts(g));
  EXPECT_EQ(back->outputs.size(), g.outputs.size());
  EXPECT_EQ(back->outputs[1].name, "first");
  Inputs in = random_inputs(g, 9);
  expect_same_outputs(*evaluate(g, in), *evaluate(*back, in));
  // Saving again gives the same text.
  EXPECT_EQ(to_json_model(*back), text);
}

TEST(TensorGraph, JsonRoundTripOfAZooModel) {
  Graph g = *build_zoo_model("squeezenet");
  std::string path = (std::filesystem::temp_directory_path() /
                      ("saturn_squeezenet_" + std::to_string(::getpid()) + ".json"))
                         .string();
  ASSERT_TRUE(save_json_model(g, path).ok());
  absl::StatusOr<Graph> back = load_json_model(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(back.ok()) << message(back.status());
  EXPECT_EQ(op_counts(*back), op_counts(g));
  Inputs in = random_inputs(g, 1);
  expect_same_outputs(*evaluate(g, in), *evaluate(*back, in));
}

// Opset 21's blocked DequantizeLinear of an int4 weight (one value per
// byte in saturn's JSON, int4 sign-extended): y[r][c] = (w[r][c] -
// zero[r / 2][c]) * scale[r / 2][c] for blocks of 2 rows.
TEST(TensorGraph, JsonReadsABlockedFourBitWeight) {
  const std::string text = R"({
    "weights": [{"name": "w", "shape": [4, 2], "dtype": "int4", "data": "AQL4BwD/AwQ="},
                {"name": "s", "shape": [2, 2], "data": [1, 2, 0.5, 0.25]},
                {"name": "z", "shape": [2, 2], "dtype": "int4", "data": "AAH/AA=="}],
    "nodes": [{"op": "DequantizeLinear", "inputs": ["w", "s", "z"], "outputs": ["y"],
               "attributes": {"axis": 0, "block_size": 2}}],
    "outputs": ["y"]})";
  absl::StatusOr<Graph> g = parse_json_model(text, "four_bit.json");
  ASSERT_TRUE(g.ok()) << message(g.status());
  absl::StatusOr<std::vector<Tensor>> y = evaluate(*g, {});
  ASSERT_TRUE(y.ok()) << message(y.status());
  const std::vector<float> want = {1, 2, -8, 12, 0.5f, -0.25f, 2, 1};
  EXPECT_EQ(std::vector<float>((*y)[0].floats().begin(), (*y)[0].floats().end()), want);
  absl::StatusOr<Graph> back = parse_json_model(to_json_model(*g), "again.json");
  ASSERT_TRUE(back.ok()) << message(back.status());
  EXPECT_EQ(to_json_model(*back), to_json_model(*g));
}

struct BadModel {
  std::string text;
  std::string error;
};

TEST(TensorGraph, MalformedJsonNamesThePlace) {
  const std::string in = R"("inputs": [{"name": "x", "shape": [2, 3]}])";
  const std::vector<BadModel> cases = {
      {"{\"nodes\": [}", "bad.json:1:12: not valid JSON"},
      // Found by the JSON model fuzzer: nlohmann reports this one as
      // out_of_range, not as a parse error.
      {"{\"version\": 1e999}", "bad.json: not valid JSON: number overflow parsing '1e999'"},
      {"[]", "bad.json: the top level must be an object"},
      {R"({"format": "onnx", "nodes": [], "outputs": ["x"]})",
       "bad.json: format: must be \"saturn-model\""},
      {R"({"version": 2, "nodes": [], "outputs": ["x"]})", "bad.json: version: must be 1"},
      {R"({"nodez": []})", "bad.json: nodez: unknown field"},
      {R"({"inputs": [{"name": "x", "shape": [2, "3"]}], "nodes": [], "outputs": ["x"]})",
       "bad.json: inputs[0] (x): shape: must be a list of integers"},
      {R"({"inputs": [{"name": "x", "shape": [2], "dtype": "half"}], "nodes": [], "outputs": ["x"]})",
       "bad.json: inputs[0] (x): unknown dtype 'half'"},
      {R"({"weights": [{"name": "w", "shape": [2], "data": [1]}], "nodes": [], "outputs": ["w"]})",
       "bad.json: weights[0] (w): data must be a list of 2 numbers"},
      {R"({"weights": [{"name": "w", "shape": [2], "low": 1, "high": 0}], "nodes": [], "outputs": ["w"]})",
       "bad.json: weights[0] (w): low must be below high"},
      {R"({"weights": [{"name": "w", "shape": [1], "dtype": "int4", "data": "fw=="}], "nodes": [], "outputs": ["w"]})",
       "bad.json: weights[0] (w): int4 data must hold one int4 value per byte (-8 to 7)"},
      {"{" + in +
           R"(, "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}, {"op": "Relu", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]})",
       "bad.json: nodes[1]: the value 'y' is defined twice"},
      {"{" + in +
           R"(, "nodes": [{"op": "Rellu", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]})",
       "bad.json: nodes[0]: unknown operator 'Rellu'"},
      {"{" + in +
           R"(, "nodes": [{"op": "Relu", "inputs": ["q"], "outputs": ["y"]}], "outputs": ["y"]})",
       "bad.json: nodes[0]: unknown input value 'q'"},
      {"{" + in +
           R"(, "nodes": [{"name": "mm", "op": "MatMul", "inputs": ["x", "x"], "outputs": ["y"]}], "outputs": ["y"]})",
       "bad.json: nodes[0] (mm): MatMul: inner dimensions differ"},
      {"{" + in +
           R"(, "nodes": [{"op": "Transpose", "inputs": ["x"], "outputs": ["y"], "attributes": {"perm": "10"}}], "outputs": ["y"]})",
       "bad.json: nodes[0]: Transpose attribute 'perm' must be a list of integers"},
      {"{" + in +
           R"(, "nodes": [{"op": "Softmax", "inputs": ["x"], "outputs": ["y"], "attributes": {"axis": {}}}], "outputs": ["y"]})",
       "bad.json: nodes[0]: attribute 'axis': must be a number, a string or a list of integers"},
      {"{" + in +
           R"(, "nodes": [{"op": "Split", "inputs": ["x"], "outputs": ["a"], "attributes": {"axis": 1, "split": [1, 2]}}], "outputs": ["a"]})",
       "bad.json: nodes[0]: Split yields 2 value(s), 1 output name(s) given"},
      {"{" + in + R"(, "nodes": [{"op": "Relu", "inputs": ["x"]}], "outputs": ["y"]})",
       "bad.json: nodes[0]: needs \"outputs\""},
      {"{" + in + R"(, "nodes": [], "outputs": ["z"]})", "bad.json: outputs[0]: unknown value 'z'"},
      {"{" + in + R"(, "nodes": []})", "bad.json: outputs: must be a non-empty list"},
      {R"({"name": 3, "nodes": [], "outputs": ["x"]})", "bad.json: \"name\" must be a string"},
      {R"({"inputs": [{"name": "x", "shape": [2], "dtype": 1}], "nodes": [], "outputs": ["x"]})",
       "bad.json: inputs[0] (x): \"dtype\" must be a string"},
      {R"({"inputs": [{"name": "x", "shape": [1099511627776, 1099511627776]}], "nodes": [], "outputs": ["x"]})",
       "bad.json: inputs[0] (x): Input: its output float32[1099511627776,1099511627776] would "
       "hold more than 16 TiB"},
      {R"({"inputs": [{"name": "x", "shape": [1048576, 1048576]}], "nodes": [{"op": "Concat", "inputs": ["x", "x", "x", "x", "x"], "outputs": ["y"], "attributes": {"axis": 0}}], "outputs": ["y"]})",
       "bad.json: nodes[0]: Concat: its output float32[5242880,1048576] would hold more than 16 "
       "TiB"},
  };
  for (const BadModel& c : cases) {
    absl::StatusOr<Graph> g = parse_json_model(c.text, "bad.json");
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_NE(message(g.status()).find(c.error), std::string_view::npos)
        << "got: " << message(g.status()) << "\nwanted: " << c.error;
  }
  EXPECT_NE(message(load_json_model("/nonexistent/model.json").status())
                .find("/nonexistent/model.json: cannot open"),
            std::string_view::npos);
}

TEST(TensorGraph, ShapeAnalysisInAnEGraph) {
  Graph g = small_model();
  TensorLanguage lang;
  TensorAnalysis shapes;
  EGraph egraph(lang, &shapes);
  absl::StatusOr<std::vector<Id>> ids = add_graph(egraph, g);
  ASSERT_TRUE(ids.ok()) << message(ids.status());
  std::vector<ValueType> types = *infer_types(g);
  std::vector<bool> weight_only = weight_only_nodes(g);
  for (int i = 0; i < g.size(); ++i) {
    EXPECT_EQ(shapes.info((*ids)[i]).type, types[i]) << node_label(g, i);
    EXPECT_EQ(shapes.info((*ids)[i]).weight_only, weight_only[i]) << node_label(g, i);
  }
  // A node whose shapes do not fit is refused and leaves the e-graph as it was.
  std::size_t before = egraph.num_nodes();
  Id x = (*ids)[0];
  AddResult r = egraph.add(ENode(TensorLanguage::symbol(Op::kMatMul), kNoAttributes, {x, x}));
  EXPECT_EQ(r.status, AddStatus::kRejected);
  EXPECT_EQ(egraph.num_nodes(), before);
  EXPECT_EQ(shapes.refused(), 1u);
  // Merging a class with a weight-only one makes it weight-only.
  AttrId attrs = egraph.attrs().intern(
      *normalize_attributes(Op::kWeight, {{"name", "x2"}, {"shape", Ints{2, 4}}}));
  AddResult w = egraph.add(ENode(TensorLanguage::symbol(Op::kWeight), attrs));
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(shapes.info(x).weight_only);
  ASSERT_TRUE(egraph.merge(x, w.id).ok());
  egraph.rebuild();
  EXPECT_TRUE(shapes.info(egraph.find(x)).weight_only);
  // Classes of different types are never merged, nor does a node join a
  // class of another type: both are refused and change nothing.
  AttrId other = egraph.attrs().intern(
      *normalize_attributes(Op::kWeight, {{"name", "x3"}, {"shape", Ints{4, 2}}}));
  AddResult v = egraph.add(ENode(TensorLanguage::symbol(Op::kWeight), other));
  ASSERT_TRUE(v.ok());
  const std::size_t classes = egraph.num_classes();
  EXPECT_EQ(egraph.merge(x, v.id).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(egraph.add_into(ENode(TensorLanguage::symbol(Op::kTranspose), kNoAttributes, {x}), x)
                .status,
            AddStatus::kConflict);
  egraph.rebuild();
  EXPECT_EQ(egraph.num_classes(), classes);
  EXPECT_NE(egraph.find(x), egraph.find(v.id));
  EXPECT_TRUE(egraph.check_invariants().ok());
  // The budget is respected.
  EGraph tiny(lang, nullptr);
  tiny.set_budget(Budget{3, std::numeric_limits<std::size_t>::max()});
  EXPECT_EQ(add_graph(tiny, g).status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace saturn::tensor

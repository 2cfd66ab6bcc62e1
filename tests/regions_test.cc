// Regions: cutting graphs into regions (of zoo models and of every ONNX
// fixture) and stitching them back computes what the graph computes, repeated blocks get one key, cuts fall where few
// values cross, and results that do not fit their region are named errors.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "saturn/base/status.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/infer.h"
#include "fmt/format.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/onnx/onnx.h"
#include "saturn/optimize/regions.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {
namespace {

std::vector<const Graph*> own_graphs(const std::vector<Region>& regions) {
  std::vector<const Graph*> graphs;
  for (const Region& r : regions) graphs.push_back(&r.graph);
  return graphs;
}

// A zoo model by name, or an ONNX fixture ("fixture:NAME").
absl::StatusOr<Graph> load_model(std::string_view name) {
  constexpr std::string_view kFixture = "fixture:";
  if (!name.starts_with(kFixture)) return build_zoo_model(name);
  return load_onnx_model(
      fmt::format("{}/{}.onnx", SATURN_FIXTURES, name.substr(kFixture.size())));
}

class RegionsOfModel : public ::testing::TestWithParam<const char*> {};

TEST_P(RegionsOfModel, StitchBackToTheSameOutputs) {
  absl::StatusOr<Graph> g = load_model(GetParam());
  ASSERT_TRUE(g.ok()) << message(g.status());
  absl::StatusOr<std::vector<Region>> regions =
      split_into_regions(*g, {.target_ops = 12, .max_ops = 30});
  ASSERT_TRUE(regions.ok()) << message(regions.status());
  EXPECT_GT(regions->size(), 2u);
  int ops = 0;
  for (const Region& r : *regions) {
    ops += r.ops;
    EXPECT_LE(r.ops, 30) << r.graph.name;
    EXPECT_TRUE(infer_types(r.graph).ok()) << r.graph.name;
  }
  // Every operator that runs (neither a leaf nor weight-only) is in one region.
  const std::vector<bool> weight_only = weight_only_nodes(*g), live = live_nodes(*g);
  int runs = 0;
  for (int i = 0; i < g->size(); ++i)
    runs += live[i] && !weight_only[i] && g->nodes[i].op != Op::kInput;
  EXPECT_EQ(ops, runs);
  absl::StatusOr<Graph> stitched = stitch_regions(*g, *regions, own_graphs(*regions));
  ASSERT_TRUE(stitched.ok()) << message(stitched.status());
  EXPECT_EQ(total_ops(*stitched), total_ops(*g));
  const Inputs inputs = random_inputs(*g, 5);
  absl::StatusOr<std::vector<Tensor>> before = evaluate(*g, inputs);
  absl::StatusOr<std::vector<Tensor>> after = evaluate(*stitched, inputs);
  ASSERT_TRUE(before.ok() && after.ok());
  ASSERT_EQ(before->size(), after->size());
  for (std::size_t i = 0; i < before->size(); ++i)
    EXPECT_EQ(max_error_ratio((*after)[i], (*before)[i], 0, 0), 0.0) << "output " << i;
}

INSTANTIATE_TEST_SUITE_P(Zoo, RegionsOfModel,
                         ::testing::Values("squeezenet", "nasrnn", "mobilenet_v2", "llama:3"));
INSTANTIATE_TEST_SUITE_P(Fixtures, RegionsOfModel,
                         ::testing::Values("fixture:resnet50", "fixture:inception_v3",
                                           "fixture:squeezenet1_1", "fixture:mobilenet_v2",
                                           "fixture:bert_base", "fixture:llama_decoder",
                                           "fixture:swin_like"));

// A value the graph knows at its given sizes (a size its shape arithmetic
// computes) goes with the region input that reads it, and the region's
// random inputs take it instead of random numbers; a value of another type
// is not taken.
TEST(Regions, AKnownSizeValueIsTheRegionInputsValue) {
  absl::StatusOr<Graph> g = load_model("nasrnn");
  ASSERT_TRUE(g.ok()) << message(g.status());
  const RegionOptions options{.target_ops = 12, .max_ops = 30};
  absl::StatusOr<std::vector<Region>> regions = split_into_regions(*g, options);
  ASSERT_TRUE(regions.ok() && regions->size() > 2);
  const Region& later = regions->back();
  ASSERT_FALSE(later.inputs.empty());
  const int v = later.inputs[0];
  const TensorType type = infer_types(*g).value()[v].tensor();
  g->nodes[v].name = "sequence_length";
  const auto known = std::make_shared<const Tensor>(random_tensor(type, 42, 3.0f, 4.0f));
  g->size_values["sequence_length"] = known;
  regions = split_into_regions(*g, options);
  ASSERT_TRUE(regions.ok());
  const Graph& region = regions->back().graph;
  ASSERT_TRUE(region.size_values.contains("in0"));
  const Inputs inputs = random_inputs(region, 7);
  EXPECT_EQ(max_error_ratio(inputs.at("in0"), *known, 0, 0), 0.0);
  Graph other = region;
  other.size_values["in0"] = std::make_shared<const Tensor>(Tensor::scalar(1));
  EXPECT_NE(random_inputs(other, 7).at("in0").type(), Tensor::scalar(1).type());
}

TEST(Regions, RepeatedLayersShareKeys) {
  absl::StatusOr<Graph> g = build_zoo_model("llama:12");
  ASSERT_TRUE(g.ok()) << message(g.status());
  absl::StatusOr<std::vector<Region>> regions = split_into_regions(*g, {});
  ASSERT_TRUE(regions.ok()) << message(regions.status());
  std::set<std::string> keys;
  for (const Region& r : *regions) {
    keys.insert(r.key);
    // Cuts between layers: the residual stream alone crosses them.
    if (&r != &regions->back()) {
      EXPECT_EQ(r.cut_values, 1) << r.graph.name;
    }
  }
  EXPECT_GE(regions->size(), 6u);
  // The first and last regions hold the embedding and the head; the rest
  // repeat a structure or two (a region that starts mid-layer).
  EXPECT_LE(keys.size(), 4u);
  // Copies differ only in their weights.
  const Region& a = (*regions)[1];
  for (const Region& b : *regions) {
    if (b.key != a.key || &a == &b) continue;
    EXPECT_EQ(a.graph.size(), b.graph.size());
    EXPECT_NE(a.weights, b.weights);
  }
}

TEST(Regions, SmallGraphsAndZeroTargetAreOneRegion) {
  absl::StatusOr<Graph> g = build_zoo_model("llama:2");
  ASSERT_TRUE(g.ok());
  for (RegionOptions o : {RegionOptions{.target_ops = 0, .max_ops = 0}, RegionOptions{}}) {
    absl::StatusOr<std::vector<Region>> regions = split_into_regions(*g, o);
    ASSERT_TRUE(regions.ok());
    EXPECT_EQ(regions->size(), 1u);
  }
  EXPECT_FALSE(split_into_regions(*g, {.target_ops = 10, .max_ops = 5}).ok());
}

// An opaque operator whose output shape depends on its data (ONNX shape
// arithmetic an exporter left in) makes values of unknown dimensions: no
// region can take one as an input, so no cut falls where one crosses.
TEST(Regions, ValuesOfUnknownShapeNeverCrossACut) {
  GraphBuilder b("opaque_chain");
  Value x = b.relu(b.input("x", {4, 4}));
  for (int i = 0; i < 30; ++i) x = b.relu(x);
  Attributes attributes{{"op_type", std::string("NonZeroLike")}};
  const TensorType unknown{DType::kFloat32, {kUnknownDim, 4}};
  set_opaque_outputs(attributes, std::span(&unknown, 1));
  x = b.node(Op::kOpaque, {x}, std::move(attributes));
  for (int i = 0; i < 30; ++i) x = b.relu(x);
  b.output(x, "y");
  absl::StatusOr<Graph> g = b.build();
  ASSERT_TRUE(g.ok()) << message(g.status());
  absl::StatusOr<std::vector<Region>> regions =
      split_into_regions(*g, {.target_ops = 10, .max_ops = 25});
  ASSERT_TRUE(regions.ok()) << message(regions.status());
  EXPECT_GE(regions->size(), 2u);  // cuts before the opaque operator
  EXPECT_GE(regions->back().ops, 31);  // none after it: the opaque operator and what follows
  for (const Region& r : *regions) {
    absl::StatusOr<std::vector<ValueType>> types = infer_types(r.graph);
    EXPECT_TRUE(types.ok()) << r.graph.name << ": " << message(types.status());
  }
}

// A QuantizeLinear of a constant the file puts first (as quantize_static
// does) is cut into the region of the DequantizeLinear that reads it, where
// the rules that match the pair can see it whole.
// `b`'s graph cut into regions of about 10 operators.
absl::StatusOr<std::vector<Region>> cut_small(GraphBuilder& b) {
  absl::StatusOr<Graph> g = b.build();
  if (!g.ok()) return g.status();
  return split_into_regions(*g, {.target_ops = 10, .max_ops = 20});
}

TEST(Regions, AnOperatorOfWeightsGoesWithItsReader) {
  GraphBuilder b("quantized_constant");
  const Value scale = b.weight("scale", Tensor::scalar(0.05f));
  const Value zero = b.weight("zero", Tensor(TensorType{DType::kInt8, {}}, std::vector<std::byte>{std::byte{3}}));
  const Value early = b.node(Op::kQuantizeLinear, {b.constant(1.0f), scale, zero});
  Value x = b.relu(b.input("x", {4, 4}));
  for (int i = 0; i < 40; ++i) x = b.relu(x);
  x = b.add(x, b.node(Op::kDequantizeLinear, {early, scale, zero}));
  b.output(b.relu(x), "y");
  absl::StatusOr<std::vector<Region>> regions = cut_small(b);
  ASSERT_TRUE(regions.ok()) << message(regions.status());
  ASSERT_GE(regions->size(), 2u);
  int with_pair = 0;
  for (const Region& r : *regions) {
    bool q = false, dq = false;
    for (const Node& n : r.graph.nodes) {
      q = q || n.op == Op::kQuantizeLinear;
      dq = dq || n.op == Op::kDequantizeLinear;
    }
    EXPECT_EQ(q, dq) << r.graph.name;
    with_pair += q && dq;
  }
  EXPECT_EQ(with_pair, 1);
}

// A chain of them (a bias dequantized, then quantized again as an
// activation, as quantize_static spells a TorchScript bias) moves as a whole
// into the region of the Add that reads its end, however early the file
// lists it: cut where the file put it, the pair stayed in the first region,
// where no rule sees it together with its Add.
TEST(Regions, AChainOfOperatorsOfWeightsGoesWithItsReader) {
  GraphBuilder b("requantized_bias");
  const Value scale = b.weight("scale", Tensor::scalar(0.05f));
  const Value zero = b.weight("zero", Tensor(TensorType{DType::kInt8, {}}, std::vector<std::byte>{std::byte{3}}));
  const Value bias = b.node(Op::kDequantizeLinear,
                            {b.node(Op::kQuantizeLinear, {b.constant(1.0f, {4}), scale, zero}), scale, zero});
  const Value again = b.node(Op::kDequantizeLinear,
                             {b.node(Op::kQuantizeLinear, {bias, scale, zero}), scale, zero});
  Value x = b.relu(b.input("x", {4, 4}));
  for (int i = 0; i < 40; ++i) x = b.relu(x);
  b.output(b.relu(b.add(x, again)), "y");
  absl::StatusOr<std::vector<Region>> regions = cut_small(b);
  ASSERT_TRUE(regions.ok()) << message(regions.status());
  ASSERT_GE(regions->size(), 2u);
  int with_quantization = 0;
  for (const Region& r : *regions) {
    int quantization = 0;
    bool add = false;
    for (const Node& n : r.graph.nodes) {
      quantization += is_quantization(n.op);
      add = add || n.op == Op::kAdd;
    }
    if (quantization == 0) continue;
    ++with_quantization;
    EXPECT_EQ(quantization, 4) << r.graph.name;
    EXPECT_TRUE(add) << r.graph.name;
  }
  EXPECT_EQ(with_quantization, 1);
}

TEST(Regions, AResultWithAnotherInterfaceIsANamedError) {
  absl::StatusOr<Graph> g = build_zoo_model("squeezenet");
  ASSERT_TRUE(g.ok());
  absl::StatusOr<std::vector<Region>> regions =
      split_into_regions(*g, {.target_ops = 10, .max_ops = 25});
  ASSERT_TRUE(regions.ok());
  std::vector<const Graph*> results = own_graphs(*regions);
  Graph wrong = (*regions)[1].graph;
  wrong.outputs.pop_back();
  results[1] = &wrong;
  absl::StatusOr<Graph> stitched = stitch_regions(*g, *regions, results);
  ASSERT_FALSE(stitched.ok());
  EXPECT_NE(message(stitched.status()).find("region 1 of 'squeezenet'"), std::string::npos)
      << message(stitched.status());
  Graph renamed = (*regions)[1].graph;
  for (Node& n : renamed.nodes) {
    if (n.op == Op::kInput) n.attributes.set("name", std::string("x"));
  }
  results[1] = &renamed;
  stitched = stitch_regions(*g, *regions, results);
  ASSERT_FALSE(stitched.ok());
  EXPECT_NE(message(stitched.status()).find("input 'x'"), std::string::npos)
      << message(stitched.status());
}

}  // namespace
}  // namespace saturn::tensor

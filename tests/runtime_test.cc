// The calibration's pieces that need no onnxruntime: the models it times an
// operator in, and how it attributes the kernels of a model between
// convolutions to the operator.
#include <gtest/gtest.h>

#include <algorithm>

#include "saturn/tensor/infer.h"
#include "saturn/tensor/ops.h"
#include "saturn/ort/runtime.h"

namespace saturn::ort {
namespace {

using tensor::Dims;
using tensor::Graph;
using tensor::Op;
using tensor::TensorType;
using tensor::ValueType;

ValueType F(Dims d) { return ValueType::of(TensorType{tensor::DType::kFloat32, std::move(d)}); }

nlohmann::json kernel(const char* op, Dims input, Dims output, double us) {
  return {{"op", op}, {"input", input}, {"output", output}, {"us", us}};
}

int count(const Graph& g, Op op) {
  return static_cast<int>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [&](const auto& n) { return n.op == op; }));
}

// A channel Split of a convolution's output into two halves.
struct SplitCase {
  Attributes attributes = *tensor::normalize_attributes(
      Op::kSplit, {{"axis", std::int64_t{1}}, {"split", Dims{32, 32}}});
  std::vector<ValueType> in = {F({1, 64, 28, 28})};
  ValueType out = ValueType::tuple({TensorType{tensor::DType::kFloat32, {1, 32, 28, 28}},
                                    TensorType{tensor::DType::kFloat32, {1, 32, 28, 28}}});
  tensor::Opsets opsets;
};

TEST(Calibration, AloneTheOperatorReadsFreshInputs) {
  SplitCase c;
  std::optional<Graph> g = timing_model(Op::kSplit, c.attributes, c.in, {false}, c.out, "split",
                                        c.opsets, Placement::kAlone);
  ASSERT_TRUE(g.has_value());
  ASSERT_TRUE(tensor::infer_types(*g).ok());
  EXPECT_EQ(count(*g, Op::kConv), 0);
  EXPECT_EQ(count(*g, Op::kInput), 1);
  ASSERT_EQ(g->outputs.size(), 2u);
  const std::vector<ValueType> types = *tensor::infer_types(*g);
  for (const tensor::GraphOutput& o : g->outputs) EXPECT_EQ(types[o.node], F({1, 32, 28, 28}));
}

TEST(Calibration, BetweenConvolutionsTheOperatorSitsInAChain) {
  SplitCase c;
  std::optional<Graph> g = timing_model(Op::kSplit, c.attributes, c.in, {false}, c.out, "split",
                                        c.opsets, Placement::kBetweenConvolutions);
  ASSERT_TRUE(g.has_value());
  absl::StatusOr<std::vector<ValueType>> types = tensor::infer_types(*g);
  ASSERT_TRUE(types.ok()) << types.status();
  // One convolution before the Split, one after each part.
  EXPECT_EQ(count(*g, Op::kConv), 3);
  int inputs = 0;
  for (int i = 0; i < g->size(); ++i) {
    if (g->nodes[i].op != Op::kInput) continue;
    ++inputs;
    EXPECT_EQ((*types)[i], F({1, 4, 28, 28}));  // a 4-channel input, read as it is
  }
  EXPECT_EQ(inputs, 1);
  ASSERT_EQ(g->outputs.size(), 2u);
  for (const tensor::GraphOutput& o : g->outputs) EXPECT_EQ((*types)[o.node], F({1, 8, 1, 1}));
}

TEST(Calibration, WeightsStayWeightsBetweenConvolutions) {
  // A weight operand is not an activation: no convolution feeds it.
  const Attributes a = *tensor::normalize_attributes(Op::kAdd, {});
  std::optional<Graph> g = timing_model(
      Op::kAdd, a, std::vector<ValueType>{F({1, 16, 8, 8}), F({1, 16, 8, 8})}, {false, true},
      F({1, 16, 8, 8}), "add", tensor::Opsets{}, Placement::kBetweenConvolutions);
  ASSERT_TRUE(g.has_value());
  ASSERT_TRUE(tensor::infer_types(*g).ok());
  EXPECT_EQ(count(*g, Op::kConv), 2);    // one before the activation input, one after the output
  EXPECT_EQ(count(*g, Op::kWeight), 3);  // the operand and the two context kernels
}

TEST(Calibration, MixedTheFirstActivationStaysPlain) {
  // A Concat of a weight-free plain input and convolution outputs, as when a
  // Split's part meets the other branches of an Inception block.
  const Attributes a = *tensor::normalize_attributes(Op::kConcat, {{"axis", std::int64_t{1}}});
  const std::vector<ValueType> in = {F({1, 16, 8, 8}), F({1, 8, 8, 8}), F({1, 8, 8, 8})};
  std::optional<Graph> g = timing_model(Op::kConcat, a, in, {false, false, false}, F({1, 32, 8, 8}),
                                        "concat", tensor::Opsets{}, Placement::kMixed);
  ASSERT_TRUE(g.has_value());
  absl::StatusOr<std::vector<ValueType>> types = tensor::infer_types(*g);
  ASSERT_TRUE(types.ok()) << types.status();
  // Convolutions before the second and third inputs and after the output.
  EXPECT_EQ(count(*g, Op::kConv), 3);
  std::vector<ValueType> inputs;
  for (int i = 0; i < g->size(); ++i)
    if (g->nodes[i].op == Op::kInput) inputs.push_back((*types)[i]);
  EXPECT_EQ(inputs.size(), 3u);
  EXPECT_NE(std::find(inputs.begin(), inputs.end(), F({1, 16, 8, 8})), inputs.end());

  // One activation input cannot be mixed.
  EXPECT_FALSE(timing_model(Op::kConcat, a, in, {false, true, true}, F({1, 32, 8, 8}), "concat",
                            tensor::Opsets{}, Placement::kMixed)
                   .has_value());
}

TEST(Calibration, ReordersTheOperatorForcesAreItsCost) {
  const nlohmann::json kernels = {
      kernel("Conv", {1, 4, 28, 28}, {1, 64, 28, 28}, 100),           // the context
      kernel("ReorderOutput", {1, 64, 28, 28}, {1, 64, 28, 28}, 30),  // out of the blocked layout
      kernel("Split", {1, 64, 28, 28}, {1, 32, 28, 28}, 20),          // the operator
      kernel("ReorderInput", {1, 32, 28, 28}, {1, 32, 28, 28}, 10),   // back in, part 1
      kernel("ReorderInput", {1, 32, 28, 28}, {1, 32, 28, 28}, 12),   // back in, part 2
      kernel("Conv", {1, 32, 28, 28}, {1, 16, 1, 1}, 40),             // the context
      kernel("ReorderOutput", {1, 16, 1, 1}, {1, 8, 1, 1}, 5)};       // the chain's edge
  std::optional<double> us =
      cost_between_convolutions(kernels, {{1, 64, 28, 28}}, {{1, 32, 28, 28}, {1, 32, 28, 28}});
  ASSERT_TRUE(us.has_value());
  EXPECT_DOUBLE_EQ(*us, 20 + 30 + 10 + 12);
}

TEST(Calibration, AnOperatorFusedIntoTheConvolutionCostsNothingBetweenThem) {
  // Onnxruntime folded the Relu into the convolution: only the context ran.
  const nlohmann::json kernels = {kernel("Conv", {1, 4, 28, 28}, {1, 64, 28, 28}, 100),
                                  kernel("Conv", {1, 64, 28, 28}, {1, 16, 1, 1}, 40),
                                  kernel("ReorderOutput", {1, 16, 1, 1}, {1, 8, 1, 1}, 5)};
  std::optional<double> us =
      cost_between_convolutions(kernels, {{1, 64, 28, 28}}, {{1, 64, 28, 28}});
  ASSERT_TRUE(us.has_value());
  EXPECT_EQ(*us, 0.0);
  // Without the context's convolutions there is nothing to attribute.
  const nlohmann::json lone = {kernel("Relu", {1, 64, 28, 28}, {1, 64, 28, 28}, 7)};
  EXPECT_FALSE(cost_between_convolutions(lone, {{1, 64, 28, 28}}, {{1, 64, 28, 28}}).has_value());
}

}  // namespace
}  // namespace saturn::ort

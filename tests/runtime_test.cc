// The calibration's pieces that need no onnxruntime: the models it times an
// operator in, how it attributes the kernels of a model between
// convolutions to the operator, and the products of quantized weights it
// times in both weight types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "saturn/ort/harness_internal.h"
#include "saturn/ort/runtime.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/ops.h"

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

// A quantized model's products, as onnxruntime runs them in its integer
// kernels: a MatMul and an ungrouped Conv between a DequantizeLinear of an
// activation and one of a weight count, by their matrix product's shape
// (the convolution's im2col form), the largest first; a grouped Conv and a
// product of a float weight do not.
TEST(Calibration, TheProductsOfQuantizedWeightsAreTheirMatrixProducts) {
  tensor::GraphBuilder b("quantized");
  auto byte = [](tensor::DType dtype, std::uint8_t bits) {
    return tensor::Tensor(TensorType{dtype, {}}, std::vector<std::byte>{std::byte{bits}});
  };
  tensor::Value scale = b.weight("s", tensor::Tensor::scalar(0.1f));
  tensor::Value zero = b.weight("z", byte(tensor::DType::kUInt8, 128));
  tensor::Value zero8 = b.weight("z8", byte(tensor::DType::kInt8, 0));
  auto activation = [&](tensor::Value v) {
    return b.node(Op::kDequantizeLinear, {b.node(Op::kQuantizeLinear, {v, scale, zero}), scale, zero});
  };
  auto weight = [&](const char* name, Dims dims) {
    const TensorType type{tensor::DType::kInt8, std::move(dims)};
    tensor::Value w = b.weight(
        name, tensor::Tensor(type, std::vector<std::byte>(type.num_elements(), std::byte{1})));
    return b.node(Op::kDequantizeLinear, {w, scale, zero8});
  };
  tensor::Value x = b.input("x", {1, 8, 6, 6});
  tensor::Value conv = b.conv(activation(x), weight("k", {16, 8, 3, 3}));
  tensor::Value grouped =
      b.conv(activation(conv), weight("g", {16, 2, 3, 3}), tensor::ConvOptions{.group = 8});
  tensor::Value rows = b.node(Op::kReshape, {grouped}, {{"shape", Dims{16, 4}}});
  tensor::Value product = b.matmul(activation(rows), weight("w", {4, 32}));
  b.output(b.matmul(product, b.weight("f", {32, 2})), "y");
  absl::StatusOr<Graph> g = b.build();
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<tensor::MatrixProduct> shapes = quantized_product_shapes({&*g, &*g}, 4);
  ASSERT_EQ(shapes.size(), 2u);
  // 4x4 pixels, 8x3x3 depth, 16 channels
  EXPECT_EQ(shapes[0], (tensor::MatrixProduct{16, 72, 16}));
  EXPECT_EQ(shapes[1], (tensor::MatrixProduct{16, 4, 32}));
  EXPECT_EQ(quantized_product_shapes({&*g}, 1).size(), 1u);

  const Graph model = weight_type_model(shapes[1], tensor::DType::kInt8, "w8");
  EXPECT_EQ(count(model, Op::kQLinearMatMul), 1);
  absl::StatusOr<std::vector<ValueType>> types = tensor::infer_types(model);
  ASSERT_TRUE(types.ok()) << types.status();
  EXPECT_EQ(types->back(), ValueType::of(TensorType{tensor::DType::kUInt8, {16, 32}}));
}

// The figure is the median product's extra time per multiply-add, nothing
// below zero, from the products onnxruntime ran both ways only.
TEST(Calibration, AUint8WeightsExtraIsTheMedianProducts) {
  const tensor::MatrixProduct shape{10, 10, 10};  // 1,000 multiply-adds
  EXPECT_FALSE(unsigned_weight_us_per_mac({}).has_value());
  EXPECT_FALSE(unsigned_weight_us_per_mac({{shape, 2.0, std::nullopt}}).has_value());
  EXPECT_DOUBLE_EQ(*unsigned_weight_us_per_mac({{shape, 3.0, 1.0}}), 0.002);
  EXPECT_DOUBLE_EQ(*unsigned_weight_us_per_mac({{shape, 1.0, 3.0}}), 0);
  EXPECT_DOUBLE_EQ(*unsigned_weight_us_per_mac(
                       {{shape, 5.0, 1.0}, {shape, 2.0, 1.0}, {shape, 9.0, 1.0}, {shape, 1.0, std::nullopt}}),
                   0.004);
  EXPECT_DOUBLE_EQ(*unsigned_weight_us_per_mac({{shape, 2.0, 1.0}, {shape, 4.0, 1.0}}), 0.002);
}

}  // namespace
}  // namespace saturn::ort

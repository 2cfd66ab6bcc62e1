// The integer kernels in the measured cost: which Quantize/Dequantize
// nodes onnxruntime runs inside them (OpContext and in_integer_kernel),
// and which quantized weights' type each product multiplies exactly.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "saturn/base/status.h"
#include "saturn/costmodel/cost_model.h"
#include "cost_models.h"
#include "saturn/tensor/builder.h"

namespace saturn {
namespace {

using namespace tensor;

using cost_tests::F;
using cost_tests::toy_profile;

// The contexts of a graph's nodes, in the graph and in an e-graph built
// from it.
class Contexts {
 public:
  explicit Contexts(const Graph& g)
      : graph_(g),
        weight_only_(weight_only_nodes(g)),
        kinds_(value_kinds(g, weight_only_)),
        types_(*infer_types(g)),
        egraph_(lang_, &shapes_),
        ids_(*add_graph(egraph_, g)),
        flow_(egraph_, shapes_) {}
  OpContext in_graph(Value v) const {
    return node_context(graph_, weight_only_, kinds_, v.node, types_);
  }
  OpContext in_egraph(Value v) const {
    return node_context(egraph_, shapes_, flow_, ids_[v.node], egraph_.nodes(ids_[v.node])[0]);
  }
  // What node `v` is charged for the quantized weight it makes onnxruntime
  // dequantize on every run.
  double surcharge_in_graph(const CostModel& model, Value v) const {
    return dequantized_weight_surcharge(model, graph_, weight_only_, v.node, types_);
  }
  double surcharge_in_egraph(const CostModel& model, Value v) const {
    return dequantized_weight_surcharge(model, egraph_, shapes_, egraph_.nodes(ids_[v.node])[0]);
  }

 private:
  const Graph& graph_;
  std::vector<bool> weight_only_;
  std::vector<ValueKinds> kinds_;
  std::vector<ValueType> types_;
  TensorLanguage lang_;
  TensorAnalysis shapes_;
  EGraph egraph_;
  std::vector<Id> ids_;
  ConvolutionOutputs flow_;
};

// A measured table without entries: the roofline prices every operator,
// and the integer kernels' Quantize/Dequantize nodes cost nothing.
absl::StatusOr<std::unique_ptr<MeasuredCostModel>> empty_measured_table() {
  return parse_measured_cost_model(R"({"device": "test", "entries": []})", "empty.json",
                                   RooflineCostModel(toy_profile()));
}

// onnxruntime runs a uint8 group's Quantize/Dequantize nodes inside its
// integer kernels, and the DequantizeLinear of a weight of the type the
// CPU's kernels multiply exactly (exact_weight_type); an int8 activation's,
// and a weight's of the other type, are kernels of their own.
TEST(CostModel, QuantizationInTheIntegerKernelsIsFree) {
  absl::StatusOr<std::unique_ptr<MeasuredCostModel>> m = empty_measured_table();
  ASSERT_TRUE(m.ok()) << message(m.status());
  auto of = [](DType dtype, Dims dims) { return ValueType::of(TensorType{dtype, std::move(dims)}); };
  const ValueType x = F({1, 64, 56, 56}), scale = F({});
  auto quantize = [&](DType to) {
    const std::vector<ValueType> in{x, scale, of(to, {})};
    return (*m)->node_cost(Op::kQuantizeLinear, {}, in, of(to, x.tensor().dims), {});
  };
  auto dequantize = [&](DType from, bool weight) {
    const std::vector<ValueType> in{of(from, x.tensor().dims), scale, of(from, {})};
    return (*m)->node_cost(Op::kDequantizeLinear, {}, in, x, OpContext{.weights_only = weight});
  };
  EXPECT_EQ(quantize(DType::kUInt8), 0);
  EXPECT_GT(quantize(DType::kInt8), 0);
  EXPECT_EQ(dequantize(DType::kUInt8, false), 0);
  EXPECT_GT(dequantize(DType::kInt8, false), 0);
  const DType exact = exact_weight_type();
  ASSERT_TRUE(exact == DType::kInt8 || exact == DType::kUInt8);
  const DType other = exact == DType::kInt8 ? DType::kUInt8 : DType::kInt8;
  EXPECT_EQ(dequantize(exact, true), 0);
  EXPECT_GT(dequantize(other, true), 0);
  EXPECT_EQ((*m)->integer_weights(), exact);

  // The same table for a CPU that multiplies the other type exactly
  // (OptimizeOptions::integer_weights): only the weights' pricing moves.
  std::shared_ptr<const CostModel> there = (*m)->with_integer_weights(other);
  ASSERT_NE(there, nullptr);
  EXPECT_EQ(there->integer_weights(), other);
  const std::vector<ValueType> weight{of(other, x.tensor().dims), scale, of(other, {})};
  const std::vector<ValueType> exact_weight{of(exact, x.tensor().dims), scale, of(exact, {})};
  EXPECT_EQ(there->node_cost(Op::kDequantizeLinear, {}, weight, x, OpContext{.weights_only = true}), 0);
  EXPECT_GT(
      there->node_cost(Op::kDequantizeLinear, {}, exact_weight, x, OpContext{.weights_only = true}), 0);
  const std::vector<ValueType> activation{of(DType::kUInt8, x.tensor().dims), scale,
                                          of(DType::kUInt8, {})};
  EXPECT_EQ(there->node_cost(Op::kDequantizeLinear, {}, activation, x, {}), 0);
  EXPECT_EQ(RooflineCostModel(toy_profile()).with_integer_weights(other), nullptr);
}

// A weight an Add reads (a product's bias) runs inside QLinearAdd only in
// the activations' type, uint8, whatever type the products multiply
// exactly, and so does an embedding table a Gather reads: its
// DequantizeLinear knows it is read as an activation, in the graph and in
// the e-graph, and is priced so.
TEST(CostModel, AWeightAnotherThanAProductReadsIsQuantizedAsAnActivation) {
  auto int8_weight = [](Dims dims) {
    TensorType type{DType::kInt8, dims};
    return Tensor(type, std::vector<std::byte>(static_cast<std::size_t>(type.num_elements())));
  };
  GraphBuilder b("biased");
  Value x = b.input("x", {4, 16});
  Value scale = b.weight("s", Tensor(TensorType{DType::kFloat32, {}}, std::vector<float>{0.1f}));
  Value zero = b.weight("z", int8_weight({}));
  Value w = b.node(Op::kDequantizeLinear, {b.weight("w", int8_weight({16, 8})), scale, zero});
  Value bias = b.node(Op::kDequantizeLinear, {b.weight("b", int8_weight({8})), scale, zero});
  b.output(b.add(b.matmul(x, w), bias), "y");
  Value table = b.node(Op::kDequantizeLinear, {b.weight("t", int8_weight({10, 16})), scale, zero});
  b.output(b.node(Op::kGather, {table, b.input("ids", {4}, DType::kInt64)}), "e");
  const Graph g = *b.build();
  const Contexts contexts(g);
  const OpContext of_w = contexts.in_graph(w), of_bias = contexts.in_graph(bias);
  EXPECT_TRUE(of_w.weights_only && of_bias.weights_only);
  EXPECT_FALSE(of_w.read_as_activation);
  EXPECT_TRUE(of_bias.read_as_activation);
  EXPECT_TRUE(contexts.in_graph(table).read_as_activation);
  EXPECT_FALSE(contexts.in_egraph(w).read_as_activation);
  EXPECT_TRUE(contexts.in_egraph(bias).read_as_activation);
  EXPECT_TRUE(contexts.in_egraph(table).read_as_activation);

  absl::StatusOr<std::unique_ptr<MeasuredCostModel>> m = empty_measured_table();
  ASSERT_TRUE(m.ok()) << message(m.status());
  for (DType exact : {DType::kInt8, DType::kUInt8}) {
    std::shared_ptr<const CostModel> there = (*m)->with_integer_weights(exact);
    auto dequantize = [&](DType from, OpContext c) {
      const std::vector<ValueType> in{ValueType::of(TensorType{from, {8}}), F({}),
                                      ValueType::of(TensorType{from, {}})};
      return there->node_cost(Op::kDequantizeLinear, {}, in, F({8}), c);
    };
    EXPECT_EQ(dequantize(DType::kUInt8, of_bias), 0) << dtype_name(exact);
    EXPECT_GT(dequantize(DType::kInt8, of_bias), 0) << dtype_name(exact);
    EXPECT_EQ(dequantize(exact, of_w), 0) << dtype_name(exact);
  }
}

// A uint8 DequantizeLinear (per tensor) into float `dims`, priced on its own.
double uint8_dequantize_cost(const CostModel& model, const Dims& dims) {
  const std::vector<ValueType> in{ValueType::of(TensorType{DType::kUInt8, dims}), F({}),
                                  ValueType::of(TensorType{DType::kUInt8, {}})};
  return model.node_cost(Op::kDequantizeLinear, {}, in, F(dims), OpContext{.on_its_own = true});
}

// onnxruntime runs a Gather of a quantized table on integers only where a
// QuantizeLinear alone reads what it gathers; elsewhere it dequantizes the
// whole table on every run, and the Gather is charged for it. In an
// e-graph a Gather of the table is always charged: the rules gather the
// integers instead (dequantize-gather).
TEST(CostModel, ATableGatheredIntoFloatIsDequantizedWhole) {
  GraphBuilder b("embeddings");
  Value scale = b.weight("s", Tensor(TensorType{DType::kFloat32, {}}, std::vector<float>{0.1f}));
  Value zero = b.weight("z", Tensor(TensorType{DType::kUInt8, {}}, std::vector<std::byte>(1)));
  auto table = [&](const char* name) {
    const TensorType type{DType::kUInt8, {50, 16}};
    Value t = b.weight(name, Tensor(type, std::vector<std::byte>(type.num_elements())));
    return b.node(Op::kDequantizeLinear, {t, scale, zero});
  };
  Value ids = b.input("ids", {4}, DType::kInt64);
  Value shared_table = table("t1");
  Value into_float = b.node(Op::kGather, {shared_table, ids});
  Value quantized = b.node(Op::kGather, {table("t2"), ids});
  b.output(b.add(into_float, b.input("x", {4, 16})), "y");
  // onnxruntime gives each reader its own copy of the DequantizeLinear.
  Value again = b.node(Op::kGather, {shared_table, b.input("more_ids", {2}, DType::kInt64)});
  b.output(again, "z");
  Value requantized = b.node(Op::kQuantizeLinear, {quantized, scale, zero});
  b.output(b.node(Op::kDequantizeLinear, {requantized, scale, zero}), "e");
  const Graph g = *b.build();
  const Contexts contexts(g);

  absl::StatusOr<std::unique_ptr<MeasuredCostModel>> m = empty_measured_table();
  ASSERT_TRUE(m.ok()) << message(m.status());
  const double table_cost = uint8_dequantize_cost(**m, {50, 16});
  ASSERT_GT(table_cost, 0);
  EXPECT_EQ(contexts.surcharge_in_graph(**m, into_float), table_cost);
  EXPECT_EQ(contexts.surcharge_in_graph(**m, again), table_cost);
  EXPECT_EQ(contexts.surcharge_in_graph(**m, quantized), 0);
  EXPECT_EQ(contexts.surcharge_in_egraph(**m, into_float), table_cost);
  EXPECT_EQ(contexts.surcharge_in_egraph(**m, quantized), table_cost);
}

// onnxruntime runs a Gemm between DequantizeLinear nodes as its integer
// QGemm only with an int32 bias, and fuses a MatMul and the Add of a bias
// into such a Gemm; otherwise it runs the Gemm in float and dequantizes
// the weight on every run, which the Gemm or the Add is charged. A MatMul
// less its bias, or one whose sum another node reads too, is not fused.
TEST(CostModel, AProductWithAFloatBiasDequantizesItsWeight) {
  GraphBuilder b("biases");
  Value scale = b.weight("s", Tensor(TensorType{DType::kFloat32, {}}, std::vector<float>{0.1f}));
  Value zero = b.weight("z", Tensor(TensorType{DType::kUInt8, {}}, std::vector<std::byte>(1)));
  auto quantized = [&](const char* name, TensorType type, Value s) {
    Value t = b.weight(name, Tensor(type, std::vector<std::byte>(type.num_bytes())));
    Value z = b.weight(std::string(name) + "_z",
                       Tensor(TensorType{type.dtype, {}}, std::vector<std::byte>(dtype_bytes(type.dtype))));
    return b.node(Op::kDequantizeLinear, {t, s, z});
  };
  Value x = b.node(Op::kDequantizeLinear,
                   {b.node(Op::kQuantizeLinear, {b.input("x", {4, 16}), scale, zero}), scale, zero});
  Value w = quantized("w", TensorType{DType::kUInt8, {16, 8}}, scale);
  Value int8_bias = quantized("b8", TensorType{DType::kInt8, {8}}, scale);
  Value int32_bias = quantized("b32", TensorType{DType::kInt32, {8}}, scale);
  Value float_gemm = b.node(Op::kGemm, {x, w, int8_bias});
  Value integer_gemm = b.node(Op::kGemm, {x, w, int32_bias});
  Value added = b.add(b.node(Op::kMatMul, {x, w}), int8_bias);
  Value subtracted = b.node(Op::kSub, {b.node(Op::kMatMul, {x, w}), b.node(Op::kNeg, {int8_bias})});
  Value shared = b.node(Op::kMatMul, {x, w});
  Value added_to_shared = b.add(shared, int8_bias);
  for (Value v : {float_gemm, integer_gemm, added, subtracted, shared, added_to_shared})
    b.output(v, fmt::format("y{}", v.node));
  const Graph g = *b.build();
  const Contexts contexts(g);

  absl::StatusOr<std::unique_ptr<MeasuredCostModel>> m = empty_measured_table();
  ASSERT_TRUE(m.ok()) << message(m.status());
  const double weight_cost = uint8_dequantize_cost(**m, {16, 8});
  ASSERT_GT(weight_cost, 0);
  EXPECT_EQ(contexts.surcharge_in_graph(**m, float_gemm), weight_cost);
  EXPECT_EQ(contexts.surcharge_in_graph(**m, integer_gemm), 0);
  EXPECT_EQ(contexts.surcharge_in_graph(**m, added), weight_cost);
  EXPECT_EQ(contexts.surcharge_in_graph(**m, subtracted), 0);
  EXPECT_EQ(contexts.surcharge_in_graph(**m, added_to_shared), 0);  // its MatMul is an output too
  EXPECT_EQ(contexts.surcharge_in_egraph(**m, float_gemm), weight_cost);
  EXPECT_EQ(contexts.surcharge_in_egraph(**m, integer_gemm), 0);
  EXPECT_EQ(contexts.surcharge_in_egraph(**m, added), weight_cost);
  EXPECT_EQ(contexts.surcharge_in_egraph(**m, subtracted), 0);
}

// A weight read by products of mostly non-negative activations (a uint8
// zero point below 64, or an int8 one below -64, as after a Relu) knows so,
// with the products' multiply-adds, in the graph and in the e-graph; one
// read by a product of signed activations does not; a reader of weights
// only does not count. Where the model mixes
// the weights' types (x86 without VNNI), an int8 weight is priced inside the
// integer kernel there and a uint8 one at what the U8U8 kernel takes beyond
// the U8S8 one; elsewhere int8 stays a kernel of its own.
TEST(CostModel, AProductOfNonNegativeActivationsTakesInt8Weights) {
  auto zero_point = [](DType dtype, int value) {
    return Tensor(TensorType{dtype, {}},
                  std::vector<std::byte>{static_cast<std::byte>(static_cast<std::uint8_t>(value))});
  };
  GraphBuilder b("products");
  Value x = b.input("x", {128, 64});
  Value scale = b.weight("s", Tensor(TensorType{DType::kFloat32, {}}, std::vector<float>{0.1f}));
  Value z8 = b.weight("z8", zero_point(DType::kInt8, 0));
  auto activation = [&](Value v, const char* name, DType dtype, int zero) {
    Value z = b.weight(name, zero_point(dtype, zero));
    return b.node(Op::kDequantizeLinear, {b.node(Op::kQuantizeLinear, {v, scale, z}), scale, z});
  };
  auto weight = [&](const char* name, Dims dims) {
    TensorType type{DType::kInt8, dims};
    Value w = b.weight(name, Tensor(type, std::vector<std::byte>(type.num_elements())));
    return b.node(Op::kDequantizeLinear, {w, scale, z8});
  };
  Value w1 = weight("w1", {64, 32}), w2 = weight("w2", {32, 16}), w3 = weight("w3", {16, 8});
  Value signed_product = b.matmul(activation(x, "zx", DType::kInt8, 3), w1);
  Value relu = b.node(Op::kRelu, {signed_product});
  Value after_relu = b.matmul(activation(relu, "zr", DType::kInt8, -128), w2);
  Value after_uint8 = b.matmul(activation(after_relu, "zu", DType::kUInt8, 63), w3);
  b.output(after_uint8, "y");
  // A reader of weights only (as the rules' Transpose, Enlarge or
  // MergeGroups of a kernel) is no product and does not count.
  b.output(b.node(Op::kTranspose, {w2}, {{"perm", std::vector<std::int64_t>{1, 0}}}), "w2t");
  const Graph g = *b.build();
  const Contexts contexts(g);
  auto in_graph = [&](Value w) { return contexts.in_graph(w); };
  EXPECT_FALSE(in_graph(w1).small_activations);
  EXPECT_TRUE(in_graph(w2).small_activations);
  EXPECT_EQ(in_graph(w2).small_activation_macs, 128.0 * 32 * 16);
  EXPECT_TRUE(in_graph(w3).small_activations);
  EXPECT_EQ(in_graph(w3).small_activation_macs, 128.0 * 16 * 8);
  EXPECT_EQ(in_graph(w1).small_activation_macs, 0);
  EXPECT_FALSE(contexts.in_egraph(w1).small_activations);
  EXPECT_TRUE(contexts.in_egraph(w2).small_activations);
  EXPECT_EQ(contexts.in_egraph(w2).small_activation_macs, 128.0 * 32 * 16);

  absl::StatusOr<std::unique_ptr<MeasuredCostModel>> table = empty_measured_table();
  ASSERT_TRUE(table.ok()) << message(table.status());
  std::shared_ptr<const CostModel> mixed = (*table)->with_integer_weights(DType::kUInt8, true);
  std::shared_ptr<const CostModel> one_type = (*table)->with_integer_weights(DType::kUInt8);
  EXPECT_TRUE(mixed->mixes_weight_types());
  EXPECT_FALSE(one_type->mixes_weight_types());
  EXPECT_FALSE((*table)->with_integer_weights(DType::kInt8, true)->mixes_weight_types());
  auto dequantize = [&](const CostModel& model, DType from, const OpContext& context) {
    const std::vector<ValueType> in{ValueType::of(TensorType{from, {32, 16}}), F({}),
                                    ValueType::of(TensorType{from, {}})};
    return model.node_cost(Op::kDequantizeLinear, {}, in, F({32, 16}), context);
  };
  const OpContext small = in_graph(w2), signed_activations = in_graph(w1);
  EXPECT_EQ(dequantize(*mixed, DType::kInt8, small), 0);
  const double unsigned_extra = dequantize(*mixed, DType::kUInt8, small);
  EXPECT_GT(unsigned_extra, 0);
  EXPECT_LT(unsigned_extra, 1);  // far below the roofline's price of the weight alone
  EXPECT_GT(dequantize(*mixed, DType::kInt8, signed_activations), 1);
  EXPECT_EQ(dequantize(*mixed, DType::kUInt8, signed_activations), 0);
  EXPECT_GT(dequantize(*one_type, DType::kInt8, small), 1);
  EXPECT_EQ(dequantize(*one_type, DType::kUInt8, small), 0);

  // A table's own figure (saturn calibrate's) prices the uint8 weight
  // instead, and stays with the model's other weight types.
  absl::StatusOr<std::unique_ptr<MeasuredCostModel>> calibrated = parse_measured_cost_model(
      R"({"entries": [], "integer_weights": {"unsigned_us_per_mac": 1e-5, "products": []}})",
      "calibrated.json", RooflineCostModel(toy_profile()));
  ASSERT_TRUE(calibrated.ok()) << message(calibrated.status());
  EXPECT_EQ((*calibrated)->unsigned_weight_us_per_mac(), 1e-5);
  EXPECT_LT((*table)->unsigned_weight_us_per_mac(), 1e-5);  // the built-in figure
  // The built-in figure is one thread's, shared among a table's threads.
  absl::StatusOr<std::unique_ptr<MeasuredCostModel>> two_threads = parse_measured_cost_model(
      R"({"entries": [], "threads": 2})", "two.json", RooflineCostModel(toy_profile()));
  ASSERT_TRUE(two_threads.ok()) << message(two_threads.status());
  EXPECT_DOUBLE_EQ((*two_threads)->unsigned_weight_us_per_mac() * 2,
                   (*table)->unsigned_weight_us_per_mac());
  std::shared_ptr<const CostModel> calibrated_mixed =
      (*calibrated)->with_integer_weights(DType::kUInt8, true);
  EXPECT_DOUBLE_EQ(dequantize(*calibrated_mixed, DType::kUInt8, small), 128.0 * 32 * 16 * 1e-5);
  EXPECT_DOUBLE_EQ(unsigned_extra, 128.0 * 32 * 16 * (*table)->unsigned_weight_us_per_mac());
}

// A table whose figure for the weights' type is not a time says where.
TEST(CostModel, ATablesWeightTypeFigureMustBeATime) {
  for (const char* figure : {R"("integer_weights": 3)", R"("integer_weights": {})",
                             R"("integer_weights": {"unsigned_us_per_mac": -1})"}) {
    absl::StatusOr<std::unique_ptr<MeasuredCostModel>> table = parse_measured_cost_model(
        std::string(R"({"entries": [], )") + figure + "}", "bad.json",
        RooflineCostModel(toy_profile()));
    ASSERT_FALSE(table.ok()) << figure;
    EXPECT_NE(message(table.status()).find("bad.json: \"integer_weights\""), std::string::npos)
        << message(table.status());
  }
}

}  // namespace
}  // namespace saturn

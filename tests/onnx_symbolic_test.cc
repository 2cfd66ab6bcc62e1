// Symbolic dimensions: sized for costing at import, written back as symbols
// at export, with reshapes and slices that hold at any size; a graph that
// holds at its given sizes only fails to export, naming the node and symbol.
#include <string>
#include <vector>

#include "saturn/base/status.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "saturn/tensor/builder.h"
#include "saturn/onnx/exporter.h"
#include "saturn/onnx/onnx.h"
#include "saturn/tensor/probe.h"
#include "saturn/tests/onnx_models.h"

namespace saturn::tensor {
namespace {

using onnx_io::Ints;

// relu_model() with the first axis of its input and output symbolic.
onnx::ModelProto batch_relu_model() {
  onnx::ModelProto m = relu_model();
  for (auto* v : {m.mutable_graph()->mutable_input(0), m.mutable_graph()->mutable_output(0)})
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param(
        "batch");
  return m;
}

std::vector<std::string> dim_names(const onnx::ValueInfoProto& v) {
  std::vector<std::string> names;
  for (const auto& d : v.type().tensor_type().shape().dim())
    names.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param());
  return names;
}

TEST(OnnxSymbolic, AnUnsizedDimensionStandsAtOneAndStaysSymbolic) {
  absl::StatusOr<Graph> g = parse_onnx_model(bytes_of(batch_relu_model()), "m.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(infer_types(*g)->at(g->outputs[0].node).tensor().dims, (Dims{kDefaultSymbolSize, 3}));
  EXPECT_EQ(g->symbols.sizes, (std::map<std::string, std::int64_t>{{"batch", 1}}));
  EXPECT_EQ(g->symbols.axes.at("x"), (std::vector<std::string>{"batch", ""}));
  EXPECT_EQ(g->symbols.axes.at("y"), (std::vector<std::string>{"batch", ""}));

  OnnxImportOptions sized;
  sized.dims["batch"] = 4;
  g = parse_onnx_model(bytes_of(batch_relu_model()), "m.onnx", sized);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(infer_types(*g)->at(g->outputs[0].node).tensor().dims, (Dims{4, 3}));

  absl::StatusOr<std::string> bytes = to_onnx_model(*g);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  onnx::ModelProto back;
  ASSERT_TRUE(back.ParseFromString(*bytes));
  EXPECT_EQ(dim_names(back.graph().input(0)), (std::vector<std::string>{"batch", "3"}));
  EXPECT_EQ(dim_names(back.graph().output(0)), (std::vector<std::string>{"batch", "3"}));
}

// A value the shape arithmetic computes that changes with the sizes is
// not folded; its value at the given sizes is kept for the self-check.
TEST(OnnxSymbolic, AShapeThatChangesWithTheSizesIsKnownAtTheGivenSizes) {
  onnx::ModelProto m = batch_relu_model();
  onnx::NodeProto* shape = m.mutable_graph()->add_node();
  shape->set_op_type("Shape");
  shape->add_input("x");
  shape->add_output("x_shape");
  OnnxImportOptions sized;
  sized.dims["batch"] = 4;
  absl::StatusOr<Graph> g = parse_onnx_model(bytes_of(m), "m.onnx", sized);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(g->size_values.contains("x_shape"));
  const Tensor& value = *g->size_values.at("x_shape");
  EXPECT_EQ(Ints(value.ints().begin(), value.ints().end()), (Ints{4, 3}));
}

TEST(OnnxSymbolic, AnUnnamedDynamicAxisGetsAName) {
  onnx::ModelProto m = batch_relu_model();
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->clear_dim_param();
  absl::StatusOr<Graph> g = parse_onnx_model(bytes_of(m), "m.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->symbols.sizes.contains("unk__x_0"));
}

TEST(OnnxSymbolic, ReshapesAreWrittenWithCopiedAndInferredAxes) {
  // [B,S,64] -> [B,S,4,16]: the symbolic axes are copied.
  auto r = generic_reshape({2, 16, 64}, {9, 27, 64}, {2, 16, 4, 16});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Ints{0, 0, 4, 16}));
  EXPECT_EQ(r->probe, (Dims{9, 27, 4, 16}));
  // [B,S,64] -> [B*S,64]: the merged axis takes the rest.
  r = generic_reshape({2, 16, 64}, {9, 27, 64}, {32, 64});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Ints{-1, 64}));
  EXPECT_EQ(r->probe, (Dims{243, 64}));
  // A batch of 1 squeezed away comes back as the axis that takes the rest.
  r = generic_reshape({1, 128, 768}, {8, 128, 768}, {128, 768});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Ints{-1, 768}));
  // [B*N,64] -> [B,N,4,16] at a batch of 1: the batch's part of the merged
  // axis goes first (row-major), not into the tokens' axis.
  r = generic_reshape({196, 64}, {1568, 64}, {1, 196, 4, 16});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Ints{-1, 196, 4, 16}));
  EXPECT_EQ(r->probe, (Dims{8, 196, 4, 16}));
  r = generic_reshape({392, 64}, {1764, 64}, {2, 196, 64});  // a batch of 2, probed at 9
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Ints{-1, 196, 64}));
  // [N*B,768] -> [N,B,768] (sequence-first, as torch's MultiheadAttention
  // computes): the batch is the inner part of the merged axis.
  r = generic_reshape({197, 768}, {1576, 768}, {197, 1, 768});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Ints{197, -1, 768}));
  EXPECT_EQ(r->probe, (Dims{197, 8, 768}));
  // [B*S,768] -> [B,S,768], the batch and the tokens merged: each takes an
  // axis of its own, the batch read at run time (at a batch of 1 a -1 alone
  // would hand the tokens' axis the batch too: [1, B*S, 768]).
  const std::vector<SymbolSize> batch_seq{{1, 8}, {128, 139}};
  r = generic_reshape({128, 768}, {1112, 768}, {1, 128, 768}, batch_seq);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Ints{kAxisAtRunTime, -1, 768}));
  EXPECT_EQ(r->probe, (Dims{8, 139, 768}));
  const std::vector<SymbolSize> batch2_seq{{2, 9}, {128, 139}};
  r = generic_reshape({256, 2304}, {1251, 2304}, {2, 128, 2304}, batch2_seq);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Ints{kAxisAtRunTime, -1, 2304}));
  EXPECT_EQ(r->probe, (Dims{9, 139, 2304}));
  // Merging them again needs no symbol of its own.
  r = generic_reshape({1, 128, 768}, {8, 139, 768}, {128, 768}, batch_seq);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Ints{-1, 768}));
  // Fixed axes only: written as they are.
  r = generic_reshape({2, 6}, {2, 6}, {3, 4});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shape, (Ints{3, 4}));
  // [6,4] -> [2,12] with the 6 symbolic: no 0/-1 form keeps the batch's
  // row-major block in one axis.
  EXPECT_FALSE(generic_reshape({6, 4}, {13, 4}, {2, 12}));
}

TEST(OnnxSymbolic, RegionInputsNameTheirAxesByTheSymbolsTheyFollow) {
  Symbols symbols;
  symbols.sizes = {{"batch", 2}, {"seq", 16}};
  const ProbeSizes probe = probe_sizes(symbols);
  EXPECT_EQ(probe.at("batch"), 9);  // each symbol plus a prime of its own
  EXPECT_EQ(probe.at("seq"), 27);
  EXPECT_EQ(axis_expression(64, 64, symbols, probe), "");
  EXPECT_EQ(axis_expression(16, 27, symbols, probe), "seq");
  EXPECT_EQ(axis_expression(32, 243, symbols, probe), "batch*seq");
  EXPECT_EQ(axis_expression(17, 28, symbols, probe), "?");  // seq + 1: no product says it
  EXPECT_EQ(axis_size("batch*seq", probe), 243);
  EXPECT_FALSE(axis_size("?", probe));
  symbols.axes["in0"] = {"batch*seq", "", "?"};
  EXPECT_FALSE(probe_input_type(symbols, probe, "in0",
                                ValueType::of(TensorType{DType::kFloat32, {32, 4, 17}})));
  symbols.axes["in0"] = {"batch*seq", ""};
  std::optional<ValueType> t = probe_input_type(
      symbols, probe, "in0", ValueType::of(TensorType{DType::kFloat32, {32, 4}}));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tensor().dims, (Dims{243, 4}));
}

TEST(OnnxSymbolic, AGraphThatFixesASymbolicSizeDoesNotExport) {
  // x [batch=2, 4] split into two rows: the split sizes fix the batch.
  GraphBuilder b("halves");
  b.output(b.relu(b.split(b.input("x", {2, 4}), 0, {1, 1})[0]), "y");
  absl::StatusOr<Graph> g = b.build();
  ASSERT_TRUE(g.ok()) << g.status();
  g->symbols.sizes["batch"] = 2;
  g->symbols.axes["x"] = {"batch", ""};
  absl::StatusOr<std::string> bytes = to_onnx_model(*g);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(message(bytes.status()).find("holds only at the given size of batch"),
            std::string_view::npos)
      << bytes.status();
  EXPECT_NE(message(bytes.status()).find("Split"), std::string_view::npos) << bytes.status();

  // Without the symbol the same graph exports.
  g->symbols = {};
  EXPECT_TRUE(to_onnx_model(*g).ok());
}

}  // namespace
}  // namespace saturn::tensor

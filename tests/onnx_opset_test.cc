// Models at opsets newer than Debian's libonnx knows (18-23): read through
// opset 17's spelling, computed as their opset defines, written back at
// their own opset; a node with no opset-17 spelling stays as the file writes
// it (an opaque operator typed by the file's value_info; without one, an
// error naming the node).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "saturn/base/status.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/onnx/onnx.h"
#include "saturn/tests/onnx_models.h"

namespace saturn::tensor {
namespace {

void set_type(onnx::ValueInfoProto* v, const std::string& name, std::vector<int> dims,
              int elem = onnx::TensorProto::FLOAT) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  for (int d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op,
                          std::vector<std::string> in, std::vector<std::string> out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out[0] + "_node");
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

// x [2, 4] -> mean over the last axis (axes as an input, opset 18), the two
// halves of Split(num_outputs=2) added, and Gelu of x (opset 20).
onnx::ModelProto newer_opset_model(int opset) {
  onnx::ModelProto m;
  m.set_ir_version(10);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("newer");
  set_type(g->add_input(), "x", {2, 4});
  auto* axes = g->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(onnx::TensorProto::INT64);
  axes->add_dims(1);
  axes->add_int64_data(-1);
  add_node(g, "ReduceMean", {"x", "axes"}, {"mean"});
  auto* split = add_node(g, "Split", {"x"}, {"left", "right"});
  auto* a = split->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  a = split->add_attribute();
  a->set_name("num_outputs");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(2);
  add_node(g, "Add", {"left", "right"}, {"halves"});
  set_type(g->add_output(), "mean", {2, 1});
  set_type(g->add_output(), "halves", {2, 2});
  if (opset >= 20) {
    add_node(g, "Gelu", {"x"}, {"gelu"});
    set_type(g->add_output(), "gelu", {2, 4});
  }
  return m;
}

TEST(OnnxNewerOpsets, Opset20ModelComputesWhatItsOpsetDefines) {
  absl::StatusOr<Graph> g = parse_onnx_model(bytes_of(newer_opset_model(20)), "newer.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  Tensor x(TensorType{DType::kFloat32, {2, 4}},
           std::vector<float>{-2.f, -1.f, 0.5f, 3.f, 1.f, 2.f, 3.f, 4.f});
  absl::StatusOr<std::vector<Tensor>> out = evaluate(*g, {{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  const std::vector<float> mean((*out)[0].floats().begin(), (*out)[0].floats().end());
  EXPECT_EQ(mean, (std::vector<float>{0.125f, 2.5f}));
  const std::vector<float> halves((*out)[1].floats().begin(), (*out)[1].floats().end());
  EXPECT_EQ(halves, (std::vector<float>{-1.5f, 2.f, 4.f, 6.f}));
  for (int i = 0; i < 8; ++i) {
    const float v = x.floats()[i];
    EXPECT_NEAR((*out)[2].floats()[i], 0.5f * v * (1 + std::erf(v / std::sqrt(2.f))), 1e-6f);
  }
  // The Gelu is the IR's, not the spelling the lowering wrote for libonnx.
  EXPECT_EQ(op_counts(*g)[Op::kGelu], 1);
  EXPECT_EQ(op_counts(*g)[Op::kErf], 0);
  // Written back at its own opset, in that opset's spelling, and read again
  // to the same graph.
  absl::StatusOr<std::string> bytes = to_onnx_model(*g);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  onnx::ModelProto back;
  ASSERT_TRUE(back.ParseFromString(*bytes));
  EXPECT_EQ(back.opset_import(0).version(), 20);
  EXPECT_GE(back.ir_version(), 9);
  for (const onnx::NodeProto& n : back.graph().node()) {
    if (n.op_type() == "ReduceMean") {
      EXPECT_EQ(n.input_size(), 2);  // axes as an input
    }
    for (const onnx::AttributeProto& a : n.attribute()) EXPECT_NE(a.name(), "axes") << n.op_type();
  }
  absl::StatusOr<Graph> again = parse_onnx_model(*bytes, "back.onnx");
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::vector<Tensor>> out_again = evaluate(*again, {{"x", x}});
  ASSERT_TRUE(out_again.ok()) << out_again.status();
  for (std::size_t k = 0; k < out->size(); ++k) {
    const auto a = (*out)[k].floats(), b = (*out_again)[k].floats();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << "output " << k;
  }
}

TEST(OnnxNewerOpsets, EveryOpsetUpTo23IsRead) {
  for (int opset = 18; opset <= 23; ++opset) {
    absl::StatusOr<Graph> g =
        parse_onnx_model(bytes_of(newer_opset_model(opset)), "newer.onnx");
    EXPECT_TRUE(g.ok()) << "opset " << opset << ": " << g.status();
  }
  onnx::ModelProto m = newer_opset_model(24);
  absl::StatusOr<Graph> g = parse_onnx_model(bytes_of(m), "newer.onnx");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(message(g.status()).find("opset 24 is not supported"), std::string::npos)
      << g.status();
}

// The node computing `value` is read as an opaque operator of its own
// opset, for `why`.
void expect_kept_as_written(const Graph& g, const std::string& value, const std::string& why) {
  auto it = g.opaque_reasons.find(value);
  ASSERT_NE(it, g.opaque_reasons.end()) << value;
  EXPECT_NE(it->second.find(why), std::string::npos) << it->second;
  EXPECT_EQ(opaque_op_types(g).size(), 1u);
}

TEST(OnnxNewerOpsets, AReductionByAxesComputedAtRunTimeIsKeptAsWritten) {
  onnx::ModelProto m = newer_opset_model(18);
  auto* g = m.mutable_graph();
  g->clear_initializer();
  set_type(g->add_input(), "axes", {1}, onnx::TensorProto::INT64);
  // Typed by the graph output it is.
  absl::StatusOr<Graph> typed = parse_onnx_model(bytes_of(m), "newer.onnx");
  ASSERT_TRUE(typed.ok()) << typed.status();
  expect_kept_as_written(*typed, "mean", "its axes 'axes' is computed at run time");
  // Written back as the file wrote it: the default domain, at the model's opset.
  absl::StatusOr<std::string> bytes = to_onnx_model(*typed);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(*bytes));
  EXPECT_EQ(out.opset_import_size(), 1);
  bool found = false;
  for (const onnx::NodeProto& n : out.graph().node()) {
    if (n.op_type() != "ReduceMean") continue;
    found = true;
    EXPECT_EQ(n.domain(), "");
    EXPECT_EQ(n.input_size(), 2);
  }
  EXPECT_TRUE(found);
}

TEST(OnnxNewerOpsets, AnOperatorNewerThanOpset17IsKeptAsWrittenWhereTheFileTypesIt) {
  onnx::ModelProto m = newer_opset_model(23);
  auto* g = m.mutable_graph();
  set_type(g->add_input(), "i", {2, 4}, onnx::TensorProto::INT32);
  add_node(g, "BitwiseAnd", {"i", "i"}, {"anded"});
  add_node(g, "Cast", {"anded"}, {"as_float"})->add_attribute()->set_name("to");
  auto* to = g->mutable_node(g->node_size() - 1)->mutable_attribute(0);
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  add_node(g, "Add", {"as_float", "x"}, {"sum"});
  set_type(g->add_output(), "sum", {2, 4});
  absl::StatusOr<Graph> untyped = parse_onnx_model(bytes_of(m), "newer.onnx");
  ASSERT_FALSE(untyped.ok());
  const std::string text(message(untyped.status()));
  EXPECT_NE(text.find("newer.onnx"), std::string::npos) << text;
  EXPECT_NE(text.find("node 'anded_node' (BitwiseAnd): the operator is newer than opset"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("the type of 'anded' cannot be inferred"), std::string::npos) << text;

  set_type(g->add_value_info(), "anded", {2, 4}, onnx::TensorProto::INT32);
  absl::StatusOr<Graph> typed = parse_onnx_model(bytes_of(m), "newer.onnx");
  ASSERT_TRUE(typed.ok()) << typed.status();
  expect_kept_as_written(*typed, "anded", "the operator is newer than opset 17");
  EXPECT_EQ(op_counts(*typed)[Op::kCast], 1);  // its readers stay typed IR operators
}

TEST(OnnxNewerOpsets, ALaterOperatorWithoutItsSpellingsAttributesIsAnErrorNamingIt) {
  onnx::ModelProto m = newer_opset_model(21);
  add_node(m.mutable_graph(), "GroupNormalization", {"x", "x", "x"}, {"grouped"});  // no num_groups
  absl::StatusOr<Graph> r = parse_onnx_model(bytes_of(m), "newer.onnx");
  ASSERT_FALSE(r.ok());
  const std::string text(message(r.status()));
  EXPECT_NE(text.find("node 'grouped_node' (GroupNormalization): GroupNormalization-21 requires "
                      "attribute num_groups, which the node lacks"),
            std::string::npos)
      << text;
}

// A later operator its own definition refuses (a Gelu without its input)
// is an error naming it, as the checker makes one of an operator it knows,
// not a node kept as written and the file handed back unchanged.
TEST(OnnxNewerOpsets, ALaterOperatorWithoutItsInputIsAnErrorNamingIt) {
  onnx::ModelProto m = newer_opset_model(21);
  add_node(m.mutable_graph(), "Gelu", {}, {"no_input"});
  absl::StatusOr<Graph> r = parse_onnx_model(bytes_of(m), "newer.onnx");
  ASSERT_FALSE(r.ok());
  const std::string text(message(r.status()));
  EXPECT_NE(text.find("newer.onnx"), std::string::npos) << text;
  EXPECT_NE(text.find("node 'no_input_node' (Gelu): Gelu-20 takes 1 input, the node has 0"), std::string::npos) << text;
}

// A node kept as written (no opset-17 spelling) is checked against its
// operator's schema at the model's opset, which libonnx does not have.
TEST(OnnxNewerOpsets, AKeptOperatorOutsideItsSchemaIsAnErrorNamingIt) {
  onnx::ModelProto m = newer_opset_model(21);
  add_node(m.mutable_graph(), "Col2Im", {"x", "x"}, {"image"});
  absl::StatusOr<Graph> r = parse_onnx_model(bytes_of(m), "newer.onnx");
  ASSERT_FALSE(r.ok());
  const std::string text(message(r.status()));
  EXPECT_NE(text.find("newer.onnx"), std::string::npos) << text;
  EXPECT_NE(text.find("node 'image_node' (Col2Im): Col2Im-18 takes 3 inputs, the node has 2"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace saturn::tensor

// Reads outside a tensor, from models built here as exporters write them:
// a Gather of constant data by an index past its axis is kept as the file
// has it (the runtime would fail on it too), and integer shape arithmetic
// (Shape, Cast to int32, Slice) whose bounds fall outside the data at one
// size or another computes at every size. Both crashed saturn once, in the
// import's constant folding and in the self-check at other sizes.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "saturn/base/status.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/onnx/onnx.h"
#include "saturn/tests/onnx_models.h"

namespace saturn::tensor {
namespace {

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& type,
                          std::vector<std::string> inputs, const std::string& output) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(type);
  n->set_name(output + "_node");
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(output);
  return n;
}

void set_int(onnx::NodeProto* n, const std::string& name, std::int64_t value) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void add_int64s(onnx::GraphProto* g, const std::string& name, std::vector<std::int64_t> values) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<std::int64_t>(values.size()));
  for (std::int64_t v : values) t->add_int64_data(v);
}

// The graph's only output, renamed and typed float32 of `dims` (-1: the
// symbol "batch").
void set_output(onnx::GraphProto* g, const std::string& name, std::vector<std::int64_t> dims) {
  onnx::ValueInfoProto* out = g->mutable_output(0);
  out->set_name(name);
  auto* shape = out->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (std::int64_t d : dims) {
    if (d < 0)
      shape->add_dim()->set_dim_param("batch");
    else
      shape->add_dim()->set_dim_value(d);
  }
}

// y = x + Cast<float>(Gather(table, Range(from, from + 2, 1))): the table
// is int32 [5, 3] and the indices are computed, as position ids are (ONNX's
// inference checks constant indices); the import folds them at the given
// sizes, and then the gather.
onnx::ModelProto gather_model(std::int64_t from) {
  onnx::ModelProto m = relu_model();
  onnx::GraphProto* g = m.mutable_graph();
  g->clear_node();
  onnx::TensorProto* table = g->add_initializer();
  table->set_name("table");
  table->set_data_type(onnx::TensorProto::INT32);
  table->add_dims(5);
  table->add_dims(3);
  for (int v = 0; v < 15; ++v) table->add_int32_data(v);
  for (auto [name, value] : {std::pair{"from", from}, {"to", from + 2}, {"by", std::int64_t{1}}}) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_int64_data(value);
  }
  add_node(g, "Range", {"from", "to", "by"}, "rows");
  add_node(g, "Gather", {"table", "rows"}, "picked");
  set_int(add_node(g, "Cast", {"picked"}, "picked_f"), "to", onnx::TensorProto::FLOAT);
  add_node(g, "Add", {"x", "picked_f"}, "y");
  return m;
}

TEST(OnnxReads, AGatherOfConstantsPastItsAxisIsKeptAsTheFileHasIt) {
  absl::StatusOr<Graph> g = parse_onnx_model(bytes_of(gather_model(7)), "m.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(g->opaque_reasons.contains("picked")) << "the Gather past its axis is not opaque";
  const std::string& why = g->opaque_reasons.at("picked");
  EXPECT_NE(why.find("index 7"), std::string::npos) << why;
  // It stays for the runtime, whose error the interpreter gives too, naming
  // the node, and the model exports as it came.
  absl::StatusOr<std::vector<Tensor>> out = evaluate(*g, random_inputs(*g, 1));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(message(out.status()).find("picked"), std::string_view::npos) << out.status();
  EXPECT_TRUE(to_onnx_model(*g).ok());

  // In range (rows -1 and 0), the int32 rows fold.
  g = parse_onnx_model(bytes_of(gather_model(-1)), "m.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_FALSE(g->opaque_reasons.contains("picked"));
  const Inputs in = random_inputs(*g, 1);
  out = evaluate(*g, in);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> rows{12, 13, 14, 0, 1, 2};
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_FLOAT_EQ((*out)[0].floats()[i], in.at("x").floats()[i] + rows[i]);
}

// y = x + Cast<float>(Slice(Cast<int32>(Shape(x)), 1, 5)): x is [batch, 3],
// so the slice reads past its data at every size, and its data is int32.
onnx::ModelProto sliced_shape_model(int opset) {
  onnx::ModelProto m = relu_model();
  m.mutable_opset_import(0)->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->clear_node();
  g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
  add_node(g, "Shape", {"x"}, "shape");
  set_int(add_node(g, "Cast", {"shape"}, "shape32"), "to", onnx::TensorProto::INT32);
  if (opset < 10) {
    onnx::NodeProto* s = add_node(g, "Slice", {"shape32"}, "tail");
    for (auto [name, value] : {std::pair{"starts", 1}, {"ends", 5}, {"axes", 0}}) {
      onnx::AttributeProto* a = s->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INTS);
      a->add_ints(value);
    }
  } else {
    add_int64s(g, "starts", {1});
    add_int64s(g, "ends", {5});
    add_node(g, "Slice", {"shape32", "starts", "ends"}, "tail");
  }
  set_int(add_node(g, "Cast", {"tail"}, "tail_f"), "to", onnx::TensorProto::FLOAT);
  add_node(g, "Add", {"x", "tail_f"}, "y");
  set_output(g, "y", {-1, 3});
  return m;
}

TEST(OnnxReads, AnIntegerSliceWhoseBoundsFallOutsideItsDataComputesAtEverySize) {
  for (int opset : {9, 13}) {
    for (std::int64_t batch : {1, 2, 3, 7}) {
      OnnxImportOptions sized;
      sized.dims["batch"] = batch;
      absl::StatusOr<Graph> g = parse_onnx_model(bytes_of(sliced_shape_model(opset)), "m.onnx", sized);
      ASSERT_TRUE(g.ok()) << g.status();
      Inputs in = random_inputs(*g, 1);
      absl::StatusOr<std::vector<Tensor>> out = evaluate(*g, in);
      ASSERT_TRUE(out.ok()) << "opset " << opset << ", batch " << batch << ": " << out.status();
      ASSERT_EQ((*out)[0].dims(), (Dims{batch, 3}));
      // The slice keeps the last dimension, 3.
      for (std::size_t i = 0; i < (*out)[0].floats().size(); ++i)
        EXPECT_FLOAT_EQ((*out)[0].floats()[i], in.at("x").floats()[i] + 3.0f);
    }
  }
}

}  // namespace
}  // namespace saturn::tensor

// Small hand-built ONNX models shared by the ONNX tests.
#pragma once

#include <string>

#include "onnx/onnx_pb.h"

namespace saturn::tensor {

// A small valid model: y = Relu(x), opset 13.
inline onnx::ModelProto relu_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("relu");
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->add_input("x");
  n->add_output("y");
  for (auto* v : {g->add_input(), g->add_output()}) {
    v->set_name(v == &g->input(0) ? "x" : "y");
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(2);
    t->mutable_shape()->add_dim()->set_dim_value(3);
  }
  return m;
}

inline std::string bytes_of(const onnx::ModelProto& m) {
  std::string out;
  m.SerializeToString(&out);
  return out;
}

// y = x + b, where b is an input whose default is the initializer b (IR >= 4).
inline onnx::ModelProto add_with_default_model() {
  onnx::ModelProto m = relu_model();
  onnx::GraphProto* g = m.mutable_graph();
  g->mutable_node(0)->set_op_type("Add");
  g->mutable_node(0)->add_input("b");
  *g->add_input() = g->input(0);
  g->mutable_input(1)->set_name("b");
  onnx::TensorProto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(2);
  b->add_dims(3);
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) b->add_float_data(v);
  return m;
}

}  // namespace saturn::tensor

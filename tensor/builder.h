// GraphBuilder: builds a type-checked Graph one operator at a time. The zoo,
// the tests and the examples use it.
//
//   GraphBuilder b("mlp");
//   Value x = b.input("x", {8, 256});
//   Value h = b.relu(b.linear("fc1", x, 512));
//   b.output(b.linear("fc2", h, 10), "logits");
//   absl::StatusOr<Graph> g = b.build();
//
// The first operator that does not type-check records an error naming it;
// later calls return placeholder values and build() returns that error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "saturn/tensor/graph.h"

namespace saturn::tensor {

struct Value {
  int node = -1;
  bool valid() const { return node >= 0; }
};

struct ConvOptions {
  Dims strides{1, 1};
  Dims pads{0, 0, 0, 0};  // top, left, bottom, right
  Dims dilations{1, 1};
  std::int64_t group = 1;
  std::string activation = "none";  // none, relu, sigmoid, tanh
};

struct PoolOptions {
  Dims kernel{2, 2};
  Dims strides{1, 1};
  Dims pads{0, 0, 0, 0};
  bool count_include_pad = false;  // AveragePool only
};

// A convolution layer whose weight (and bias) the builder creates.
struct ConvLayer {
  std::int64_t out_channels = 0;
  Dims kernel{3, 3};
  Dims stride{1, 1};
  Dims pad{-1, -1};  // per axis, both sides; -1: kernel/2 ("same" at stride 1)
  std::int64_t group = 1;
  bool bias = true;
  std::string activation = "none";
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name);

  // ---- Leaves ----------------------------------------------------------
  Value input(std::string name, Dims dims, DType dtype = DType::kFloat32);
  // Seeded uniform values in ±sqrt(3 / fan_in) (±0.1 for vectors).
  Value weight(std::string name, Dims dims);
  Value weight(std::string name, Dims dims, float low, float high);
  Value weight(std::string name, Tensor data);
  // A tensor of `dims` filled with `value` (a scalar by default).
  Value constant(float value, Dims dims = {});

  // Any operator; attributes are normalized and checked.
  Value node(Op op, std::vector<Value> inputs, Attributes attributes = {}, std::string name = {});

  // ---- Operators -------------------------------------------------------
  Value matmul(Value a, Value b) { return node(Op::kMatMul, {a, b}); }
  Value gemm(Value a, Value b, Value c, bool trans_b = false);
  Value conv(Value x, Value w, const ConvOptions& options = {});
  Value conv(Value x, Value w, Value bias, const ConvOptions& options);
  Value add(Value a, Value b) { return node(Op::kAdd, {a, b}); }
  Value sub(Value a, Value b) { return node(Op::kSub, {a, b}); }
  Value mul(Value a, Value b) { return node(Op::kMul, {a, b}); }
  Value div(Value a, Value b) { return node(Op::kDiv, {a, b}); }
  Value pow(Value a, Value b) { return node(Op::kPow, {a, b}); }
  Value sqrt(Value x) { return node(Op::kSqrt, {x}); }
  Value neg(Value x) { return node(Op::kNeg, {x}); }
  Value erf(Value x) { return node(Op::kErf, {x}); }
  Value relu(Value x) { return node(Op::kRelu, {x}); }
  Value sigmoid(Value x) { return node(Op::kSigmoid, {x}); }
  Value tanh(Value x) { return node(Op::kTanh, {x}); }
  Value gelu(Value x) { return node(Op::kGelu, {x}); }
  Value clip(Value x, float low, float high);
  Value softmax(Value x, std::int64_t axis = -1);
  Value layer_norm(Value x, Value scale, Value bias, std::int64_t axis = -1, float epsilon = 1e-5f);
  Value batch_norm(Value x, Value scale, Value bias, Value mean, Value var, float epsilon = 1e-5f);
  Value reduce_mean(Value x, Dims axes, bool keepdims = true);
  Value transpose(Value x, Dims perm);
  Value reshape(Value x, Dims shape);
  Value flatten(Value x, std::int64_t axis = 1);
  Value concat(std::vector<Value> inputs, std::int64_t axis);
  // One value per part; the Split node yields a tuple read with TupleGet.
  std::vector<Value> split(Value x, std::int64_t axis, Dims sizes);
  Value slice(Value x, Dims starts, Dims ends, Dims axes = {}, Dims steps = {});
  Value gather(Value data, Value indices, std::int64_t axis = 0);
  Value pad(Value x, Dims pads, float value = 0.0f);
  Value max_pool(Value x, const PoolOptions& options);
  Value average_pool(Value x, const PoolOptions& options);
  Value global_average_pool(Value x) { return node(Op::kGlobalAveragePool, {x}); }
  Value identity(Value x) { return node(Op::kIdentity, {x}); }

  // ---- Layers (create their own weights, named "<name>.weight" etc.) ---
  Value conv2d(std::string_view name, Value x, const ConvLayer& layer);
  // x @ W + b over the last axis.
  Value linear(std::string_view name, Value x, std::int64_t out_features, bool bias = true);
  // LayerNormalization over the last axis with its own scale and bias.
  Value layer_norm(std::string_view name, Value x);

  // ---- Reading ---------------------------------------------------------
  // The type of a tensor value (a placeholder after an error).
  const TensorType& type(Value v) const;
  const Dims& dims(Value v) const { return type(v).dims; }
  std::int64_t dim(Value v, std::int64_t axis) const;
  const absl::Status& status() const { return status_; }

  void output(Value v, std::string name);
  // The graph, or the first error.
  absl::StatusOr<Graph> build();

 private:
  Value append(Node node, std::vector<Value> inputs);
  Value add_weight(std::string name, Dims dims, WeightInit init);
  void set_error(absl::Status status);

  Graph graph_;
  std::vector<ValueType> types_;
  absl::flat_hash_set<std::string> names_;
  absl::Status status_;
};

}  // namespace saturn::tensor

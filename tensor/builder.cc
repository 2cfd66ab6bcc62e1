#include "saturn/tensor/builder.h"

#include <cmath>

#include "saturn/base/status.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"

namespace saturn::tensor {

GraphBuilder::GraphBuilder(std::string graph_name) { graph_.name = std::move(graph_name); }

void GraphBuilder::set_error(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
}

Value GraphBuilder::append(Node n, std::vector<Value> inputs) {
  if (!status_.ok()) return Value{};
  for (Value v : inputs) {
    if (!v.valid() || v.node >= graph_.size()) {
      set_error(absl::InvalidArgumentError(
          fmt::format("{}: an input is not a value of this builder", op_name(n.op))));
      return Value{};
    }
    n.inputs.push_back(v.node);
  }
  std::string where = n.name.empty() ? std::string(op_name(n.op)) : n.name;
  absl::StatusOr<Attributes> attrs = normalize_attributes(n.op, std::move(n.attributes));
  if (!attrs.ok()) {
    set_error(absl::InvalidArgumentError(
        fmt::format("{} node {}: {}", graph_.name, where, message(attrs.status()))));
    return Value{};
  }
  n.attributes = std::move(*attrs);
  std::vector<ValueType> in;
  for (int i : n.inputs) in.push_back(types_[i]);
  absl::StatusOr<ValueType> t = infer_type(n.op, n.attributes, in);
  if (!t.ok()) {
    set_error(absl::InvalidArgumentError(
        fmt::format("{} node {}: {}", graph_.name, where, message(t.status()))));
    return Value{};
  }
  if (!n.name.empty() && !names_.insert(n.name).second) {
    set_error(absl::InvalidArgumentError(
        fmt::format("{}: the name '{}' is used twice", graph_.name, n.name)));
    return Value{};
  }
  graph_.nodes.push_back(std::move(n));
  types_.push_back(std::move(*t));
  return Value{graph_.size() - 1};
}

Value GraphBuilder::input(std::string name, Dims dims, DType dtype) {
  Node n{Op::kInput, leaf_attributes(name, std::move(dims), dtype), {}, name};
  return append(std::move(n), {});
}

Value GraphBuilder::add_weight(std::string name, Dims dims, WeightInit init) {
  DType dtype = init.data ? init.data->dtype() : DType::kFloat32;
  Node n{Op::kWeight, leaf_attributes(name, std::move(dims), dtype), {}, name};
  Value v = append(std::move(n), {});
  if (v.valid()) graph_.weights[name] = std::move(init);
  return v;
}

Value GraphBuilder::weight(std::string name, Dims dims) {
  float bound = 0.1f;
  if (dims.size() >= 2) {
    std::int64_t fan_in = 1;
    // MatMul weights are [in, out]; conv weights [out, in/group, kh, kw].
    if (dims.size() == 2) fan_in = dims[0];
    for (std::size_t i = 1; dims.size() > 2 && i < dims.size(); ++i) fan_in *= dims[i];
    bound =
        static_cast<float>(std::sqrt(3.0 / static_cast<double>(std::max<std::int64_t>(fan_in, 1))));
  }
  return weight(std::move(name), std::move(dims), -bound, bound);
}

Value GraphBuilder::weight(std::string name, Dims dims, float low, float high) {
  WeightInit init;
  init.seed = stable_hash(name);
  init.low = low;
  init.high = high;
  return add_weight(std::move(name), std::move(dims), std::move(init));
}

Value GraphBuilder::weight(std::string name, Tensor data) {
  Dims dims = data.dims();
  WeightInit init;
  init.data = std::make_shared<const Tensor>(std::move(data));
  return add_weight(std::move(name), std::move(dims), std::move(init));
}

Value GraphBuilder::constant(float value, Dims dims) {
  return node(Op::kConstant, {},
              Attributes{{"value", static_cast<double>(value)}, {"shape", std::move(dims)}});
}

Value GraphBuilder::node(Op op, std::vector<Value> inputs, Attributes attributes,
                         std::string name) {
  return append(Node{op, std::move(attributes), {}, std::move(name)}, std::move(inputs));
}

Value GraphBuilder::gemm(Value a, Value b, Value c, bool trans_b) {
  return node(Op::kGemm, {a, b, c}, Attributes{{"transB", std::int64_t{trans_b ? 1 : 0}}});
}

namespace {
Attributes conv_attributes(const ConvOptions& o) {
  return Attributes{{"strides", o.strides},
                    {"pads", o.pads},
                    {"dilations", o.dilations},
                    {"group", o.group},
                    {"activation", o.activation}};
}
Attributes pool_attributes(const PoolOptions& o) {
  return Attributes{{"kernel_shape", o.kernel}, {"strides", o.strides}, {"pads", o.pads}};
}
}  // namespace

Value GraphBuilder::conv(Value x, Value w, const ConvOptions& options) {
  return node(Op::kConv, {x, w}, conv_attributes(options));
}

Value GraphBuilder::conv(Value x, Value w, Value bias, const ConvOptions& options) {
  return node(Op::kConv, {x, w, bias}, conv_attributes(options));
}

Value GraphBuilder::clip(Value x, float low, float high) {
  return node(Op::kClip, {x},
              Attributes{{"min", static_cast<double>(low)}, {"max", static_cast<double>(high)}});
}

Value GraphBuilder::softmax(Value x, std::int64_t axis) {
  return node(Op::kSoftmax, {x}, Attributes{{"axis", axis}});
}

Value GraphBuilder::layer_norm(Value x, Value scale, Value bias, std::int64_t axis, float epsilon) {
  return node(Op::kLayerNorm, {x, scale, bias},
              Attributes{{"axis", axis}, {"epsilon", static_cast<double>(epsilon)}});
}

Value GraphBuilder::batch_norm(Value x, Value scale, Value bias, Value mean, Value var,
                               float epsilon) {
  return node(Op::kBatchNorm, {x, scale, bias, mean, var},
              Attributes{{"epsilon", static_cast<double>(epsilon)}});
}

Value GraphBuilder::reduce_mean(Value x, Dims axes, bool keepdims) {
  return node(Op::kReduceMean, {x},
              Attributes{{"axes", std::move(axes)}, {"keepdims", std::int64_t{keepdims}}});
}

Value GraphBuilder::transpose(Value x, Dims perm) {
  return node(Op::kTranspose, {x}, Attributes{{"perm", std::move(perm)}});
}
Value GraphBuilder::reshape(Value x, Dims shape) {
  return node(Op::kReshape, {x}, Attributes{{"shape", std::move(shape)}});
}
Value GraphBuilder::flatten(Value x, std::int64_t axis) {
  return node(Op::kFlatten, {x}, Attributes{{"axis", axis}});
}
Value GraphBuilder::concat(std::vector<Value> inputs, std::int64_t axis) {
  return node(Op::kConcat, std::move(inputs), Attributes{{"axis", axis}});
}

std::vector<Value> GraphBuilder::split(Value x, std::int64_t axis, Dims sizes) {
  std::size_t n = sizes.size();
  Value tuple = node(Op::kSplit, {x}, Attributes{{"axis", axis}, {"split", std::move(sizes)}});
  std::vector<Value> parts;
  for (std::size_t i = 0; i < n; ++i) {
    parts.push_back(
        node(Op::kTupleGet, {tuple}, Attributes{{"index", static_cast<std::int64_t>(i)}}));
  }
  return parts;
}

Value GraphBuilder::slice(Value x, Dims starts, Dims ends, Dims axes, Dims steps) {
  return node(Op::kSlice, {x},
              Attributes{{"starts", std::move(starts)},
                         {"ends", std::move(ends)},
                         {"axes", std::move(axes)},
                         {"steps", std::move(steps)}});
}

Value GraphBuilder::gather(Value data, Value indices, std::int64_t axis) {
  return node(Op::kGather, {data, indices}, Attributes{{"axis", axis}});
}

Value GraphBuilder::pad(Value x, Dims pads, float value) {
  return node(Op::kPad, {x},
              Attributes{{"pads", std::move(pads)}, {"value", static_cast<double>(value)}});
}

Value GraphBuilder::max_pool(Value x, const PoolOptions& options) {
  return node(Op::kMaxPool, {x}, pool_attributes(options));
}

Value GraphBuilder::average_pool(Value x, const PoolOptions& options) {
  Attributes a = pool_attributes(options);
  a.set("count_include_pad", std::int64_t{options.count_include_pad});
  return node(Op::kAveragePool, {x}, std::move(a));
}

Value GraphBuilder::conv2d(std::string_view name, Value x, const ConvLayer& layer) {
  std::int64_t in_channels = dim(x, 1);
  Value w = weight(fmt::format("{}.weight", name),
                   Dims{layer.out_channels, in_channels / std::max<std::int64_t>(layer.group, 1),
                        layer.kernel[0], layer.kernel[1]});
  ConvOptions o;
  o.strides = layer.stride;
  for (int i = 0; i < 2; ++i) {
    std::int64_t p = layer.pad[i] < 0 ? layer.kernel[i] / 2 : layer.pad[i];
    o.pads[i] = o.pads[2 + i] = p;
  }
  o.group = layer.group;
  o.activation = layer.activation;
  if (!layer.bias) return conv(x, w, o);
  Value b = weight(fmt::format("{}.bias", name), Dims{layer.out_channels});
  return conv(x, w, b, o);
}

Value GraphBuilder::linear(std::string_view name, Value x, std::int64_t out_features, bool bias) {
  Value w = weight(fmt::format("{}.weight", name),
                   Dims{dims(x).empty() ? 0 : dims(x).back(), out_features});
  Value y = matmul(x, w);
  if (!bias) return y;
  return add(y, weight(fmt::format("{}.bias", name), Dims{out_features}));
}

Value GraphBuilder::layer_norm(std::string_view name, Value x) {
  std::int64_t width = dims(x).empty() ? 0 : dims(x).back();
  Value scale = weight(fmt::format("{}.scale", name), Dims{width}, 0.5f, 1.5f);
  Value bias = weight(fmt::format("{}.bias", name), Dims{width});
  return layer_norm(x, scale, bias);
}

const TensorType& GraphBuilder::type(Value v) const {
  static const TensorType kPlaceholder{DType::kFloat32, {1, 1, 1, 1}};
  if (!v.valid() || v.node >= static_cast<int>(types_.size()) || types_[v.node].is_tuple)
    return kPlaceholder;
  return types_[v.node].tensor();
}

std::int64_t GraphBuilder::dim(Value v, std::int64_t axis) const {
  const Dims& d = dims(v);
  std::optional<std::int64_t> a = normalize_axis(axis, d.size());
  return a ? d[*a] : 1;
}

void GraphBuilder::output(Value v, std::string name) {
  if (!status_.ok()) return;
  if (!v.valid()) {
    set_error(absl::InvalidArgumentError(
        fmt::format("{}: output '{}' is not a value", graph_.name, name)));
    return;
  }
  graph_.outputs.push_back(GraphOutput{v.node, std::move(name)});
}

absl::StatusOr<Graph> GraphBuilder::build() {
  if (!status_.ok()) return status_;
  if (graph_.outputs.empty())
    return absl::InvalidArgumentError(fmt::format("{}: the graph has no outputs", graph_.name));
  return graph_;
}

}  // namespace saturn::tensor

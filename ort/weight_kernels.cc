// The products of quantized weights calibrate() times in both weight types,
// and the models that time them. See harness_internal.h.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/ort/harness_internal.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/types.h"

namespace saturn::ort {

using tensor::DType;
using tensor::Graph;
using tensor::Node;
using tensor::Op;

std::vector<tensor::MatrixProduct> quantized_product_shapes(const std::vector<const Graph*>& graphs,
                                                            std::size_t limit) {
  std::vector<tensor::MatrixProduct> shapes;
  for (const Graph* graph : graphs) {
    absl::StatusOr<std::vector<tensor::ValueType>> types = tensor::infer_types(*graph);
    if (!types.ok()) continue;  // calibrate() reports it when it collects the signatures
    const std::vector<bool> weight_only = tensor::weight_only_nodes(*graph);
    for (int i = 0; i < graph->size(); ++i) {
      const Node& n = graph->nodes[i];
      // A product onnxruntime runs in its integer kernels: a quantized
      // activation by a quantized weight.
      if (n.inputs.size() < 2 || weight_only[i] ||
          graph->nodes[n.inputs[0]].op != Op::kDequantizeLinear ||
          !tensor::is_quantized_weight(*graph, weight_only, n.inputs[1]))
        continue;
      const tensor::ValueType& weight = (*types)[n.inputs[1]];
      const tensor::ValueType& output = (*types)[i];
      if (weight.is_tuple || output.is_tuple || !weight.tensor().is_static() ||
          !output.tensor().is_static())
        continue;
      std::optional<tensor::MatrixProduct> shape =
          tensor::matrix_product(n.op, n.attributes, weight, output);
      if (shape && std::ranges::find(shapes, *shape) == shapes.end()) shapes.push_back(*shape);
    }
  }
  std::ranges::sort(shapes, [](const tensor::MatrixProduct& a, const tensor::MatrixProduct& b) {
    return a.macs() > b.macs();
  });
  if (shapes.size() > limit) shapes.resize(limit);
  return shapes;
}

Graph weight_type_model(const tensor::MatrixProduct& shape, DType weight, std::string name) {
  Graph g;
  g.name = std::move(name);
  g.opsets = {{"", 13}};
  auto add = [&](Op op, std::string value, tensor::Dims dims, DType dtype,
                 std::optional<tensor::Tensor> data = std::nullopt) {
    g.nodes.push_back(Node{op, tensor::leaf_attributes(value, std::move(dims), dtype), {}, value});
    if (data) g.weights[value] = tensor::WeightInit{std::make_shared<const tensor::Tensor>(*data)};
    return g.size() - 1;
  };
  auto byte_scalar = [](DType dtype, std::uint8_t bits) {
    return tensor::Tensor(tensor::TensorType{dtype, {}}, std::vector<std::byte>{std::byte{bits}});
  };
  // Zero points mid-range: the kernels' cost does not depend on the values.
  const std::uint8_t weight_zero = weight == DType::kUInt8 ? 128 : 0;
  std::vector<int> in = {
      add(Op::kInput, "a", {shape.rows, shape.depth}, DType::kUInt8),
      add(Op::kWeight, "a_scale", {}, DType::kFloat32, tensor::Tensor::scalar(0.02f)),
      add(Op::kWeight, "a_zero_point", {}, DType::kUInt8, byte_scalar(DType::kUInt8, 128)),
      // Its values drawn at export, seeded by its name.
      add(Op::kWeight, "b", {shape.depth, shape.columns}, weight),
      add(Op::kWeight, "b_scale", {}, DType::kFloat32, tensor::Tensor::scalar(0.01f)),
      add(Op::kWeight, "b_zero_point", {}, weight, byte_scalar(weight, weight_zero)),
      add(Op::kWeight, "y_scale", {}, DType::kFloat32, tensor::Tensor::scalar(0.05f)),
      add(Op::kWeight, "y_zero_point", {}, DType::kUInt8, byte_scalar(DType::kUInt8, 128)),
  };
  g.nodes.push_back(Node{Op::kQLinearMatMul, {}, std::move(in), "y"});
  g.outputs.push_back({g.size() - 1, "y"});
  return g;
}

std::optional<double> unsigned_weight_us_per_mac(const std::vector<WeightTypeTiming>& timings) {
  std::vector<double> per_mac;
  for (const WeightTypeTiming& t : timings) {
    if (t.uint8_us && t.int8_us)
      per_mac.push_back(std::max(0.0, *t.uint8_us - *t.int8_us) / t.shape.macs());
  }
  if (per_mac.empty()) return std::nullopt;
  // The median shape's: one slow pass of one model moves it least.
  std::ranges::sort(per_mac);
  const std::size_t mid = per_mac.size() / 2;
  return per_mac.size() % 2 == 1 ? per_mac[mid] : (per_mac[mid - 1] + per_mac[mid]) / 2;
}

}  // namespace saturn::ort

// The models calibrate() times for one operator, alone or between
// convolutions, and an operator's cost from the kernels of its model between
// convolutions. See runtime.h.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/ort/harness_internal.h"
#include "saturn/ort/runtime.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/types.h"

namespace saturn::ort {

using tensor::Graph;
using tensor::Node;
using tensor::Op;

bool is_image(const tensor::TensorType& t) {
  return t.dtype == tensor::DType::kFloat32 && t.dims.size() == 4 && t.is_static();
}
bool is_image(const tensor::ValueType& t) { return !t.is_tuple && is_image(t.tensor()); }

namespace {

// A Softmax of scores plus a causal mask, as attention computes it: the
// kernel the runtime runs on masked scores (kMaskedScores).
std::optional<Graph> masked_scores_model(Op op, const Attributes& attributes,
                                         std::span<const tensor::ValueType> in, Graph g) {
  if (op != Op::kSoftmax || in[0].is_tuple || in[0].tensor().dtype != tensor::DType::kFloat32 ||
      in[0].tensor().rank() < 2 || !in[0].tensor().is_static())
    return std::nullopt;
  const tensor::Dims& d = in[0].tensor().dims;
  const std::int64_t rows = d[d.size() - 2], cols = d.back();
  tensor::Tensor mask(tensor::TensorType{tensor::DType::kFloat32, {rows, cols}});
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) mask.mutable_floats()[i * cols + j] = j > i ? -1e4f : 0.0f;
  }
  g.nodes.push_back(Node{Op::kInput,
                         tensor::leaf_attributes("in0", d, tensor::DType::kFloat32), {}, "in0"});
  g.nodes.push_back(Node{Op::kWeight,
                         tensor::leaf_attributes("mask", {rows, cols}, tensor::DType::kFloat32),
                         {}, "mask"});
  g.weights["mask"] = tensor::WeightInit{std::make_shared<const tensor::Tensor>(std::move(mask))};
  g.nodes.push_back(Node{Op::kAdd, {}, {g.size() - 2, g.size() - 1}, "scores"});
  g.nodes.push_back(Node{op, attributes, {g.size() - 1}, "y"});
  g.outputs.push_back({g.size() - 1, "y"});
  return g;
}

}  // namespace

std::optional<Graph> timing_model(Op op, const Attributes& attributes,
                                  std::span<const tensor::ValueType> in,
                                  const std::vector<bool>& in_weight, const tensor::ValueType& out,
                                  std::string name, const tensor::Opsets& opsets,
                                  Placement placement) {
  // An opaque node whose subgraphs read enclosing values cannot stand alone.
  if (attributes.get_int("explicit_inputs").has_value()) return std::nullopt;
  Graph g;
  g.name = std::move(name);
  g.opsets = opsets;
  auto leaf = [&](Op kind, std::string leaf_name, tensor::Dims dims, tensor::DType dtype) {
    g.nodes.push_back(
        Node{kind, tensor::leaf_attributes(leaf_name, std::move(dims), dtype), {}, leaf_name});
    return g.size() - 1;
  };
  auto conv = [&](int x, int w, tensor::Dims strides) {
    absl::StatusOr<Attributes> a = tensor::normalize_attributes(
        Op::kConv, Attributes{{"strides", std::move(strides)}, {"pads", tensor::Dims{0, 0, 0, 0}}});
    g.nodes.push_back(Node{Op::kConv, *std::move(a), {x, w}, fmt::format("ctx_conv{}", g.size())});
    return g.size() - 1;
  };
  const bool between_convolutions = placement != Placement::kAlone;
  // The activation input left plain (kMixed), or none.
  std::optional<std::size_t> plain;
  int activations = 0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (in_weight[k] || !is_image(in[k])) continue;
    if (activations++ == 0 && placement == Placement::kMixed) plain = k;
  }
  if (placement == Placement::kMixed && activations < 2) return std::nullopt;
  if (placement == Placement::kMaskedScores) return masked_scores_model(op, attributes, in, std::move(g));
  Node copy{op, attributes, {}, "y"};
  for (std::size_t k = 0; k < in.size(); ++k) {
    const tensor::ValueType& t = in[k];
    if (t.is_tuple || t.tensor().dtype == tensor::DType::kOther || !t.tensor().is_static())
      return std::nullopt;
    const tensor::Dims& d = t.tensor().dims;
    if (between_convolutions && !in_weight[k] && is_image(t) && plain != k) {
      const int x = leaf(Op::kInput, fmt::format("ctx_in{}", k), {d[0], 4, d[2], d[3]},
                         tensor::DType::kFloat32);
      const int w =
          leaf(Op::kWeight, fmt::format("ctx_w{}", k), {d[1], 4, 1, 1}, tensor::DType::kFloat32);
      copy.inputs.push_back(conv(x, w, {1, 1}));
      continue;
    }
    copy.inputs.push_back(
        leaf(in_weight[k] ? Op::kWeight : Op::kInput, fmt::format("in{}", k), d, t.tensor().dtype));
  }
  g.nodes.push_back(copy);
  const int node = g.size() - 1;
  auto output = [&](int value, const tensor::TensorType& t, std::string output_name) {
    if (between_convolutions && is_image(t)) {
      const tensor::Dims& d = t.dims;
      const int w =
          leaf(Op::kWeight, "ctx_" + output_name + "_w", {8, d[1], 1, 1}, tensor::DType::kFloat32);
      value = conv(value, w, {d[2], d[3]});
    }
    g.outputs.push_back({value, std::move(output_name)});
  };
  if (out.is_tuple) {
    for (std::size_t p = 0; p < out.parts.size(); ++p) {
      g.nodes.push_back(Node{
          Op::kTupleGet, {{"index", static_cast<std::int64_t>(p)}}, {node}, fmt::format("y{}", p)});
      output(g.size() - 1, out.parts[p], fmt::format("y{}", p));
    }
  } else {
    output(node, out.tensor(), "y");
  }
  return g;
}

std::optional<double> cost_between_convolutions(const nlohmann::json& kernels,
                                                const std::vector<tensor::Dims>& in,
                                                const std::vector<tensor::Dims>& out) {
  auto shape_in = [](const nlohmann::json& shape, const std::vector<tensor::Dims>& list) {
    if (!shape.is_array()) return false;
    const tensor::Dims d = shape.get<tensor::Dims>();
    return std::find(list.begin(), list.end(), d) != list.end();
  };
  double own = 0, reorders = 0;
  bool context_ran = false;
  for (const nlohmann::json& k : kernels) {
    const std::string op = k.value("op", "");
    const double us = k.value("us", 0.0);
    if (op == "Conv") {  // the context
      context_ran = true;
      continue;
    }
    if (op == "ReorderOutput") {
      if (shape_in(k["output"], in)) reorders += us;
    } else if (op == "ReorderInput") {
      if (shape_in(k["input"], out)) reorders += us;
    } else {
      own += us;
    }
  }
  if (!context_ran) return std::nullopt;
  return own + reorders;
}

}  // namespace saturn::ort

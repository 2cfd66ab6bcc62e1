// Quantized weights that onnxruntime dequantizes on every run, because it
// runs the node reading them in float: the node that makes it so is
// charged the DequantizeLinear (dequantized_weight_surcharge), so that
// extraction sees the spelling onnxruntime keeps on integers cheaper.
//
// - A Gather of a quantized table runs on integers only where a
//   QuantizeLinear alone reads what it gathers (onnxruntime drops the pair
//   around it); elsewhere the whole table is dequantized: the quantized
//   GPT-2's 50257 x 768 embedding, its Gather read by an Add, 67 ms of a
//   472 ms run (onnxruntime 1.30, one thread, AMD EPYC). The rules'
//   spelling that gathers the integers first (dequantize-gather) is not.
// - A Gemm between DequantizeLinear nodes runs as the integer QGemm only
//   where its bias is an int32 DequantizeLinear (the QDQ Gemm selector),
//   and onnxruntime first fuses a MatMul whose one reader is the Add of a
//   bias into such a Gemm (MatMulAddFusion). The quantized GPT-2 from
//   quantize_static shares one int8 bias among its 24 output projections:
//   all 24 ran as float Gemms with their weights dequantized on every run
//   (131 ms of the 472). Written as the MatMul less the negated bias
//   (quantized-bias-as-subtraction), each ran as MatMulIntegerToFloat
//   (62.5 ms, and 1.2 ms for the subtractions).
//
// Each such reader is charged, also where several read one
// DequantizeLinear: onnxruntime gives every reader of a DequantizeLinear a
// copy of its own before any fusion (its EnsureUniqueDQForNodeUnit
// transformer, applied at load unless the session disables QDQ handling),
// so each copy runs on every run.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "saturn/costmodel/cost_model.h"

namespace saturn {

using tensor::DType;
using tensor::Op;
using tensor::ValueType;

namespace {

// Whether the Gather at `gather` runs on integers: a QuantizeLinear alone
// reads what it gathers, and it is no graph output.
bool gathers_integers(const tensor::Graph& graph, int gather) {
  if (std::ranges::any_of(graph.outputs,
                          [&](const tensor::GraphOutput& o) { return o.node == gather; }))
    return false;
  int readers = 0;
  bool quantized = true;
  for (const tensor::Node& n : graph.nodes) {
    const auto reads = std::ranges::count(n.inputs, gather);
    readers += static_cast<int>(reads);
    quantized &= reads == 0 || n.op == Op::kQuantizeLinear;
  }
  return readers == 1 && quantized;
}

// Whether a bias of type `bias` fits the Gemm that MatMulAddFusion makes of
// a MatMul reading `activation` into `product`: [N], or [1, N] for a
// matrix activation (the forms that need no reshape around the Gemm).
bool fits_as_gemm_bias(const ValueType& activation, const ValueType& product,
                       const ValueType& bias) {
  if (activation.is_tuple || product.is_tuple || bias.is_tuple) return false;
  const tensor::Dims& out = product.tensor().dims;
  const tensor::Dims& b = bias.tensor().dims;
  if (out.empty() || !is_float(product.tensor().dtype)) return false;
  if (b.size() == 1) return b[0] == out.back();
  return b.size() == 2 && activation.tensor().rank() == 2 && b[0] == 1 && b[1] == out.back();
}

// Whether a Gemm with attributes `gemm` (null for the Add MatMulAddFusion
// turns into one) runs as an integer QGemm: its bias an int32
// DequantizeLinear, and its beta 1.
bool is_integer_bias(const Attributes* gemm, bool int32_dequantized) {
  return int32_dequantized && (gemm == nullptr || gemm->get_float("beta").value_or(1.0) == 1.0);
}

// A DequantizeLinear's price on its own.
double dequantize_cost(const CostModel& model, const Attributes& attributes,
                       std::span<const ValueType> inputs, const ValueType& output) {
  return model.node_cost(Op::kDequantizeLinear, attributes, inputs, output,
                         OpContext{.on_its_own = true});
}

// The quantized weight (a DequantizeLinear node) that node `x` makes
// onnxruntime dequantize on every run, if any.
std::optional<int> dequantized_every_run(const tensor::Graph& graph,
                                         const std::vector<bool>& weight_only, int x,
                                         std::span<const ValueType> types) {
  const tensor::Node& node = graph.nodes[x];
  if (node.op == Op::kGather && !node.inputs.empty() &&
      tensor::is_quantized_weight(graph, weight_only, node.inputs[0]) &&
      !gathers_integers(graph, x))
    return node.inputs[0];
  auto is_output = [&](int n) {
    return std::ranges::any_of(graph.outputs,
                               [n](const tensor::GraphOutput& o) { return o.node == n; });
  };
  auto readers = [&](int n) {
    int count = 0;
    for (const tensor::Node& r : graph.nodes)
      count += static_cast<int>(std::ranges::count(r.inputs, n));
    return count;
  };
  // A product of a DequantizeLinear activation by a quantized weight.
  auto is_quantized_product = [&](const tensor::Node& p) {
    return p.inputs.size() >= 2 && graph.nodes[p.inputs[0]].op == Op::kDequantizeLinear &&
           tensor::is_quantized_weight(graph, weight_only, p.inputs[1]);
  };
  // The product and its bias: a Gemm's third input, or the Add's other
  // input where it is a MatMul's one reader.
  int product = -1, bias = -1;
  if (node.op == Op::kGemm && node.inputs.size() == 3 && is_quantized_product(node)) {
    product = x;
    bias = node.inputs[2];
  } else if (node.op == Op::kAdd && node.inputs.size() == 2) {
    for (int side = 0; side < 2 && product < 0; ++side) {
      const int m = node.inputs[side];
      const tensor::Node& mm = graph.nodes[m];
      if (mm.op != Op::kMatMul || !is_quantized_product(mm) ||
          !fits_as_gemm_bias(types[mm.inputs[0]], types[m], types[node.inputs[1 - side]]) ||
          readers(m) != 1 || is_output(m))
        continue;
      product = m;
      bias = node.inputs[1 - side];
    }
  }
  if (product < 0) return std::nullopt;
  // onnxruntime drops an Identity before its fusions.
  while (graph.nodes[bias].op == Op::kIdentity && !graph.nodes[bias].inputs.empty())
    bias = graph.nodes[bias].inputs[0];
  const tensor::Node& b = graph.nodes[bias];
  const bool int32_dequantized = b.op == Op::kDequantizeLinear && !types[b.inputs[0]].is_tuple &&
                                 types[b.inputs[0]].tensor().dtype == DType::kInt32;
  if (is_integer_bias(node.op == Op::kGemm ? &node.attributes : nullptr, int32_dequantized))
    return std::nullopt;
  return graph.nodes[product].inputs[1];
}

}  // namespace

double dequantized_weight_surcharge(const CostModel& model, const tensor::Graph& graph,
                                    const std::vector<bool>& weight_only, int x,
                                    std::span<const ValueType> types) {
  const std::optional<int> w = dequantized_every_run(graph, weight_only, x, types);
  if (!w) return 0;
  std::vector<ValueType> inputs;
  for (int in : graph.nodes[*w].inputs) inputs.push_back(types[in]);
  return dequantize_cost(model, graph.nodes[*w].attributes, inputs, types[*w]);
}

double dequantized_weight_surcharge(const CostModel& model, const EGraph& egraph,
                                    const tensor::TensorAnalysis& analysis, const ENode& node) {
  auto op_of = [](const ENode& n) { return tensor::TensorLanguage::op(n.op); };
  auto type_of = [&](Id c) -> const ValueType& { return analysis.info(egraph.find(c)).type; };
  auto holds = [&](Id c, auto&& test) {
    return std::ranges::any_of(egraph.nodes(egraph.find(c)), test);
  };
  auto is_dequantize = [&](const ENode& n) { return op_of(n) == Op::kDequantizeLinear; };
  // The cheapest price of a quantized weight's DequantizeLinear (of weights
  // only) in class `w`; nothing where it holds none.
  auto weight_cost = [&](Id w) -> std::optional<double> {
    std::optional<double> cheapest;
    for (const ENode& dq : egraph.nodes(egraph.find(w))) {
      if (!analysis.is_quantized_weight(egraph, dq)) continue;
      std::vector<ValueType> inputs;
      for (Id k : dq.children) inputs.push_back(type_of(k));
      const double cost = dequantize_cost(model, egraph.attrs().get(dq.attrs), inputs, type_of(w));
      cheapest = std::min(cheapest.value_or(std::numeric_limits<double>::infinity()), cost);
    }
    return cheapest;
  };
  // A product reading a DequantizeLinear activation: its weight's price.
  auto product_weight_cost = [&](const ENode& p) -> std::optional<double> {
    if (p.children.size() < 2 || !holds(p.children[0], is_dequantize)) return std::nullopt;
    return weight_cost(p.children[1]);
  };
  auto int32_dequantized = [&](Id c) {
    return holds(c, [&](const ENode& n) {
      return is_dequantize(n) && !n.children.empty() && !type_of(n.children[0]).is_tuple &&
             type_of(n.children[0]).tensor().dtype == DType::kInt32;
    });
  };
  const Op op = op_of(node);
  // A Gather reading the table itself: extraction keeps it only where it
  // prefers it to gathering the integers (dequantize-gather), and the
  // QuantizeLinear that would let onnxruntime run it on integers is then
  // one extraction can drop (quantize-dequantized), so it is always charged.
  if (op == Op::kGather && !node.children.empty()) return weight_cost(node.children[0]).value_or(0);
  if (op == Op::kGemm && node.children.size() == 3) {
    if (is_integer_bias(&egraph.attrs().get(node.attrs), int32_dequantized(node.children[2])))
      return 0;
    return product_weight_cost(node).value_or(0);
  }
  if (op != Op::kAdd || node.children.size() != 2) return 0;
  // Extraction picks the MatMul's readers: this Add is taken for its one.
  for (int side = 0; side < 2; ++side) {
    const Id bias = node.children[1 - side];
    for (const ENode& m : egraph.nodes(egraph.find(node.children[side]))) {
      if (op_of(m) != Op::kMatMul || m.children.size() != 2 ||
          !fits_as_gemm_bias(type_of(m.children[0]), type_of(node.children[side]), type_of(bias)))
        continue;
      const std::optional<double> cost = product_weight_cost(m);
      if (!cost) continue;
      // The bias is the same for every MatMul of the class: read it once.
      if (is_integer_bias(nullptr, int32_dequantized(bias))) break;
      return *cost;
    }
  }
  return 0;
}

}  // namespace saturn

// Where operators run, as far as onnxruntime's convolutions go: the kinds
// of values (ValueKinds) in graphs and e-graphs, and the context of an
// operator (OpContext).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "saturn/costmodel/cost_model.h"

namespace saturn {

using tensor::Op;

bool fuses_into_convolution(Op op) {
  return op == Op::kRelu || op == Op::kSigmoid || op == Op::kTanh || op == Op::kClip;
}

FromConvolution convolution_output(ValueKinds kinds) {
  if ((kinds & (kConvOutput | kOpenConvOutput)) == 0) return FromConvolution::kNo;
  return (kinds & kPlainValue) != 0 ? FromConvolution::kMaybe : FromConvolution::kYes;
}

namespace {

constexpr ValueKinds kAnyConvOutput = kConvOutput | kOpenConvOutput;

// What node `op` hands its readers when its non-weight inputs may be
// `inputs` (see ValueKinds).
template <typename Range>
ValueKinds output_kinds(Op op, const Attributes& attributes, const Range& inputs) {
  if (op == Op::kConv) {
    const std::string* activation = attributes.get_string("activation");
    return activation == nullptr || *activation == "none" ? kOpenConvOutput : kConvOutput;
  }
  const bool activation = fuses_into_convolution(op);
  if ((!activation && op != Op::kAdd) || inputs.empty()) return kPlainValue;
  bool can_be_plain = false, all_can_be_conv = true, all_can_be_closed = true, some_open = false;
  for (ValueKinds in : inputs) {
    can_be_plain |= (in & kPlainValue) != 0;
    all_can_be_conv &= (in & kAnyConvOutput) != 0;
    all_can_be_closed &= (in & kConvOutput) != 0;
    some_open |= (in & kOpenConvOutput) != 0;
  }
  ValueKinds out = can_be_plain ? kPlainValue : 0;
  if (activation) return all_can_be_conv ? out | kConvOutput : out;
  if (all_can_be_conv && some_open) out |= kOpenConvOutput;  // accumulated into a convolution
  if (all_can_be_closed) out |= kConvOutput;                 // added in the blocked layout
  return out;
}

// kYes when every element of `inputs` (sets of kinds) surely has one of
// `kinds`, kNo when none can, kMaybe otherwise.
template <typename Range>
FromConvolution all_or_none(const Range& inputs, ValueKinds kinds) {
  bool some = false, all = true;
  for (ValueKinds in : inputs) {
    some |= (in & kinds) != 0;
    all &= (in & ~kinds) == 0;
  }
  return all && some ? FromConvolution::kYes
         : some      ? FromConvolution::kMaybe
                     : FromConvolution::kNo;
}

// The context of operator `op` whose non-weight inputs may be `inputs`.
template <typename Range>
OpContext context_of(Op op, const Range& inputs) {
  OpContext context;
  bool can_be_conv = false, can_be_plain = false, surely_conv = false, surely_plain = false;
  for (ValueKinds kinds : inputs) {
    const FromConvolution in = convolution_output(kinds);
    context.input = std::max(context.input, in);
    can_be_conv |= in != FromConvolution::kNo;
    can_be_plain |= in != FromConvolution::kYes;
    surely_conv |= in == FromConvolution::kYes;
    surely_plain |= in == FromConvolution::kNo;
  }
  // One input alone cannot be mixed, whatever it turns out to be.
  context.mixed = surely_conv && surely_plain                         ? FromConvolution::kYes
                  : inputs.size() >= 2 && can_be_conv && can_be_plain ? FromConvolution::kMaybe
                                                                      : FromConvolution::kNo;
  // An activation runs between convolutions when it is fused into one, an
  // Add when it is accumulated into one: they need an open output. Any
  // other convolution output they run on in the blocked layout, at about
  // their price alone.
  if (fuses_into_convolution(op)) {
    context.input = all_or_none(inputs, kOpenConvOutput);
  } else if (op == Op::kAdd) {
    // A plain input makes it mixed instead (the choice that makes it so
    // pays the difference: reorder_penalty).
    bool surely_open = false, can_be_open = false;
    for (ValueKinds kinds : inputs) {
      surely_open |= kinds == kOpenConvOutput;
      can_be_open |= (kinds & kOpenConvOutput) != 0;
    }
    context.input = surely_open   ? FromConvolution::kYes
                    : can_be_open ? FromConvolution::kMaybe
                                  : FromConvolution::kNo;
  }
  return context;
}

}  // namespace

std::vector<ValueKinds> value_kinds(const tensor::Graph& graph,
                                    const std::vector<bool>& weight_only) {
  std::vector<ValueKinds> kinds(graph.size(), kPlainValue);
  absl::InlinedVector<ValueKinds, 4> inputs;
  for (int x = 0; x < graph.size(); ++x) {
    const tensor::Node& n = graph.nodes[x];
    if (weight_only[x]) continue;
    inputs.clear();
    for (int in : n.inputs) {
      if (!weight_only[in]) inputs.push_back(kinds[in]);
    }
    kinds[x] = output_kinds(n.op, n.attributes, inputs);
  }
  return kinds;
}

ConvolutionOutputs::ConvolutionOutputs(const EGraph& egraph, const tensor::TensorAnalysis& analysis)
    : egraph_(&egraph), analysis_(&analysis) {
  // The least fixed point from "no outcome": a class's outcomes are its
  // nodes', a node's grow with its children's, so the sets only grow; a
  // class whose set grows sends its readers back to the worklist.
  std::vector<Id> work = egraph.class_ids();
  kinds_.reserve(work.size());
  for (Id c : work) kinds_.emplace(c, 0);
  while (!work.empty()) {
    const Id c = egraph.find(work.back());
    work.pop_back();
    ValueKinds kinds = 0;
    for (const ENode& n : egraph.nodes(c)) kinds |= of_node(n);
    ValueKinds& known = kinds_[c];
    if ((kinds | known) == known) continue;
    known |= kinds;
    for (Id p : egraph.eclass(c).parents) work.push_back(p);
  }
}

ValueKinds ConvolutionOutputs::of_class(Id id) const {
  auto it = kinds_.find(egraph_->find(id));
  return it == kinds_.end() ? 0 : it->second;
}

ValueKinds ConvolutionOutputs::of_node(const ENode& node) const {
  absl::InlinedVector<ValueKinds, 4> inputs;
  for (Id child : node.children) {
    if (!analysis_->info(egraph_->find(child)).weight_only) inputs.push_back(of_class(child));
  }
  return output_kinds(tensor::TensorLanguage::op(node.op), egraph_->attrs().get(node.attrs),
                      inputs);
}

bool holds_mask_values(const tensor::Tensor& values) {
  if (values.type().dtype != tensor::DType::kFloat32) return false;
  for (float v : values.floats()) {
    if (v <= -1e4f) return true;
  }
  return false;
}

namespace {

// Whether a reader `op` takes a quantized weight as an activation
// (OpContext::read_as_activation): the operators onnxruntime runs on
// quantized activations beside the products (QLinearAdd, QLinearMul,
// QLinearConcat, a Gather on integers). Not the operators the rules put on
// a product's weight (a Pad that enlarges a kernel, a Transpose): a search
// would then price the product's own weight as an activation.
bool reads_as_activation(Op op) {
  return op == Op::kAdd || op == Op::kMul || op == Op::kConcat || op == Op::kGather;
}

// Whether product `op` with inputs `inputs` reads `weight` as its weight
// (its second input) and only there.
bool is_product_weight(Op op, std::span<const int> inputs, int weight) {
  const bool product = op == Op::kMatMul || op == Op::kGemm || op == Op::kConv;
  return product && inputs.size() >= 2 && inputs[1] == weight &&
         std::ranges::count(inputs, weight) == 1;
}

// Whether an activation quantized with zero point `zero_point` (a weight's
// values) is mostly non-negative (OpContext::small_activations).
bool small_zero_point(const tensor::Tensor& zero_point) {
  const tensor::DType type = zero_point.dtype();
  if ((type != tensor::DType::kUInt8 && type != tensor::DType::kInt8) || zero_point.size() == 0)
    return false;
  return std::ranges::all_of(zero_point.bytes(), [type](std::byte b) {
    const auto bits = std::to_integer<std::uint8_t>(b);
    const int in_uint8 =
        type == tensor::DType::kUInt8 ? bits : static_cast<int>(static_cast<std::int8_t>(bits)) + 128;
    return in_uint8 < 64;
  });
}

// The multiply-adds of product `op` reading a weight of type `weight` into
// `output`, for OpContext::small_activation_macs (0 where its kernel does
// not pair its sums: a grouped convolution); nullopt where `op` is no
// product of an activation by a weight.
std::optional<double> product_macs(Op op, const Attributes& attributes,
                                   const tensor::ValueType& weight,
                                   const tensor::ValueType& output) {
  if (op != Op::kMatMul && op != Op::kGemm && op != Op::kConv) return std::nullopt;
  const std::optional<tensor::MatrixProduct> product =
      tensor::matrix_product(op, attributes, weight, output);
  return product ? product->macs() : 0.0;
}

// A weight DequantizeLinear's readers, gathered for OpContext::
// small_activations: each reader that reads an activation too says whether
// it is a product of small activations by the weight, and its multiply-adds.
struct ProductReaders {
  bool any = false, all_small = true;
  double macs = 0;
  void add(bool small, double product_macs) {
    any = true;
    all_small &= small;
    if (small) macs += product_macs;
  }
  void into(OpContext& context) const {
    context.small_activations = any && all_small;
    context.small_activation_macs = context.small_activations ? macs : 0;
  }
};

}  // namespace

OpContext node_context(const tensor::Graph& graph, const std::vector<bool>& weight_only,
                       const std::vector<ValueKinds>& kinds, int x,
                       std::span<const tensor::ValueType> types) {
  const tensor::Node& node = graph.nodes[x];
  absl::InlinedVector<ValueKinds, 4> inputs;
  for (int in : node.inputs) {
    if (!weight_only[in]) inputs.push_back(kinds[in]);
  }
  OpContext context = context_of(node.op, inputs);
  context.weights_only = inputs.empty() && !node.inputs.empty();
  if (node.op == Op::kDequantizeLinear && context.weights_only) {
    // A weight, or a quantized one (a DequantizeLinear of weights).
    auto is_weight = [&](int in) {
      return weight_only[in] || tensor::is_quantized_weight(graph, weight_only, in);
    };
    // An activation DequantizeLinear whose zero point is a given weight.
    auto small_activation = [&](int a) {
      const tensor::Node& dq = graph.nodes[a];
      if (dq.op != Op::kDequantizeLinear || dq.inputs.size() < 3) return false;
      const tensor::Node& zero_point = graph.nodes[dq.inputs[2]];
      if (zero_point.op != Op::kWeight) return false;
      auto it = graph.weights.find(*zero_point.attributes.get_string("name"));
      return it != graph.weights.end() && it->second.data && small_zero_point(*it->second.data);
    };
    ProductReaders readers;
    for (int r = 0; r < graph.size(); ++r) {
      const tensor::Node& reader = graph.nodes[r];
      if (std::ranges::find(reader.inputs, x) == reader.inputs.end()) continue;
      context.read_as_activation |= reads_as_activation(reader.op);
      if (std::ranges::all_of(reader.inputs, is_weight)) continue;
      const std::optional<double> macs =
          types.empty() ? std::optional<double>(0.0)
                        : product_macs(reader.op, reader.attributes, types[x], types[r]);
      readers.add(macs && is_product_weight(reader.op, reader.inputs, x) &&
                      small_activation(reader.inputs[0]),
                  macs.value_or(0));
    }
    readers.into(context);
  }
  if (node.op == Op::kSoftmax && graph.nodes[node.inputs[0]].op == Op::kAdd) {
    for (int in : graph.nodes[node.inputs[0]].inputs) {
      const tensor::Node& w = graph.nodes[in];
      if (w.op != Op::kWeight) continue;
      auto it = graph.weights.find(*w.attributes.get_string("name"));
      context.masked |= it != graph.weights.end() && it->second.data && holds_mask_values(*it->second.data);
    }
  }
  return context;
}

OpContext node_context(const EGraph& egraph, const tensor::TensorAnalysis& analysis,
                       const ConvolutionOutputs& conv_outputs, Id eclass, const ENode& node) {
  absl::InlinedVector<ValueKinds, 4> inputs;
  for (Id child : node.children) {
    const Id c = egraph.find(child);
    if (!analysis.info(c).weight_only) inputs.push_back(conv_outputs.of_class(c));
  }
  const Op op = tensor::TensorLanguage::op(node.op);
  OpContext context = context_of(op, inputs);
  context.weights_only = inputs.empty() && !node.children.empty();
  if (op == Op::kDequantizeLinear && context.weights_only) {
    const Id self = egraph.find(eclass);
    auto small_activation = [&](Id a) {
      return std::ranges::any_of(egraph.nodes(egraph.find(a)), [&](const ENode& dq) {
        if (tensor::TensorLanguage::op(dq.op) != Op::kDequantizeLinear || dq.children.size() < 3)
          return false;
        const tensor::Tensor* zero_point = analysis.weight_values(egraph, dq.children[2]);
        return zero_point != nullptr && small_zero_point(*zero_point);
      });
    };
    // A weight, or a quantized one (a DequantizeLinear of weights).
    auto is_weight = [&](Id c) {
      const Id id = egraph.find(c);
      if (analysis.info(id).weight_only) return true;
      return std::ranges::any_of(
          egraph.nodes(id), [&](const ENode& n) { return analysis.is_quantized_weight(egraph, n); });
    };
    // A reader class counts once, as a product of small activations where
    // each of its nodes that reads the weight is one (extraction picks any);
    // one whose nodes read weights only (a rule's Pad, Transpose or
    // MergeGroups of the kernel) does not count: the product reading it does.
    ProductReaders readers;
    absl::InlinedVector<Id, 8> seen;
    for (Id parent : egraph.eclass(self).parents) {
      const Id p = egraph.find(parent);
      if (std::ranges::find(seen, p) != seen.end()) continue;
      seen.push_back(p);
      bool reads = false, small = true, transforms_weights = true;
      double macs = 0;
      for (const ENode& reader : egraph.nodes(p)) {
        absl::InlinedVector<int, 4> inputs;  // 0 where the weight is read
        for (Id c : reader.children) inputs.push_back(egraph.find(c) == self ? 0 : 1);
        if (std::ranges::find(inputs, 0) == inputs.end()) continue;
        const Op op = tensor::TensorLanguage::op(reader.op);
        context.read_as_activation |= reads_as_activation(op);
        transforms_weights &= std::ranges::all_of(reader.children, is_weight);
        const std::optional<double> product = product_macs(
            op, egraph.attrs().get(reader.attrs), analysis.info(self).type, analysis.info(p).type);
        reads = true;
        small &= product && is_product_weight(op, inputs, 0) && small_activation(reader.children[0]);
        macs = std::max(macs, product.value_or(0));
      }
      if (reads && !transforms_weights) readers.add(small, macs);
    }
    readers.into(context);
  }
  if (op == Op::kSoftmax) {
    for (const ENode& sum : egraph.nodes(egraph.find(node.children[0]))) {
      if (tensor::TensorLanguage::op(sum.op) != Op::kAdd) continue;
      for (Id child : sum.children) {
        const tensor::Tensor* values = analysis.weight_values(egraph, child);
        context.masked |= values != nullptr && holds_mask_values(*values);
      }
    }
  }
  return context;
}

}  // namespace saturn

// IR → ONNX. See onnx.h.
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <set>

#include "egraph/file.h"
#include "egraph/status.h"
#include "fmt/format.h"
#include "onnx/checker.h"
#include "tensor/infer.h"
#include "tensor/interpreter.h"
#include "tensor/onnx.h"
#include "tensor/onnx_proto.h"

namespace saturn::tensor {

namespace {

using namespace onnx_io;  // NOLINT: the internal helpers of this module
using Ints = std::vector<std::int64_t>;

constexpr std::int64_t kDefaultOpset = 17;

void set_tensor_type(const TensorType& t, onnx::TypeProto* type) {
  auto* tt = type->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(t.dtype));
  auto* shape = tt->mutable_shape();
  for (std::int64_t d : t.dims) {
    auto* dim = shape->add_dim();
    if (d != kUnknownDim) dim->set_dim_value(d);
  }
}

class Exporter {
 public:
  explicit Exporter(const Graph& graph) : g_(graph) {}

  absl::StatusOr<std::string> run() {
    absl::StatusOr<std::vector<ValueType>> types = infer_types(g_);
    if (!types.ok()) return types.status();
    types_ = std::move(*types);
    std::vector<std::pair<std::string, std::int64_t>> opsets = g_.opsets;
    if (opsets.empty()) opsets.emplace_back("", kDefaultOpset);
    for (const auto& [domain, version] : opsets) {
      if (domain.empty() || domain == "ai.onnx") opset_ = version;
      auto* op = model_.add_opset_import();
      op->set_domain(domain);
      op->set_version(version);
    }
    model_.set_ir_version(onnx::IR_VERSION);
    model_.set_producer_name("saturn");
    out_ = model_.mutable_graph();
    out_->set_name(g_.name.empty() ? "model" : g_.name);

    mark_live_and_foldable();
    assign_names();
    if (absl::Status s = write_folded(); !s.ok()) return s;
    for (int i = 0; i < g_.size(); ++i) {
      if (!live_[i] || folded_[i]) continue;
      if (absl::Status s = emit(i); !s.ok())
        return with_context(
            s, fmt::format("node {} ({})", node_label(g_, i), op_name(g_.nodes[i].op)));
    }
    if (absl::Status s = write_interface(); !s.ok()) return s;
    if (model_.ByteSizeLong() > static_cast<std::size_t>(INT_MAX))
      return absl::ResourceExhaustedError("the ONNX model is larger than protobuf's 2 GB limit");
    try {
      onnx::checker::check_model(model_);
    } catch (const std::exception& e) {
      return absl::InternalError(
          fmt::format("the exported model fails the ONNX checker: {}", e.what()));
    }
    std::string bytes;
    model_.SerializeToString(&bytes);
    return bytes;
  }

 private:
  const TensorType& type(int node) const { return types_[node].parts[0]; }

  // Live: what an output depends on (and every graph input). Folded: live
  // weight-only nodes the interpreter can compute; those that feed the rest
  // of the graph are written as initializers.
  void mark_live_and_foldable() {
    const int n = g_.size();
    live_ = live_nodes(g_);
    std::vector<bool> weight_only = weight_only_nodes(g_);
    folded_.assign(n, false);
    for (int i = 0; i < n; ++i) {
      const Node& node = g_.nodes[i];
      if (!weight_only[i] || node.op == Op::kOpaque) continue;
      bool ok = node.op == Op::kWeight;
      if (!ok) {
        ok = true;
        for (int in : node.inputs) ok = ok && folded_[in];
        for (const TensorType& t : types_[i].parts) ok = ok && is_computable(t.dtype);
      }
      folded_[i] = ok;
    }
    frontier_.assign(n, false);
    for (int i = 0; i < n; ++i) {
      if (!live_[i] || folded_[i]) continue;
      for (int in : g_.nodes[i].inputs) frontier_[in] = frontier_[in] || folded_[in];
    }
    for (const GraphOutput& o : g_.outputs)
      frontier_[o.node] = frontier_[o.node] || folded_[o.node];
  }

  std::string fresh(std::string_view base) {
    for (;;) {
      std::string name = fmt::format("{}_{}", base, counter_++);
      if (!taken_.contains(name) && !reserved_.contains(name)) {
        taken_.insert(name);
        return name;
      }
    }
  }

  // Takes `wanted` when free (reserved names only for their owner), else a
  // fresh name.
  std::string claim(const std::string& wanted, bool owner) {
    if (!wanted.empty() && !taken_.contains(wanted) && (owner || !reserved_.contains(wanted))) {
      taken_.insert(wanted);
      return wanted;
    }
    return fresh("saturn");
  }

  void assign_names() {
    const int n = g_.size();
    std::vector<std::string> output_name(n);
    for (const GraphOutput& o : g_.outputs) {
      reserved_.insert(o.name);
      if (output_name[o.node].empty()) output_name[o.node] = o.name;
    }
    for (const Node& node : g_.nodes) {
      if (node.op == Op::kInput || node.op == Op::kWeight)
        reserved_.insert(*node.attributes.get_string("name"));
    }
    for (int i = 0; i < n; ++i) {
      if (live_[i] && g_.nodes[i].op == Op::kOpaque) {
        for (const std::string& name : subgraph_reads(g_.nodes[i])) reserved_.insert(name);
      }
    }
    names_.assign(n, {});
    // Graph inputs and weights keep their names; a graph output's producer
    // takes the output's name; other values take their own name only when
    // it is nobody's reserved name.
    for (int i = 0; i < n; ++i) {
      const Node& node = g_.nodes[i];
      if (live_[i] && (node.op == Op::kInput || node.op == Op::kWeight))
        names_[i] = {claim(*node.attributes.get_string("name"), true)};
    }
    auto wanted = [&](int i) {
      return output_name[i].empty() ? std::pair{g_.nodes[i].name, false}
                                    : std::pair{output_name[i], true};
    };
    // TupleGet consumers name the parts of the tuple they read.
    std::vector<std::vector<std::pair<std::string, bool>>> part_wish(n);
    for (int i = 0; i < n; ++i) {
      const Node& node = g_.nodes[i];
      if (node.op != Op::kTupleGet || !live_[i]) continue;
      auto& wish = part_wish[node.inputs[0]];
      wish.resize(types_[node.inputs[0]].parts.size());
      auto& w = wish[*node.attributes.get_int("index")];
      if (w.first.empty() || (!w.second && wanted(i).second)) w = wanted(i);
    }
    for (int i = 0; i < n; ++i) {
      const Node& node = g_.nodes[i];
      if (!live_[i] || !names_[i].empty()) continue;
      if (node.op == Op::kTupleGet) {
        names_[i] = {names_[node.inputs[0]][*node.attributes.get_int("index")]};
      } else if (node.op == Op::kTuple) {
        for (int in : node.inputs) names_[i].push_back(names_[in][0]);
      } else if (types_[i].is_tuple) {
        part_wish[i].resize(types_[i].parts.size());
        for (const auto& [w, owner] : part_wish[i]) names_[i].push_back(claim(w, owner));
      } else {
        const auto [w, owner] = wanted(i);
        names_[i] = {claim(w, owner)};
      }
    }
  }

  // The enclosing-graph values an opaque node's subgraphs read, in the
  // order the importer appended them as inputs.
  static std::vector<std::string> subgraph_reads(const Node& node) {
    const std::string* blob = node.attributes.get_string(kAttrBlob);
    if (blob == nullptr || !node.attributes.get_int(kExplicitInputs)) return {};
    onnx::NodeProto attrs;
    if (!parse_base64(*blob, &attrs)) return {};
    const std::set<std::string> outer = node_outer_names(attrs);
    return {outer.begin(), outer.end()};
  }

  // Computes the folded nodes that feed the graph and writes them (and the
  // weights among them) as initializers.
  absl::Status write_folded() {
    Graph cone;
    cone.name = g_.name;
    cone.weights = g_.weights;
    std::vector<int> remap(g_.nodes.size(), -1);
    std::vector<int> wanted;
    for (int i = 0; i < g_.size(); ++i) {
      if (!folded_[i] || !live_[i]) continue;
      Node node = g_.nodes[i];
      for (int& in : node.inputs) in = remap[in];
      remap[i] = cone.size();
      cone.nodes.push_back(std::move(node));
      if (frontier_[i]) {
        cone.outputs.push_back({remap[i], names_[i][0]});
        wanted.push_back(i);
      }
    }
    if (wanted.empty()) return absl::OkStatus();
    absl::StatusOr<std::vector<Tensor>> values = evaluate(cone, {});
    if (!values.ok()) return with_context(values.status(), "computing the weights");
    for (std::size_t k = 0; k < wanted.size(); ++k)
      tensor_to_proto((*values)[k], names_[wanted[k]][0], out_->add_initializer());
    return absl::OkStatus();
  }

  std::string constant(const Tensor& value) {
    std::string name = fresh("saturn_const");
    tensor_to_proto(value, name, out_->add_initializer());
    return name;
  }
  std::string ints_constant(const Ints& values) {
    return constant(Tensor(TensorType{DType::kInt64, {static_cast<std::int64_t>(values.size())}},
                           Ints(values)));
  }
  std::string scalar_constant(double value) {
    return constant(Tensor::scalar(static_cast<float>(value)));
  }

  onnx::NodeProto* node(std::string_view op_type, std::vector<std::string> inputs,
                        std::vector<std::string> outputs) {
    onnx::NodeProto* n = out_->add_node();
    n->set_op_type(std::string(op_type));
    for (std::string& in : inputs) n->add_input(std::move(in));
    for (std::string& o : outputs) n->add_output(std::move(o));
    return n;
  }
  static void set_int(onnx::NodeProto* n, const char* key, std::int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void set_float(onnx::NodeProto* n, const char* key, double v) {
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void set_ints(onnx::NodeProto* n, const char* key, const Ints& v) {
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t x : v) a->add_ints(x);
  }

  // `x` transformed by a chain of unary ONNX operators into `out`.
  std::string unary(std::string_view op_type, const std::string& x, std::string out = {}) {
    if (out.empty()) out = fresh("saturn_tmp");
    node(op_type, {x}, {out});
    return out;
  }
  std::string binary(std::string_view op_type, const std::string& a, const std::string& b,
                     std::string out = {}) {
    if (out.empty()) out = fresh("saturn_tmp");
    node(op_type, {a, b}, {out});
    return out;
  }

  absl::Status emit(int i) {
    const Node& n = g_.nodes[i];
    const Attributes& a = n.attributes;
    std::vector<std::string> in;
    for (int x : n.inputs) in.push_back(names_[x].empty() ? std::string() : names_[x][0]);
    const std::string out = names_[i].empty() ? std::string() : names_[i][0];
    const std::size_t rank = types_[i].parts[0].rank();
    switch (n.op) {
      case Op::kInput:
      case Op::kTupleGet:
      case Op::kTuple:
        return absl::OkStatus();  // the interface, or names only
      case Op::kWeight:
      case Op::kConstant:
        return absl::InternalError("a weight that was not folded");
      case Op::kEnlarge:
      case Op::kMergeGroups:
        return absl::InvalidArgumentError(
            "this kernel rewrite applies to weights only; its input is not a weight");
      case Op::kGemm: {
        auto* g = node("Gemm", in, {out});
        if (*a.get_float("alpha") != 1.0) set_float(g, "alpha", *a.get_float("alpha"));
        if (*a.get_float("beta") != 1.0) set_float(g, "beta", *a.get_float("beta"));
        if (*a.get_int("transA") != 0) set_int(g, "transA", 1);
        if (*a.get_int("transB") != 0) set_int(g, "transB", 1);
        return absl::OkStatus();
      }
      case Op::kConv: {
        const std::string& act = *a.get_string("activation");
        std::string conv_out = act == "none" ? out : fresh("saturn_tmp");
        auto* c = node("Conv", in, {conv_out});
        set_ints(c, "strides", *a.get_ints("strides"));
        set_ints(c, "pads", *a.get_ints("pads"));
        set_ints(c, "dilations", *a.get_ints("dilations"));
        set_int(c, "group", *a.get_int("group"));
        if (act == "relu") unary("Relu", conv_out, out);
        if (act == "sigmoid") unary("Sigmoid", conv_out, out);
        if (act == "tanh") unary("Tanh", conv_out, out);
        return absl::OkStatus();
      }
      case Op::kGelu: {
        // GELU is an ONNX operator only from opset 20: x * 0.5 * (1 + erf(x / sqrt 2)).
        std::string e = unary("Erf", binary("Div", in[0], scalar_constant(std::sqrt(2.0))));
        std::string half = binary("Mul", in[0], scalar_constant(0.5));
        binary("Mul", half, binary("Add", e, scalar_constant(1.0)), out);
        return absl::OkStatus();
      }
      case Op::kClip: {
        if (opset_ < 11) {
          auto* c = node("Clip", in, {out});
          set_float(c, "min", *a.get_float("min"));
          set_float(c, "max", *a.get_float("max"));
        } else {
          node("Clip",
               {in[0], scalar_constant(*a.get_float("min")), scalar_constant(*a.get_float("max"))},
               {out});
        }
        return absl::OkStatus();
      }
      case Op::kSoftmax: {
        std::int64_t axis = *normalize_axis(*a.get_int("axis"), rank);
        if (opset_ >= 13 || axis + 1 == static_cast<std::int64_t>(rank)) {
          set_int(node("Softmax", in, {out}), "axis", axis);
          return absl::OkStatus();
        }
        // Before opset 13 Softmax works on the last axes flattened: move
        // `axis` last, and back.
        Ints perm(rank);
        for (std::size_t k = 0; k < rank; ++k) perm[k] = static_cast<std::int64_t>(k);
        std::swap(perm[axis], perm[rank - 1]);
        std::string t = fresh("saturn_tmp"), s = fresh("saturn_tmp");
        set_ints(node("Transpose", in, {t}), "perm", perm);
        set_int(node("Softmax", {t}, {s}), "axis", static_cast<std::int64_t>(rank) - 1);
        set_ints(node("Transpose", {s}, {out}), "perm", perm);
        return absl::OkStatus();
      }
      case Op::kLayerNorm: {
        std::int64_t axis = *normalize_axis(*a.get_int("axis"), rank);
        double eps = *a.get_float("epsilon");
        if (opset_ >= 17) {
          auto* l = node("LayerNormalization", in, {out});
          set_int(l, "axis", axis);
          set_float(l, "epsilon", eps);
          return absl::OkStatus();
        }
        // Before opset 17: the normalization spelled out. The variance
        // squares with Mul, not Pow 2 as PyTorch spells it: onnxruntime fuses
        // the Pow spelling (and the residual Add before it) into its
        // SkipLayerNormalization kernel, which on this project's 2-core x86
        // machine (onnxruntime 1.30, one thread) took about 800 us per call
        // on BERT-base's [1,128,768] activations against about 330 us for
        // the separate kernels: 4-5% of the whole model's latency.
        Ints axes;
        for (auto k = axis; k < static_cast<std::int64_t>(rank); ++k) axes.push_back(k);
        auto mean = [&](const std::string& x) {
          std::string m = fresh("saturn_tmp");
          set_ints(node("ReduceMean", {x}, {m}), "axes", axes);
          return m;
        };
        std::string centred = binary("Sub", in[0], mean(in[0]));
        std::string var = mean(binary("Mul", centred, centred));
        std::string denom = unary("Sqrt", binary("Add", var, scalar_constant(eps)));
        std::string scaled = binary("Mul", binary("Div", centred, denom), in[1]);
        binary("Add", scaled, in[2], out);
        return absl::OkStatus();
      }
      case Op::kBatchNorm:
        set_float(node("BatchNormalization", in, {out}), "epsilon", *a.get_float("epsilon"));
        return absl::OkStatus();
      case Op::kReduceMean: {
        auto* r = node("ReduceMean", in, {out});
        if (!a.get_ints("axes")->empty()) set_ints(r, "axes", *a.get_ints("axes"));
        set_int(r, "keepdims", *a.get_int("keepdims"));
        return absl::OkStatus();
      }
      case Op::kTranspose: {
        auto* t = node("Transpose", in, {out});
        if (!a.get_ints("perm")->empty()) set_ints(t, "perm", *a.get_ints("perm"));
        return absl::OkStatus();
      }
      case Op::kReshape:
        if (opset_ < 5)
          set_ints(node("Reshape", in, {out}), "shape", *a.get_ints("shape"));
        else
          node("Reshape", {in[0], ints_constant(*a.get_ints("shape"))}, {out});
        return absl::OkStatus();
      case Op::kFlatten:
        set_int(node("Flatten", in, {out}), "axis", *a.get_int("axis"));
        return absl::OkStatus();
      case Op::kConcat:
        set_int(node("Concat", in, {out}), "axis", axis_of(n, 0));
        return absl::OkStatus();
      case Op::kSplit: {
        onnx::NodeProto* s;
        if (opset_ < 13) {
          s = node("Split", in, names_[i]);
          set_ints(s, "split", *a.get_ints("split"));
        } else {
          s = node("Split", {in[0], ints_constant(*a.get_ints("split"))}, names_[i]);
        }
        set_int(s, "axis", axis_of(n, 0));
        return absl::OkStatus();
      }
      case Op::kSlice: {
        const Ints& steps = *a.get_ints("steps");
        if (opset_ < 10) {
          if (std::ranges::any_of(steps, [](std::int64_t s) { return s != 1; }))
            return absl::InvalidArgumentError("Slice with steps needs opset 10 or later");
          auto* s = node("Slice", in, {out});
          set_ints(s, "starts", *a.get_ints("starts"));
          set_ints(s, "ends", *a.get_ints("ends"));
          if (!a.get_ints("axes")->empty()) set_ints(s, "axes", *a.get_ints("axes"));
          return absl::OkStatus();
        }
        std::vector<std::string> args = {in[0], ints_constant(*a.get_ints("starts")),
                                         ints_constant(*a.get_ints("ends"))};
        Ints axes = *a.get_ints("axes");
        if (axes.empty() && !steps.empty()) {
          for (std::size_t k = 0; k < a.get_ints("starts")->size(); ++k)
            axes.push_back(static_cast<std::int64_t>(k));
        }
        if (!axes.empty()) args.push_back(ints_constant(axes));
        if (!steps.empty()) args.push_back(ints_constant(steps));
        node("Slice", args, {out});
        return absl::OkStatus();
      }
      case Op::kGather:
        set_int(node("Gather", in, {out}), "axis", axis_of(n, 0));
        return absl::OkStatus();
      case Op::kPad:
        if (opset_ < 11) {
          auto* p = node("Pad", in, {out});
          set_ints(p, "pads", *a.get_ints("pads"));
          set_float(p, "value", *a.get_float("value"));
        } else {
          std::vector<std::string> args = {in[0], ints_constant(*a.get_ints("pads"))};
          // The pad value in the data's own type; 0, the default, is left out.
          if (*a.get_float("value") != 0.0) args.push_back(scalar_constant(*a.get_float("value")));
          node("Pad", args, {out});
        }
        return absl::OkStatus();
      case Op::kMaxPool:
      case Op::kAveragePool: {
        auto* p = node(n.op == Op::kMaxPool ? "MaxPool" : "AveragePool", in, {out});
        set_ints(p, "kernel_shape", *a.get_ints("kernel_shape"));
        set_ints(p, "strides", *a.get_ints("strides"));
        set_ints(p, "pads", *a.get_ints("pads"));
        if (n.op == Op::kAveragePool && *a.get_int("count_include_pad") != 0)
          set_int(p, "count_include_pad", 1);
        return absl::OkStatus();
      }
      case Op::kOpaque:
        return emit_opaque(i, in);
      default:
        // The operators whose ONNX form is their IR form, without attributes.
        node(op_name(n.op), in, {out});
        return absl::OkStatus();
    }
  }

  // A node's `axis` attribute as a non-negative axis of input `k` (negative
  // axes are valid ONNX only from opset 11).
  std::int64_t axis_of(const Node& n, std::size_t k) const {
    const std::int64_t axis = *n.attributes.get_int("axis");
    return normalize_axis(axis, types_[n.inputs[k]].parts[0].rank()).value_or(axis);
  }

  absl::Status emit_opaque(int i, std::vector<std::string> in) {
    const Attributes& a = g_.nodes[i].attributes;
    std::vector<std::string> outer = subgraph_reads(g_.nodes[i]);
    if (outer.size() > in.size() ||
        a.get_int(kExplicitInputs).value_or(static_cast<std::int64_t>(in.size())) !=
            static_cast<std::int64_t>(in.size() - outer.size()))
      return absl::InvalidArgumentError(
          "the opaque node's subgraph inputs do not match its inputs");
    const std::size_t explicit_count = in.size() - outer.size();
    // Values a subgraph reads by name must be visible under that name.
    for (std::size_t k = 0; k < outer.size(); ++k) {
      const std::string& have = in[explicit_count + k];
      if (have == outer[k]) continue;
      auto [it, fresh_alias] = aliases_.emplace(outer[k], have);
      if (!fresh_alias && it->second != have)
        return absl::InvalidArgumentError(
            fmt::format("two values would need the name '{}' that a subgraph reads", outer[k]));
      if (fresh_alias) {
        if (taken_.contains(outer[k]))
          return absl::InvalidArgumentError(fmt::format(
              "the name '{}' that a subgraph reads is taken by another value", outer[k]));
        taken_.insert(outer[k]);
        unary("Identity", have, outer[k]);
      }
    }
    in.resize(explicit_count);
    if (const Ints* absent = a.get_ints(kAbsentInputs)) {
      for (std::int64_t pos : *absent) {
        if (pos < 0 || pos > static_cast<std::int64_t>(in.size()))
          return absl::InvalidArgumentError("malformed absent_inputs");
        in.insert(in.begin() + pos, std::string());
      }
    }
    std::vector<std::string> outs = names_[i];
    if (const Ints* absent = a.get_ints(kAbsentOutputs)) {
      for (std::int64_t pos : *absent) {
        if (pos < 0 || pos >= static_cast<std::int64_t>(outs.size()))
          return absl::InvalidArgumentError("malformed absent_outputs");
        outs[pos].clear();
      }
    }
    onnx::NodeProto* n = node(*a.get_string("op_type"), in, outs);
    n->set_domain(*a.get_string("domain"));
    if (const std::string* blob = a.get_string(kAttrBlob)) {
      onnx::NodeProto attrs;
      if (!parse_base64(*blob, &attrs))
        return absl::InvalidArgumentError("malformed onnx_attributes");
      *n->mutable_attribute() = attrs.attribute();
    }
    return absl::OkStatus();
  }

  // The ONNX type of part `p` of node `i`.
  absl::Status value_type(int i, std::size_t p, onnx::TypeProto* type) const {
    const TensorType& t = types_[i].parts[p];
    if (t.dtype != DType::kOther) {
      set_tensor_type(t, type);
      return absl::OkStatus();
    }
    const Attributes& a = g_.nodes[i].attributes;
    const std::string* text = g_.nodes[i].op == Op::kInput
                                  ? a.get_string("onnx_type")
                                  : a.get_string(fmt::format("{}{}", kOutTypePrefix, p));
    if (text == nullptr || !parse_base64(*text, type))
      return absl::InvalidArgumentError(
          fmt::format("the type of non-tensor value {} is unknown", node_label(g_, i)));
    return absl::OkStatus();
  }

  // Graph inputs, outputs and value_info.
  absl::Status write_interface() {
    for (int i = 0; i < g_.size(); ++i) {
      if (g_.nodes[i].op != Op::kInput) continue;
      auto* v = out_->add_input();
      v->set_name(names_[i][0]);
      if (absl::Status s = value_type(i, 0, v->mutable_type()); !s.ok()) return s;
      if (auto d = g_.input_defaults.find(names_[i][0]); d != g_.input_defaults.end())
        tensor_to_proto(*d->second, names_[i][0], out_->add_initializer());
    }
    std::set<std::string> outputs;
    for (const GraphOutput& o : g_.outputs) {
      if (types_[o.node].is_tuple)
        return absl::InvalidArgumentError(fmt::format("output '{}' is a tuple", o.name));
      if (names_[o.node][0] != o.name) unary("Identity", names_[o.node][0], o.name);
      auto* v = out_->add_output();
      v->set_name(o.name);
      outputs.insert(o.name);
      int node = o.node;
      std::size_t part = 0;
      // An output read from a tuple is typed by the tuple's producer.
      if (g_.nodes[node].op == Op::kTupleGet) {
        part = static_cast<std::size_t>(*g_.nodes[node].attributes.get_int("index"));
        node = g_.nodes[node].inputs[0];
      }
      if (absl::Status s = value_type(node, part, v->mutable_type()); !s.ok()) return s;
    }
    for (int i = 0; i < g_.size(); ++i) {
      const Op op = g_.nodes[i].op;
      if (!live_[i] || folded_[i] || op == Op::kInput || op == Op::kTupleGet || op == Op::kTuple)
        continue;
      for (std::size_t p = 0; p < types_[i].parts.size(); ++p) {
        const TensorType& t = types_[i].parts[p];
        if (t.dtype == DType::kOther || p >= names_[i].size() || names_[i][p].empty() ||
            outputs.contains(names_[i][p]))
          continue;
        auto* v = out_->add_value_info();
        v->set_name(names_[i][p]);
        set_tensor_type(t, v->mutable_type());
      }
    }
    return absl::OkStatus();
  }

  const Graph& g_;
  std::vector<ValueType> types_;
  std::int64_t opset_ = kDefaultOpset;
  onnx::ModelProto model_;
  onnx::GraphProto* out_ = nullptr;
  std::vector<bool> live_, folded_, frontier_;
  std::vector<std::vector<std::string>> names_;
  std::set<std::string> taken_, reserved_;
  std::map<std::string, std::string> aliases_;
  int counter_ = 0;
};

}  // namespace

absl::StatusOr<std::string> to_onnx_model(const Graph& graph) { return Exporter(graph).run(); }

absl::Status save_onnx_model(const Graph& graph, const std::string& path) {
  absl::StatusOr<std::string> bytes = to_onnx_model(graph);
  if (!bytes.ok()) return with_context(bytes.status(), path);
  return write_text_file(path, *bytes);
}

}  // namespace saturn::tensor

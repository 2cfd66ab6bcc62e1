// The subgraphs of opaque control-flow nodes (If's branches, Loop's and
// Scan's bodies) as models of their own, and back (onnx.h).
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/onnx/exporter.h"
#include "saturn/onnx/onnx.h"
#include "saturn/onnx/proto.h"
#include "saturn/tensor/probe.h"

namespace saturn::tensor {

namespace {

using onnx_io::kAttrBlob;
using onnx_io::kExplicitInputs;

std::optional<onnx::NodeProto> attributes_of(const Node& n) {
  const std::string* blob = n.attributes.get_string(kAttrBlob);
  onnx::NodeProto attrs;
  if (n.op != Op::kOpaque || blob == nullptr || !onnx_io::parse_base64(*blob, &attrs))
    return std::nullopt;
  return attrs;
}

// The IR inputs of opaque node `n` that are the values its subgraphs read
// from the enclosing graph, by name (node_outer_names' order).
std::map<std::string, int> outer_inputs(const Node& n, const onnx::NodeProto& attrs) {
  const std::set<std::string> names = onnx_io::node_outer_names(attrs);
  std::map<std::string, int> out;
  if (names.size() > n.inputs.size()) return out;  // malformed: nothing is read
  const std::size_t first = n.inputs.size() - names.size();
  std::size_t k = first;
  for (const std::string& name : names) out[name] = n.inputs[k++];
  return out;
}

// How a value a subgraph reads is declared as its model's input: each
// axis's size, or the name of the symbol it is the size of ("batch"); or
// why it cannot be declared.
struct ReadAxes {
  std::vector<std::string> symbols;  // per axis: "" for a fixed size
  std::string why;
};

ReadAxes read_axes(const ValueType& t, const std::optional<ValueType>& at_probe,
                   const Symbols& symbols, const ProbeSizes& sizes) {
  if (t.is_tuple || t.tensor().dtype == DType::kOther) return {{}, "it is not a tensor"};
  const Dims& dims = t.tensor().dims;
  for (std::int64_t d : dims)
    if (d < 0) return {{}, "its shape is not known"};
  ReadAxes out{std::vector<std::string>(dims.size()), ""};
  if (symbols.empty()) return out;
  if (!at_probe || at_probe->is_tuple || at_probe->tensor().rank() != dims.size())
    return {{}, "its shape at other sizes of the symbolic dimensions is not known"};
  for (std::size_t i = 0; i < dims.size(); ++i) {
    std::string axis = axis_expression(dims[i], at_probe->tensor().dims[i], symbols, sizes);
    if (axis == "?" || axis.find('*') != std::string::npos)
      return {{}, "an axis of it changes with the symbolic dimensions as no one of them does"};
    out.symbols[i] = std::move(axis);
  }
  return out;
}

void add_input(onnx::GraphProto& g, const std::string& name, const TensorType& t,
               const std::vector<std::string>& symbols) {
  onnx::ValueInfoProto* v = g.add_input();
  v->set_name(name);
  auto* tensor = v->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx_io::dtype_to_onnx(t.dtype));
  auto* shape = tensor->mutable_shape();
  for (std::size_t i = 0; i < t.dims.size(); ++i) {
    if (!symbols[i].empty())
      shape->add_dim()->set_dim_param(symbols[i]);
    else
      shape->add_dim()->set_dim_value(t.dims[i]);
  }
}

// Renames the values `g` reads or defines by `renamed`, in nested graphs too.
void rename_values(onnx::GraphProto& g, const std::map<std::string, std::string>& renamed) {
  auto rename = [&](std::string* name) {
    if (auto it = renamed.find(*name); it != renamed.end()) *name = it->second;
  };
  for (onnx::TensorProto& t : *g.mutable_initializer()) rename(t.mutable_name());
  for (onnx::NodeProto& n : *g.mutable_node()) {
    for (std::string& in : *n.mutable_input()) rename(&in);
    for (std::string& out : *n.mutable_output()) rename(&out);
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_values(*a.mutable_g(), renamed);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) rename_values(sub, renamed);
    }
  }
}

// The values a subgraph's export named, prefixed with `prefix` (its outputs
// and formal inputs keep their names): the exporter's names are unique in
// one model, not beside the enclosing graph's.
void prefix_inner_names(onnx::GraphProto& g, const std::string& prefix) {
  std::set<std::string> kept;
  for (const onnx::ValueInfoProto& v : g.input()) kept.insert(v.name());
  for (const onnx::ValueInfoProto& v : g.output()) kept.insert(v.name());
  std::map<std::string, std::string> renamed;
  auto add = [&](const std::string& name) {
    if (!name.empty() && !kept.contains(name)) renamed[name] = prefix + name;
  };
  for (const onnx::TensorProto& t : g.initializer()) add(t.name());
  for (const onnx::NodeProto& n : g.node())
    for (const std::string& out : n.output()) add(out);
  rename_values(g, renamed);
  for (onnx::ValueInfoProto& v : *g.mutable_value_info())
    if (auto it = renamed.find(v.name()); it != renamed.end()) v.set_name(it->second);
}

// The value of node `id` when it is a weight or a constant.
std::optional<Tensor> fixed_value(const Graph& graph, int id) {
  const Node& n = graph.nodes[static_cast<std::size_t>(id)];
  if (n.op != Op::kWeight && n.op != Op::kConstant) return std::nullopt;
  Graph one;
  one.nodes = {n};
  one.outputs = {{0, n.name}};
  if (auto w = graph.weights.find(n.name); w != graph.weights.end()) one.weights.insert(*w);
  absl::StatusOr<std::vector<Tensor>> value = evaluate(one, {});
  if (!value.ok() || value->size() != 1) return std::nullopt;
  return std::move(value->front());
}

}  // namespace

std::vector<Subgraph> subgraphs_of(const Graph& graph) {
  std::vector<Subgraph> out;
  std::optional<absl::StatusOr<std::vector<ValueType>>> typed;
  std::optional<std::vector<std::optional<ValueType>>> probe;
  const ProbeSizes sizes = probe_sizes(graph.symbols);
  Opsets opsets = graph.opsets;
  for (auto& [domain, version] : opsets)
    if (onnx_io::is_default_domain(domain)) version = std::min(version, max_onnx_opset());
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[static_cast<std::size_t>(i)];
    std::optional<onnx::NodeProto> attrs = attributes_of(n);
    if (!attrs || std::ranges::none_of(attrs->attribute(), [](const auto& a) { return a.has_g(); }))
      continue;
    if (!typed) typed = infer_types(graph);
    if (!typed->ok()) return {};
    const std::vector<ValueType>& types = **typed;
    const std::map<std::string, int> outer = outer_inputs(n, *attrs);
    for (const onnx::AttributeProto& a : attrs->attribute()) {
      if (!a.has_g()) continue;
      Subgraph sub{.node = i, .attribute = a.name()};
      onnx::ModelProto model;
      model.set_ir_version(8);
      for (const auto& [domain, version] : opsets) {
        onnx::OperatorSetIdProto* id = model.add_opset_import();
        id->set_domain(domain);
        id->set_version(version);
      }
      *model.mutable_graph() = a.g();
      for (const std::string& name : onnx_io::outer_names(a.g())) {
        auto read = outer.find(name);
        if (read == outer.end()) {
          sub.why = fmt::format("the node's inputs do not hold '{}', which the subgraph reads", name);
          break;
        }
        const int id = read->second;
        const ValueType& t = types[static_cast<std::size_t>(id)];
        if (!graph.symbols.empty() && !probe)
          probe = probe_types(graph, types);
        // A weight it reads is a weight of its model too (folded with the
        // rest); any other value an input, its axes that follow a symbol
        // named after it.
        if (std::optional<Tensor> value = fixed_value(graph, id)) {
          onnx_io::tensor_to_proto(*value, name, model.mutable_graph()->add_initializer());
        } else {
          const ReadAxes axes =
              read_axes(t, probe ? (*probe)[static_cast<std::size_t>(id)] : std::nullopt,
                        graph.symbols, sizes);
          if (!axes.why.empty() && sub.why.empty())
            sub.why = fmt::format("it reads '{}' from the enclosing graph, and {}", name, axes.why);
          if (axes.why.empty()) add_input(*model.mutable_graph(), name, t.tensor(), axes.symbols);
        }
        sub.outer.push_back(name);
      }
      if (sub.why.empty()) model.SerializeToString(&sub.model);
      out.push_back(std::move(sub));
    }
  }
  return out;
}

absl::Status replace_subgraph(Graph& graph, const Subgraph& sub, const Graph& optimized) {
  Node& n = graph.nodes.at(static_cast<std::size_t>(sub.node));
  std::optional<onnx::NodeProto> attrs = attributes_of(n);
  if (!attrs) return absl::InvalidArgumentError("not an opaque node with subgraphs");
  const std::map<std::string, int> old_outer = outer_inputs(n, *attrs);
  auto it = std::ranges::find_if(*attrs->mutable_attribute(),
                                 [&](const onnx::AttributeProto& a) { return a.name() == sub.attribute; });
  if (it == attrs->mutable_attribute()->end() || !it->has_g())
    return absl::InvalidArgumentError(fmt::format("no graph attribute '{}'", sub.attribute));
  absl::StatusOr<onnx::ModelProto> model = onnx_io::Exporter(optimized).run();
  if (!model.ok()) return model.status();
  onnx::GraphProto body = std::move(*model->mutable_graph());
  // The enclosing values it reads are read by name again, not inputs.
  const std::set<std::string> outer(sub.outer.begin(), sub.outer.end());
  auto* inputs = body.mutable_input();
  inputs->erase(std::remove_if(inputs->begin(), inputs->end(),
                               [&](const onnx::ValueInfoProto& v) { return outer.contains(v.name()); }),
                inputs->end());
  auto* weights = body.mutable_initializer();
  weights->erase(std::remove_if(weights->begin(), weights->end(),
                                [&](const onnx::TensorProto& t) { return outer.contains(t.name()); }),
                 weights->end());
  if (body.input_size() != it->g().input_size() || body.output_size() != it->g().output_size())
    return absl::InternalError("the optimized subgraph's inputs or outputs differ from the original's");
  // Its outputs as the original declared them, and no intermediate types:
  // the export typed those at the given sizes, and the enclosing model's
  // shape inference runs at others too.
  for (int k = 0; k < body.output_size(); ++k)
    if (body.output(k).name() != it->g().output(k).name())
      return absl::InternalError("the optimized subgraph's outputs are named otherwise");
  *body.mutable_output() = it->g().output();
  body.clear_value_info();
  prefix_inner_names(body, fmt::format("{}/{}/", n.name, sub.attribute));
  // Its new names may not hide a value of the enclosing graph.
  absl::flat_hash_set<std::string> enclosing;
  for (const Node& m : graph.nodes) enclosing.insert(m.name);
  for (const auto& [name, w] : graph.weights) enclosing.insert(name);
  for (const onnx::NodeProto& m : body.node())
    for (const std::string& o : m.output())
      if (enclosing.contains(o) && !outer.contains(o))
        return absl::InvalidArgumentError(
            fmt::format("the optimized subgraph names a value '{}' as the enclosing graph does", o));
  body.set_name(it->g().name());
  *it->mutable_g() = std::move(body);
  std::vector<int> inputs_now(n.inputs.begin(),
                              n.inputs.end() - static_cast<std::ptrdiff_t>(old_outer.size()));
  const std::size_t explicit_count = inputs_now.size();
  for (const std::string& name : onnx_io::node_outer_names(*attrs)) {
    auto read = old_outer.find(name);
    if (read == old_outer.end())
      return absl::InternalError(fmt::format("the optimized subgraph reads a new value '{}'", name));
    inputs_now.push_back(read->second);
  }
  n.inputs = std::move(inputs_now);
  n.attributes.set(kExplicitInputs, static_cast<std::int64_t>(explicit_count));
  n.attributes.set(kAttrBlob, onnx_io::serialize_base64(*attrs));
  return absl::OkStatus();
}

}  // namespace saturn::tensor

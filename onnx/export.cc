// IR → ONNX. See onnx.h.
//
// This file holds the entry points, the graph's liveness, folded weights,
// value names and interface; export_ops.cc writes the operators.
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "onnx/checker.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/onnx/exporter.h"
#include "saturn/onnx/onnx.h"
#include "saturn/onnx/proto.h"

namespace saturn::tensor {

namespace onnx_io {

namespace {

void set_tensor_type(const TensorType& t, onnx::TypeProto* type) {
  auto* tt = type->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(t.dtype));
  auto* shape = tt->mutable_shape();
  for (std::int64_t d : t.dims) {
    auto* dim = shape->add_dim();
    if (d != kUnknownDim) dim->set_dim_value(d);
  }
}

}  // namespace

absl::StatusOr<onnx::ModelProto> Exporter::run() {
  absl::StatusOr<std::vector<ValueType>> types = infer_types(g_);
  if (!types.ok()) return types.status();
  types_ = std::move(*types);
  std::vector<std::pair<std::string, std::int64_t>> opsets = g_.opsets;
  if (opsets.empty()) opsets.emplace_back("", kDefaultOpset);
  for (auto [domain, version] : opsets) {
    // Written in the spelling libonnx checks; raise_to_versions respells it.
    if (is_default_domain(domain)) opset_ = version = std::min(version, max_onnx_opset());
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
  if (symbolic()) start_probe();
  for (int i = 0; i < g_.size(); ++i) {
    if (!live_[i] || folded_[i]) continue;
    const int first_proto = out_->node_size();
    absl::Status s = symbolic() ? probe_node(i) : absl::OkStatus();
    if (s.ok()) s = emit(i);
    if (s.ok() && symbolic() && by_inference(i)) s = probe_opaque(i, first_proto);
    if (s.ok() && symbolic()) track_shape_values(first_proto);
    if (!s.ok())
      return with_context(s,
                          fmt::format("node {} ({})", node_label(g_, i), op_name(g_.nodes[i].op)));
  }
  if (absl::Status s = write_interface(); !s.ok()) return s;
  return std::move(model_);
}

void Exporter::mark_live_and_foldable() {
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
      // The value operators compute on every plain element type (a zero
      // point cast to uint8); the others on the interpreter's own.
      for (const TensorType& t : types_[i].parts)
        ok = ok && (is_computable(t.dtype) || is_float(t.dtype) ||
                    (is_value_op(node.op) && is_plain_number(t.dtype)));
    }
    folded_[i] = ok;
  }
  // A widened 8-bit weight stays integer in the file (the runtime widens it
  // at load), and what computes on it from there stays a node, unless the
  // result is an integer again (a weight moved to uint8: an initializer
  // then) or a kernel rewrite reads it (ONNX has no operator for those):
  // then the whole computation is folded.
  std::vector<bool> must_fold(n, false);
  auto integer_weight = [&](int x) {
    return weight_only[x] && (types_[x].is_tuple || !is_float(types_[x].tensor().dtype));
  };
  for (int j = 0; j < n; ++j) {
    if (weight_only[j] || !live_[j]) continue;
    for (int in : g_.nodes[j].inputs) must_fold[in] = must_fold[in] || integer_weight(in);
  }
  for (const GraphOutput& o : g_.outputs) must_fold[o.node] = must_fold[o.node] || integer_weight(o.node);
  for (int i = n - 1; i >= 0; --i) {
    const Op op = g_.nodes[i].op;
    if (!must_fold[i] && op != Op::kEnlarge && op != Op::kMergeGroups) continue;
    for (int in : g_.nodes[i].inputs) must_fold[in] = must_fold[in] || weight_only[in];
  }
  for (int i = 0; i < n; ++i) {
    const Node& node = g_.nodes[i];
    if (!folded_[i] || node.op == Op::kWeight || must_fold[i]) continue;
    const bool widens = node.inputs.size() == 1 && !types_[i].is_tuple &&
                        widens_integer_weight(node.op, types_[node.inputs[0]].tensor(), types_[i].tensor());
    folded_[i] = !widens && std::ranges::all_of(node.inputs, [&](int in) { return folded_[in]; });
  }
  frontier_.assign(n, false);
  for (int i = 0; i < n; ++i) {
    if (!live_[i] || folded_[i]) continue;
    for (int in : g_.nodes[i].inputs) frontier_[in] = frontier_[in] || folded_[in];
  }
  for (const GraphOutput& o : g_.outputs) frontier_[o.node] = frontier_[o.node] || folded_[o.node];
}

std::string Exporter::fresh(std::string_view base) {
  for (;;) {
    std::string name = fmt::format("{}_{}", base, counter_++);
    if (!taken_.contains(name) && !reserved_.contains(name)) {
      taken_.insert(name);
      return name;
    }
  }
}

std::string Exporter::claim(const std::string& wanted, bool owner) {
  if (!wanted.empty() && !taken_.contains(wanted) && (owner || !reserved_.contains(wanted))) {
    taken_.insert(wanted);
    return wanted;
  }
  return fresh("saturn");
}

void Exporter::assign_names() {
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

std::vector<std::string> Exporter::subgraph_reads(const Node& node) {
  const std::string* blob = node.attributes.get_string(kAttrBlob);
  if (blob == nullptr || !node.attributes.get_int(kExplicitInputs)) return {};
  onnx::NodeProto attrs;
  if (!parse_base64(*blob, &attrs)) return {};
  const std::set<std::string> outer = node_outer_names(attrs);
  return {outer.begin(), outer.end()};
}

absl::Status Exporter::write_folded() {
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
    add_initializer((*values)[k], names_[wanted[k]][0]);
  return absl::OkStatus();
}

void Exporter::add_initializer(const Tensor& value, const std::string& name,
                               onnx::GraphProto* graph) {
  if (graph == nullptr) graph = out_;
  onnx::TensorProto* t = graph->add_initializer();
  // The 4-bit integers are packed into the proto (write_model writes a
  // deferred tensor's bytes as they are in memory).
  if (!defer_weights_ || graph != out_ || value.dtype() == DType::kString ||
      is_4bit(value.dtype()) || value.data().size() < kLargeInitializerBytes) {
    tensor_to_proto(value, name, t);
    return;
  }
  t->set_name(name);
  t->set_data_type(dtype_to_onnx(value.dtype()));
  for (std::int64_t d : value.dims()) t->add_dims(d);
  t->set_raw_data("");  // write_model writes the bytes
  deferred_.insert_or_assign(name, value);
}

absl::StatusOr<Tensor> Exporter::initializer_value(int index) const {
  const onnx::TensorProto& t = out_->initializer(index);
  if (auto d = deferred_.find(t.name()); d != deferred_.end()) return d->second;
  return tensor_from_proto(t);
}

absl::Status Exporter::value_type(int i, std::size_t p, onnx::TypeProto* type) const {
  const TensorType& t = types_[i].parts[p];
  if (t.dtype != DType::kOther) {
    set_tensor_type(t, type);
    name_axes(i, p, type);
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

absl::Status Exporter::write_interface() {
  for (int i = 0; i < g_.size(); ++i) {
    if (g_.nodes[i].op != Op::kInput) continue;
    auto* v = out_->add_input();
    v->set_name(names_[i][0]);
    if (absl::Status s = value_type(i, 0, v->mutable_type()); !s.ok()) return s;
    if (absl::Status s = name_interface_axes(v->name(), i, 0, v->mutable_type()); !s.ok())
      return s;
    if (auto d = g_.input_defaults.find(names_[i][0]); d != g_.input_defaults.end())
      add_initializer(*d->second, names_[i][0]);
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
    if (absl::Status s = name_interface_axes(o.name, node, part, v->mutable_type()); !s.ok())
      return s;
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
      name_axes(i, p, v->mutable_type());
    }
  }
  return absl::OkStatus();
}

namespace {

// A model passes protobuf's limit past 2 GiB; its initializers of at least
// kLargeInitializerBytes then go to one external data file beside it.
constexpr std::size_t kMaxInlineBytes = INT_MAX;

absl::Status check_exported(const onnx::ModelProto& exported, const std::string& dir) {
  // The 4-bit integers are checked as their 8-bit kin (disguise_4bit).
  auto is_4bit_type = [](int elem_type) {
    return is_4bit(dtype_from_onnx(elem_type).value_or(DType::kFloat32));
  };
  const onnx::GraphProto& g = exported.graph();
  bool any = std::ranges::any_of(g.initializer(), [&](auto& t) { return is_4bit_type(t.data_type()); });
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const onnx::ValueInfoProto& v : *list)
      any = any || is_4bit_type(v.type().tensor_type().elem_type());
  std::optional<onnx::ModelProto> disguised;
  if (any) {
    disguised = exported;
    absl::StatusOr<FourBitValues> retyped = disguise_4bit(*disguised);
    if (!retyped.ok()) return retyped.status();
  }
  const onnx::ModelProto& model = disguised ? *disguised : exported;
  try {
    if (dir.empty()) {
      onnx::checker::check_model(model);
    } else {
      onnx::checker::CheckerContext ctx;
      ctx.set_ir_version(static_cast<int>(model.ir_version()));
      std::unordered_map<std::string, int> opsets;
      for (const auto& o : model.opset_import()) opsets[o.domain()] = static_cast<int>(o.version());
      ctx.set_opset_imports(opsets);
      ctx.set_model_dir(dir);
      onnx::checker::LexicalScopeContext scope;
      onnx::checker::check_graph(model.graph(), ctx, scope);
    }
  } catch (const std::exception& e) {
    return absl::InternalError(
        fmt::format("the exported model fails the ONNX checker: {}", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace

}  // namespace onnx_io

std::string external_data_file(const std::string& path) { return path + ".data"; }

absl::StatusOr<std::string> to_onnx_model(const Graph& graph) {
  absl::StatusOr<onnx::ModelProto> model = onnx_io::Exporter(graph).run();
  if (!model.ok()) return model.status();
  if (model->ByteSizeLong() > onnx_io::kMaxInlineBytes)
    return absl::ResourceExhaustedError(
        "the ONNX model is larger than protobuf's 2 GB limit (saved to a file, its weights go to "
        "an external data file)");
  if (absl::Status s = onnx_io::check_exported(*model, ""); !s.ok()) return s;
  onnx_io::raise_to_versions(*model, default_domain_opset(graph.opsets), graph.ir_version);
  std::string bytes;
  model->SerializeToString(&bytes);
  return bytes;
}

absl::Status save_onnx_model(const Graph& graph, const std::string& path) {
  // The weights go from the graph's tensors to the file (write_model), never
  // copied into the proto.
  onnx_io::Exporter exporter(graph, /*defer_weights=*/true);
  absl::StatusOr<onnx::ModelProto> model = exporter.run();
  if (!model.ok()) return with_context(model.status(), path);
  const std::map<std::string, Tensor>* weights = &exporter.deferred_weights();
  const std::map<std::string, Tensor> none;
  std::string dir;
  if (onnx_io::written_size(*model, *weights) > onnx_io::kMaxInlineBytes) {
    const std::filesystem::path data_path = external_data_file(path);
    if (absl::Status s = onnx_io::write_external_data(*model, *weights, data_path); !s.ok())
      return s;
    weights = &none;
    dir = data_path.parent_path().empty() ? "." : data_path.parent_path().string();
  }
  if (absl::Status s = onnx_io::check_exported(onnx_io::checkable(*model, *weights), dir); !s.ok())
    return with_context(s, path);
  onnx_io::raise_to_versions(*model, default_domain_opset(graph.opsets), graph.ir_version);
  return write_file_with(path, [&](int fd) { return onnx_io::write_model(*model, *weights, fd); });
}

}  // namespace saturn::tensor

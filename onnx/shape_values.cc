#include "saturn/onnx/shape_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <set>

#include "fmt/format.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "saturn/onnx/proto.h"
#include "saturn/onnx/runtime_types.h"
#include "saturn/tensor/probe.h"

namespace saturn::tensor::onnx_io {

namespace {

std::int64_t elements(const onnx::TensorProto& t) {
  return shape_value_count(std::span<const std::int64_t>(t.dims().data(), t.dims().size()));
}

std::optional<Dims> static_dims(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  Dims dims;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

// libonnx 1.12's data propagation reads a Shape's input type, and the
// dimension a Gather of it picks, without checking that there is one: where
// the inference of the node before failed (a model that holds at some
// sizes only, read at others, as the self-check reads every model; found by
// the fuzzer), it stops the process. Each version's propagation of the two
// is wrapped, once, to propagate nothing there, as for a value it does not
// know.
void guard_data_propagation() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto wrap = [](const std::string& op, auto propagates) {
      std::set<const onnx::OpSchema*> seen;
      constexpr int kNewestOpset = 64;  // past any opset libonnx knows
      for (int version = 1; version <= kNewestOpset; ++version) {
        const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op, version);
        if (schema == nullptr || !schema->has_data_propagation_function() || !seen.insert(schema).second)
          continue;
        onnx::DataPropagationFunction propagate = schema->GetDataPropagationFunction();
        const_cast<onnx::OpSchema*>(schema)->PartialDataPropagationFunction(
            [propagate, propagates](onnx::DataPropagationContext& ctx) {
              if (propagates(ctx)) propagate(ctx);
            });
      }
    };
    wrap("Shape", [](onnx::DataPropagationContext& ctx) {
      const onnx::TypeProto* in = ctx.getInputType(0);
      return in != nullptr && in->has_tensor_type() && in->tensor_type().has_shape();
    });
    wrap("Gather", [](onnx::DataPropagationContext& ctx) {
      const onnx::TensorShapeProto* data = ctx.getInputData(0);
      const onnx::TensorShapeProto* indices = ctx.getInputData(1);
      if (data == nullptr || indices == nullptr) return false;
      return std::ranges::all_of(indices->dim(), [&](const onnx::TensorShapeProto::Dimension& d) {
        return !d.has_dim_value() || (d.dim_value() >= -data->dim_size() && d.dim_value() < data->dim_size());
      });
    });
  });
}

void infer_shapes(onnx::ModelProto& model, bool data_prop) {
  if (data_prop) guard_data_propagation();
  onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict_mode=*/0, data_prop);
  onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
}


// What one round knows: the values computed or given, static types, and
// the types found here where ONNX's inference gives up (Einsum's).
struct Known {
  std::map<std::string, Tensor> values;
  std::map<std::string, Dims> dims;
  std::map<std::string, onnx::TypeProto> typed;
};

// The output dimensions of Einsum nodes whose inputs' are known: this
// build's libonnx infers only the output's rank, and a Shape of it (XLNet's
// relative shift) would leave everything after it untyped.
void type_einsums(const onnx::GraphProto& g, Known& known) {
  for (const onnx::NodeProto& n : g.node()) {
    if (n.op_type() != "Einsum" || !is_default_domain(n.domain()) || n.output_size() != 1 ||
        known.dims.contains(n.output(0)))
      continue;
    std::optional<std::vector<std::string>> terms;
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.name() == "equation") terms = einsum_terms(a.s());
    }
    if (!terms) continue;
    std::vector<Dims> dims;
    for (const std::string& input : n.input()) {
      auto d = known.dims.find(input);
      if (d == known.dims.end()) break;
      dims.push_back(d->second);
    }
    if (dims.size() != static_cast<std::size_t>(n.input_size())) continue;
    std::optional<std::map<char, std::int64_t>> size = einsum_sizes(*terms, dims);
    if (!size) continue;
    onnx::TypeProto type;
    auto* tt = type.mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (const onnx::ValueInfoProto& v : g.value_info()) {
      if (v.name() == n.output(0) && v.type().tensor_type().elem_type() != 0)
        tt->set_elem_type(v.type().tensor_type().elem_type());
    }
    Dims out;
    for (char c : terms->back()) {
      out.push_back(size->at(c));
      tt->mutable_shape()->add_dim()->set_dim_value(out.back());
    }
    known.dims[n.output(0)] = out;
    known.typed[n.output(0)] = std::move(type);
  }
}

// The outputs of onnxruntime's quantized contrib operators whose inputs'
// types are known (runtime_types.h).
void type_runtime_operators(const onnx::GraphProto& g, Known& known) {
  std::map<std::string, int> elem;
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() != 0)
      elem[v.name()] = v.type().tensor_type().elem_type();
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.value_info()) add(v);
  for (const auto& t : g.initializer()) elem[t.name()] = t.data_type();
  for (const auto& [name, type] : known.typed) elem[name] = type.tensor_type().elem_type();
  const ValueTypeLookup lookup = [&](const std::string& name) -> std::optional<std::pair<int, Dims>> {
    auto e = elem.find(name);
    auto d = known.dims.find(name);
    if (e == elem.end() || d == known.dims.end()) return std::nullopt;
    return std::pair{e->second, d->second};
  };
  for (const onnx::NodeProto& n : g.node()) {
    if (n.output_size() < 1 || known.dims.contains(n.output(0))) continue;
    if (std::optional<onnx::TypeProto> type = runtime_operator_type(n, lookup)) {
      known.dims[n.output(0)] = *static_dims(*type);
      elem[n.output(0)] = type->tensor_type().elem_type();
      known.typed[n.output(0)] = std::move(*type);
    }
  }
}

void read_types(const onnx::GraphProto& g, Known& known) {
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (std::optional<Dims> d = static_dims(v.type())) known.dims[v.name()] = *d;
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.value_info()) add(v);
  for (const auto& v : g.output()) add(v);
  for (const auto& t : g.initializer()) known.dims[t.name()] = Dims(t.dims().begin(), t.dims().end());
}

// Evaluates every node it can, in order; returns how many values it knows.
std::size_t evaluate_all(const onnx::GraphProto& g, Known& known) {
  const ValueLookup values = [&](const std::string& name) -> const Tensor* {
    auto it = known.values.find(name);
    return it == known.values.end() ? nullptr : &it->second;
  };
  const DimsLookup dims = [&](const std::string& name) -> std::optional<Dims> {
    auto it = known.dims.find(name);
    return it == known.dims.end() ? std::nullopt : std::optional(it->second);
  };
  for (const onnx::NodeProto& n : g.node()) {
    if (n.output_size() != 1 || known.values.contains(n.output(0))) continue;
    if (is_default_domain(n.domain()) && n.op_type() == "Constant") {
      std::optional<Tensor> t = constant_node_value(n);
      if (t && t->size() <= kMaxShapeValueElements) known.values[n.output(0)] = *t;
      continue;
    }
    if (std::optional<std::vector<Tensor>> out = evaluate_shape_node(n, values, dims)) {
      known.values[n.output(0)] = (*out)[0];
      known.dims[n.output(0)] = (*out)[0].dims();
    }
  }
  return known.values.size();
}

// `copy` without the nodes whose values are known, which become initializers.
onnx::ModelProto scratch_model(const onnx::ModelProto& model, const Known& known) {
  onnx::ModelProto scratch = inference_copy(model);
  onnx::GraphProto* s = scratch.mutable_graph();
  std::set<std::string> defined;
  for (const onnx::ValueInfoProto& v : s->input()) defined.insert(v.name());
  for (const onnx::TensorProto& t : s->initializer()) defined.insert(t.name());
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const onnx::NodeProto& n : s->node()) {
    if (n.output_size() == 1 && known.values.contains(n.output(0)) &&
        !defined.contains(n.output(0))) {
      tensor_to_proto(known.values.at(n.output(0)), n.output(0), s->add_initializer());
      continue;
    }
    *nodes.Add() = n;
  }
  *s->mutable_node() = std::move(nodes);
  for (const auto& [name, type] : known.typed) {
    if (defined.contains(name) || known.values.contains(name)) continue;
    onnx::ValueInfoProto* v = s->add_value_info();
    v->set_name(name);
    *v->mutable_type() = type;
  }
  return scratch;
}

// The types inference found in `scratch`, and those of the values computed
// (initializers there), as `model`'s value_info.
void copy_types(const onnx::ModelProto& scratch, const Known& known, onnx::ModelProto& model) {
  onnx::GraphProto* g = model.mutable_graph();
  // What the scratch typed replaces what was known, and a computed value's
  // type replaces both; what neither typed (the exporter's own annotations,
  // where ONNX's inference gives up) stays.
  std::map<std::string, onnx::ValueInfoProto> types;
  for (const onnx::ValueInfoProto& v : g->value_info()) types[v.name()] = v;
  for (const onnx::ValueInfoProto& v : scratch.graph().value_info()) types[v.name()] = v;
  std::set<std::string> given;
  for (const onnx::TensorProto& t : g->initializer()) given.insert(t.name());
  for (const onnx::ValueInfoProto& v : g->input()) given.insert(v.name());
  for (const onnx::NodeProto& n : g->node()) {
    if (n.output_size() != 1 || given.contains(n.output(0))) continue;
    auto it = known.values.find(n.output(0));
    if (it == known.values.end()) continue;
    onnx::ValueInfoProto& v = types[n.output(0)];
    v.Clear();
    v.set_name(n.output(0));
    auto* tt = v.mutable_type()->mutable_tensor_type();
    tt->set_elem_type(dtype_to_onnx(it->second.dtype()));
    auto* shape = tt->mutable_shape();
    for (std::int64_t d : it->second.dims()) shape->add_dim()->set_dim_value(d);
  }
  g->clear_value_info();
  for (auto& [name, v] : types) *g->add_value_info() = std::move(v);
  for (int k = 0; k < g->output_size(); ++k) {
    if (static_dims(scratch.graph().output(k).type()))
      *g->mutable_output(k) = scratch.graph().output(k);
  }
}

}  // namespace

onnx::ModelProto inference_copy(const onnx::ModelProto& model) {
  onnx::ModelProto copy;
  *copy.mutable_opset_import() = model.opset_import();
  copy.set_ir_version(model.ir_version());
  const onnx::GraphProto& g = model.graph();
  onnx::GraphProto* s = copy.mutable_graph();
  s->set_name(g.name());
  *s->mutable_input() = g.input();
  *s->mutable_output() = g.output();
  for (onnx::ValueInfoProto& v : *s->mutable_output()) {
    if (v.type().has_tensor_type() && !static_dims(v.type()))
      v.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  std::set<std::string> defined;
  for (const onnx::ValueInfoProto& v : g.input()) defined.insert(v.name());
  for (const onnx::TensorProto& t : g.initializer()) {
    if (elements(t) <= kMaxShapeValueElements) {
      *s->add_initializer() = t;
    } else if (!defined.contains(t.name())) {
      onnx::ValueInfoProto* v = s->add_input();
      v->set_name(t.name());
      auto* tt = v->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(t.data_type());
      for (std::int64_t d : t.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
    defined.insert(t.name());
  }
  *s->mutable_node() = g.node();
  return copy;
}

absl::Status infer_with_shape_values(onnx::ModelProto& model, ShapeValues* values,
                                     bool data_prop) {
  try {
    infer_shapes(model, data_prop);
    Known known;
    for (const onnx::TensorProto& t : model.graph().initializer()) {
      if (elements(t) > kMaxShapeValueElements) continue;
      if (absl::StatusOr<Tensor> v = tensor_from_proto(t); v.ok()) known.values[t.name()] = *v;
    }
    std::size_t before = known.values.size();
    // Each round types what the last round's values reach; a chain of
    // computed shapes through many layers needs a round per link at most,
    // and so does a chain of onnxruntime's contrib operators (a QOperator
    // BERT-base has six a layer): a round more for each.
    const auto contrib = std::ranges::count_if(
        model.graph().node(), [](const onnx::NodeProto& n) { return n.domain() == "com.microsoft"; });
    for (int round = 0; round < 64 + contrib; ++round) {
      read_types(model.graph(), known);
      const std::size_t typed = known.typed.size();
      type_einsums(model.graph(), known);
      type_runtime_operators(model.graph(), known);
      if (evaluate_all(model.graph(), known) == before && known.typed.size() == typed &&
          round > 0)
        break;
      before = known.values.size();
      onnx::ModelProto scratch = scratch_model(model, known);
      infer_shapes(scratch, data_prop);
      copy_types(scratch, known, model);
    }
    if (values) {
      for (const onnx::NodeProto& n : model.graph().node())
        for (const std::string& out : n.output())
          if (auto it = known.values.find(out); it != known.values.end()) (*values)[out] = it->second;
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
  return absl::OkStatus();
}

std::map<std::string, Dims> probe_dims(const onnx::ModelProto& model, const Symbols& symbols,
                                       ShapeValues* values) {
  std::map<std::string, Dims> out;
  onnx::ModelProto probe = inference_copy(model);
  const ProbeSizes sizes = probe_sizes(symbols);
  // The outputs' shapes as read hold at the base sizes.
  for (onnx::ValueInfoProto& v : *probe.mutable_graph()->mutable_output())
    if (v.type().has_tensor_type()) v.mutable_type()->mutable_tensor_type()->clear_shape();
  for (onnx::ValueInfoProto& v : *probe.mutable_graph()->mutable_input()) {
    auto it = symbols.axes.find(v.name());
    if (it == symbols.axes.end()) continue;
    auto& dims = *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
    for (int a = 0; a < dims.size() && a < static_cast<int>(it->second.size()); ++a) {
      if (std::optional<std::int64_t> size = axis_size(it->second[a], sizes))
        dims[a].set_dim_value(*size);
    }
  }
  // Without them the search is not kept from rewrites that hold at the
  // given sizes only after an opaque node; the export still checks them.
  // Without data propagation: on a model that holds at the given sizes only
  // (a Reshape whose computed shape fits them alone), libonnx's data
  // propagation at other sizes reaches a Shape of a value its inference
  // left untyped and stops the process (found by the fuzzer).
  if (!infer_with_shape_values(probe, values, /*data_prop=*/false).ok()) {
    if (values) values->clear();
    return out;
  }
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    Dims dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    out[v.name()] = std::move(dims);
  };
  for (const auto& v : probe.graph().input()) add(v);
  for (const auto& v : probe.graph().value_info()) add(v);
  for (const auto& v : probe.graph().output()) add(v);
  return out;
}

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.type() != b.type()) return false;
  switch (a.dtype()) {
    case DType::kFloat32:
      return std::ranges::equal(a.floats(), b.floats());
    case DType::kInt64:
      return std::ranges::equal(a.ints(), b.ints());
    case DType::kString:
      return std::ranges::equal(a.strings(), b.strings());
    default:
      return std::ranges::equal(a.bytes(), b.bytes());
  }
}

}  // namespace saturn::tensor::onnx_io

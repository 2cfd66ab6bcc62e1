// Models written for a newer default-domain opset than this build's libonnx
// knows: read through the newest opset it knows (lower_to_opset, see
// importer.h) and written back at their own (raise_to_versions, exporter.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "onnx/defs/schema.h"
#include "saturn/base/status.h"
#include "saturn/onnx/exporter.h"
#include "saturn/onnx/importer.h"
#include "saturn/onnx/opset_expansions.h"
#include "saturn/onnx/operator_schemas.h"
#include "saturn/onnx/proto.h"

namespace saturn::tensor::onnx_io {

namespace {

// The reductions whose axes became an input in opset 18 (ReduceSum did in 13).
const absl::flat_hash_set<std::string>& reductions_with_axes_input() {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      "ReduceMean", "ReduceMax",       "ReduceMin",        "ReduceProd",
      "ReduceL1",   "ReduceL2",        "ReduceLogSum",     "ReduceLogSumExp",
      "ReduceSumSquare"};
  return *ops;
}

// GridSample's modes, renamed in opset 20: (before, from opset 20 on).
constexpr std::pair<std::string_view, std::string_view> kGridSampleModes[] = {
    {"bilinear", "linear"}, {"bicubic", "cubic"}};

// Spells a GridSample's mode for opset 20 and later (`newer`) or before it.
void respell_grid_sample_mode(onnx::NodeProto& n, bool newer) {
  for (onnx::AttributeProto& a : *n.mutable_attribute()) {
    if (a.name() != "mode") continue;
    for (const auto& [before, after] : kGridSampleModes) {
      if (a.s() == (newer ? before : after)) {
        a.set_s(std::string(newer ? after : before));
        break;
      }
    }
  }
}

class Lowering {
 public:
  Lowering(onnx::ModelProto& model, std::int64_t from, std::int64_t to, ExpandedNodes* expanded,
           KeptNodes* kept)
      : model_(model), from_(from), to_(to), expanded_(expanded), kept_(kept) {}

  absl::Status run() {
    if (model_.ir_version() > kCheckedIrVersion) model_.set_ir_version(kCheckedIrVersion);
    if (absl::Status s = lower_graph(*model_.mutable_graph()); !s.ok()) return s;
    for (onnx::OperatorSetIdProto& op : *model_.mutable_opset_import())
      if (is_default_domain(op.domain())) op.set_version(to_);
    if (kept_any_) {
      onnx::OperatorSetIdProto* kept = model_.add_opset_import();
      kept->set_domain(std::string(kKeptDomain));
      kept->set_version(1);
    }
    return absl::OkStatus();
  }

 private:
  // `n` as the file writes it, in kKeptDomain (KeptNodes).
  void keep(onnx::NodeProto& n, const absl::Status& why) {
    n.set_domain(std::string(kKeptDomain));
    if (kept_ != nullptr && n.output_size() > 0) (*kept_)[n.output(0)] = std::string(message(why));
    kept_any_ = true;
  }

  absl::Status fail(const onnx::NodeProto& n, std::string_view why) const {
    return absl::InvalidArgumentError(fmt::format(
        "node '{}' ({}): {} (the model is at ONNX opset {}, which this build reads through "
        "opset {})",
        n.name(), n.op_type(), why, from_, to_));
  }

  // The int64 values of a constant input (an initializer or a Constant).
  absl::StatusOr<std::vector<std::int64_t>> constant_ints(const std::string& name) const {
    auto it = constants_.find(name);
    if (it == constants_.end())
      return absl::InvalidArgumentError(fmt::format("'{}' is computed at run time", name));
    absl::StatusOr<Tensor> t = tensor_from_proto(*it->second);
    if (!t.ok()) return t.status();
    if (t->dtype() != DType::kInt64)
      return absl::InvalidArgumentError(fmt::format("'{}' is not an int64 tensor", name));
    return std::vector<std::int64_t>(t->ints().begin(), t->ints().end());
  }

  // Drops attribute `name` when its value is the default `keep(a)` accepts;
  // an error otherwise.
  template <typename Default>
  absl::Status drop_default(onnx::NodeProto& n, std::string_view name, Default is_default) {
    auto* attrs = n.mutable_attribute();
    for (int i = 0; i < attrs->size(); ++i) {
      if (attrs->Get(i).name() != name) continue;
      if (!is_default(attrs->Get(i)))
        return fail(n, fmt::format("attribute {} has no equivalent in opset {}", name, to_));
      attrs->DeleteSubrange(i, 1);
      return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  absl::Status lower_reduction(onnx::NodeProto& n) {
    bool noop_with_empty_axes = false;
    for (const onnx::AttributeProto& a : n.attribute())
      if (a.name() == "noop_with_empty_axes") noop_with_empty_axes = a.i() != 0;
    if (absl::Status s = drop_default(n, "noop_with_empty_axes", [](auto&) { return true; });
        !s.ok())
      return s;
    if (n.input_size() < 2 || n.input(1).empty()) {
      if (noop_with_empty_axes) {  // no axes: the input unchanged
        n.set_op_type("Identity");
        n.clear_attribute();
      }
      n.mutable_input()->DeleteSubrange(1, n.input_size() - 1);
      return absl::OkStatus();
    }
    absl::StatusOr<std::vector<std::int64_t>> axes = constant_ints(n.input(1));
    if (!axes.ok()) return fail(n, fmt::format("its axes {}", message(axes.status())));
    n.mutable_input()->DeleteSubrange(1, n.input_size() - 1);
    if (axes->empty()) {
      if (noop_with_empty_axes) {
        n.set_op_type("Identity");
        n.clear_attribute();
      }
      return absl::OkStatus();
    }
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t axis : *axes) a->add_ints(axis);
    return absl::OkStatus();
  }

  // One node, lowered in place (or expanded into `out`); true when it was
  // expanded.
  absl::StatusOr<bool> lower_node(onnx::NodeProto& n, std::vector<onnx::NodeProto>& out) {
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_g()) {
        if (absl::Status s = lower_graph(*a.mutable_g()); !s.ok()) return s;
      }
      for (onnx::GraphProto& g : *a.mutable_graphs()) {
        if (absl::Status s = lower_graph(g); !s.ok()) return s;
      }
    }
    if (!is_default_domain(n.domain())) return false;
    // libonnx checks the spelling at opset `to_`, not the node as written.
    if (absl::Status s = check_operator_schema(n, "", from_); !s.ok()) return fail(n, message(s));
    const std::string& op = n.op_type();
    auto is_zero = [](const onnx::AttributeProto& a) { return a.i() == 0; };
    auto all_ones = [](const onnx::AttributeProto& a) {
      for (std::int64_t v : a.ints())
        if (v != 1) return false;
      return true;
    };
    // What a lowering that fails halfway has changed is put back.
    if (reductions_with_axes_input().contains(op)) {
      const onnx::NodeProto before = n;
      if (absl::Status s = lower_reduction(n); !s.ok()) keep(n = before, s);
      return false;
    }
    if (has_expansion(op)) {
      const DeclaredType declared = [&](const std::string& name) -> const onnx::TypeProto* {
        auto it = declared_.find(name);
        return it == declared_.end() ? nullptr : &it->second;
      };
      if (absl::Status s = expand_node(n, Source{declared, from_}, out); !s.ok()) {
        // A node its operator's definition refuses is an error, as libonnx's
        // checker makes it for the operators it knows.
        if (absl::IsInvalidArgument(s)) return fail(n, message(s));
        keep(n, fail(n, message(s)));
        out.clear();
        return false;
      }
      // An exact Gelu, an RMSNormalization, a causal Attention and a
      // RotaryEmbedding are IR operators, read whole where they fit
      // (Importer::add_expanded).
      if (expanded_ != nullptr && (op == "Gelu" || op == "RMSNormalization" || op == "Attention" ||
                                   op == "RotaryEmbedding"))
        (*expanded_)[n.output(0)] = n;
      return true;
    }
    const bool drops_attributes = op == "Split" || op == "Cast" || op == "CastLike" ||
                                  op == "AveragePool" || op == "LpPool" || op == "Resize" ||
                                  op == "QuantizeLinear" || op == "DequantizeLinear";
    const std::optional<onnx::NodeProto> before =
        drops_attributes ? std::optional<onnx::NodeProto>(n) : std::nullopt;
    absl::Status s = absl::OkStatus();
    if (op == "Split") {
      s = drop_default(n, "num_outputs",
                       [&](const onnx::AttributeProto& a) { return a.i() == n.output_size(); });
    } else if (op == "Cast" || op == "CastLike") {
      s = drop_default(n, "saturate", [](auto&) { return true; });  // only float8 targets read it
    } else if (op == "AveragePool" || op == "LpPool") {
      s = drop_default(n, "dilations", all_ones);
    } else if (op == "Resize") {
      s = drop_default(n, "antialias", is_zero);
      if (s.ok())
        s = drop_default(n, "keep_aspect_ratio_policy",
                         [](const onnx::AttributeProto& a) { return a.s() == "stretch"; });
      if (s.ok()) s = drop_default(n, "axes", [](auto&) { return false; });
    } else if (op == "Pad") {
      if (n.input_size() > 3 && !n.input(3).empty()) s = fail(n, "its axes input came in opset 18");
    } else if (op == "ScatterElements" || op == "ScatterND") {
      // The reduction stays: add and mul are opset 16's own, and ONNX's
      // checker and inference at opset 16-17 read opset 18's max and min
      // alike (the importer maps all five).
    } else if (op == "QuantizeLinear" || op == "DequantizeLinear") {
      s = drop_default(n, "block_size", is_zero);
      if (s.ok()) s = drop_default(n, "output_dtype", is_zero);
    } else if (op == "GridSample") {
      respell_grid_sample_mode(n, /*newer=*/false);
    } else if (op == "DFT") {
      s = fail(n, "its axis moved to an input in opset 20");
    } else if (onnx::OpSchemaRegistry::Schema(op, static_cast<int>(to_), "") == nullptr) {
      s = fail(n, fmt::format("the operator is newer than opset {}", to_));
    }
    if (!s.ok()) keep(before ? n = *before : n, s);
    return false;
  }

  // The constants and declared types of graph `g` (a subgraph's too: ONNX
  // names each value once in a model).
  void collect(const onnx::GraphProto& g) {
    for (const onnx::TensorProto& t : g.initializer()) {
      constants_[t.name()] = &t;
      auto* tt = declared_[t.name()].mutable_tensor_type();
      tt->set_elem_type(t.data_type());
      for (std::int64_t d : t.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
    for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
      for (const onnx::ValueInfoProto& v : *list) declared_[v.name()] = v.type();
    for (const onnx::NodeProto& n : g.node()) {
      if (n.op_type() == "Constant" && is_default_domain(n.domain()) && n.output_size() == 1) {
        for (const onnx::AttributeProto& a : n.attribute())
          if (a.name() == "value" && a.has_t()) constants_[n.output(0)] = &a.t();
      }
    }
  }

  absl::Status lower_graph(onnx::GraphProto& g) {
    collect(g);
    std::vector<onnx::NodeProto> nodes;
    nodes.reserve(g.node_size());
    for (onnx::NodeProto& n : *g.mutable_node()) {
      std::vector<onnx::NodeProto> expanded;
      absl::StatusOr<bool> replaced = lower_node(n, expanded);
      if (!replaced.ok()) return replaced.status();
      if (*replaced) {
        for (onnx::NodeProto& e : expanded) nodes.push_back(std::move(e));
      } else {
        nodes.push_back(std::move(n));
      }
    }
    g.clear_node();
    for (onnx::NodeProto& n : nodes) *g.add_node() = std::move(n);
    return absl::OkStatus();
  }

  onnx::ModelProto& model_;
  std::int64_t from_, to_;
  ExpandedNodes* expanded_;  // may be null
  KeptNodes* kept_;          // may be null
  bool kept_any_ = false;
  absl::flat_hash_map<std::string, const onnx::TensorProto*> constants_;
  absl::flat_hash_map<std::string, onnx::TypeProto> declared_;  // expand_node reads it
};

}  // namespace

absl::Status lower_to_opset(onnx::ModelProto& model, std::int64_t from, std::int64_t to,
                            ExpandedNodes* expanded, KeptNodes* kept) {
  return Lowering(model, from, to, expanded, kept).run();
}

namespace {

// The IR version that introduced each default-domain opset past 17 (ONNX's
// release table, onnx.helper.VERSION_TABLE: 1.13 IR 8 / opset 18, 1.14 IR 9
// / 19, 1.15 IR 9 / 20, 1.16 IR 10 / 21, 1.17 IR 10 / 22, 1.18 IR 11 / 23).
std::int64_t ir_version_for_opset(std::int64_t opset) {
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  return 11;
}

// The inverse of Lowering for what the exporter writes: opset 17's spelling
// of a node that a later opset spells otherwise.
class Raising {
 public:
  Raising(onnx::ModelProto& model, std::int64_t to) : model_(model), to_(to) {}

  void run() {
    collect_names(model_.graph());
    raise_graph(*model_.mutable_graph());
    drop_unused_domains();
    for (onnx::OperatorSetIdProto& op : *model_.mutable_opset_import())
      if (is_default_domain(op.domain())) op.set_version(to_);
    model_.set_ir_version(std::max(model_.ir_version(), ir_version_for_opset(to_)));
  }

 private:
  void collect_names(const onnx::GraphProto& g) {
    for (const onnx::TensorProto& t : g.initializer()) names_.insert(t.name());
    for (const onnx::ValueInfoProto& v : g.input()) names_.insert(v.name());
    for (const onnx::NodeProto& n : g.node()) {
      for (const std::string& o : n.output()) names_.insert(o);
      for (const onnx::AttributeProto& a : n.attribute()) {
        if (a.has_g()) collect_names(a.g());
        for (const onnx::GraphProto& sub : a.graphs()) collect_names(sub);
      }
    }
  }

  // `base`, or `base` with a number, unused by any value of the model.
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.contains(name); ++k) name = fmt::format("{}_{}", base, k);
    names_.insert(name);
    return name;
  }

  // A new int64 initializer of the main graph (visible in every subgraph):
  // a vector, or a scalar.
  std::string add_ints(const std::string& base, std::span<const std::int64_t> values,
                       bool scalar = false) {
    const std::string name = fresh(base);
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t v : values) t->add_int64_data(v);
    return name;
  }
  std::string add_scalar(const std::string& base, std::int64_t value) {
    return add_ints(base, std::span(&value, 1), /*scalar=*/true);
  }

  // A reduction's axes attribute as its second input (opset 18).
  void raise_reduction(onnx::NodeProto& n) {
    auto* attrs = n.mutable_attribute();
    for (int i = 0; i < attrs->size(); ++i) {
      if (attrs->Get(i).name() != "axes") continue;
      const auto& values = attrs->Get(i).ints();
      const std::string axes = add_ints(n.output(0) + "/axes", std::span(values.data(), values.size()));
      attrs->DeleteSubrange(i, 1);
      if (n.input_size() < 2) n.add_input(axes);
      return;
    }
  }

  void raise_node(onnx::NodeProto& n) {
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_g()) raise_graph(*a.mutable_g());
      for (onnx::GraphProto& g : *a.mutable_graphs()) raise_graph(g);
    }
    if (to_ >= 23 && n.domain() == "com.microsoft" && n.op_type() == "SimplifiedLayerNormalization") {
      // The exporter's spelling of opset 23's RMSNormalization.
      n.set_domain("");
      n.set_op_type("RMSNormalization");
      return;
    }
    if (to_ >= 23 && n.domain() == "com.microsoft" && n.op_type() == "GroupQueryAttention" &&
        without_cache(n)) {
      raise_attention(n);
      return;
    }
    if (!is_default_domain(n.domain())) return;
    const std::string& op = n.op_type();
    if (to_ >= 18 && reductions_with_axes_input().contains(op)) raise_reduction(n);
    // Opset 18's Split takes either split sizes or num_outputs.
    if (to_ >= 18 && op == "Split" && (n.input_size() < 2 || n.input(1).empty())) {
      onnx::AttributeProto* a = n.add_attribute();
      a->set_name("num_outputs");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(n.output_size());
    }
    if (to_ >= 20 && op == "GridSample") respell_grid_sample_mode(n, /*newer=*/true);
  }

  // A GroupQueryAttention as the exporter writes the IR's causal attention
  // from opset 23 on: queries, keys and values only (onnxruntime's own
  // always has its sequence lengths), and the head counts and the scale.
  static bool without_cache(const onnx::NodeProto& n) {
    if (n.input_size() != 3 || n.output_size() != 1) return false;
    return std::ranges::all_of(n.attribute(), [](const onnx::AttributeProto& a) {
      return a.name() == "num_heads" || a.name() == "kv_num_heads" || a.name() == "scale";
    });
  }

  // Causal attention over packed heads: opset 23's Attention on 3-D inputs,
  // which onnxruntime runs as fast (798 us against 775 us for
  // GroupQueryAttention on [1, 128, 16 x 64] with 4 key heads).
  static void raise_attention(onnx::NodeProto& n) {
    n.set_domain("");
    n.set_op_type("Attention");
    for (onnx::AttributeProto& a : *n.mutable_attribute())
      if (a.name() == "num_heads") a.set_name("q_num_heads");
    onnx::AttributeProto* causal = n.add_attribute();
    causal->set_name("is_causal");
    causal->set_type(onnx::AttributeProto::INT);
    causal->set_i(1);
  }

  // The exporter's spelling of opset 23's RotaryEmbedding: x, cos and sin
  // only (onnxruntime's own always has its position ids). Token s of x
  // [B, heads, S, head size] reads row s of the tables: the standard
  // operator's position ids [B, S] are 0..S-1 in each row, computed from
  // x's shape so that the model runs at any size (onnxruntime folds them
  // where the sizes are static). The nodes that compute them go to
  // `before`.
  static bool rotary_without_positions(const onnx::NodeProto& n) {
    return n.domain() == "com.microsoft" && n.op_type() == "RotaryEmbedding" &&
           n.input_size() == 3 && n.output_size() == 1;
  }
  void raise_rotary(onnx::NodeProto& n, google::protobuf::RepeatedPtrField<onnx::NodeProto>& before) {
    const std::string base = n.output(0) + "/positions";
    auto add = [&](std::string_view op, std::vector<std::string> inputs, std::string_view what) {
      onnx::NodeProto* p = before.Add();
      p->set_op_type(std::string(op));
      for (std::string& in : inputs) p->add_input(std::move(in));
      const std::string out = fresh(fmt::format("{}/{}", base, what));
      p->add_output(out);
      return out;
    };
    const std::int64_t batch_and_sequence[] = {0, 2};
    const std::string shape = add("Shape", {n.input(0)}, "x_shape");
    const std::string sizes = add("Gather", {shape, add_ints(base + "/axes", batch_and_sequence)}, "sizes");
    const std::string seq = add("Gather", {shape, add_scalar(base + "/sequence_axis", 2)}, "sequence");
    const std::string row = add("Range", {add_scalar(base + "/start", 0), seq, add_scalar(base + "/step", 1)}, "row");
    n.add_input(add("Expand", {row, sizes}, "ids"));
    n.set_domain("");
  }

  void raise_graph(onnx::GraphProto& g) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> raised;
    for (onnx::NodeProto& n : *g.mutable_node()) {
      if (to_ >= 23 && rotary_without_positions(n)) raise_rotary(n, raised);
      if (n.domain() == kKeptDomain)
        n.clear_domain();  // written as the file wrote it (KeptNodes)
      else
        raise_node(n);
      *raised.Add() = std::move(n);
    }
    g.mutable_node()->Swap(&raised);
  }

  // Drops the import of a domain no node uses any more.
  void drop_unused_domains() {
    absl::flat_hash_set<std::string> used;
    const auto collect = [&](const onnx::GraphProto& g, const auto& self) -> void {
      for (const onnx::NodeProto& n : g.node()) {
        used.insert(n.domain());
        for (const onnx::AttributeProto& a : n.attribute()) {
          if (a.has_g()) self(a.g(), self);
          for (const onnx::GraphProto& sub : a.graphs()) self(sub, self);
        }
      }
    };
    collect(model_.graph(), collect);
    auto* imports = model_.mutable_opset_import();
    for (int i = imports->size() - 1; i >= 0; --i) {
      const std::string& d = imports->Get(i).domain();
      if (!is_default_domain(d) && !used.contains(d)) imports->DeleteSubrange(i, 1);
    }
  }

  onnx::ModelProto& model_;
  std::int64_t to_;
  absl::flat_hash_set<std::string> names_;
};

}  // namespace

void raise_to_versions(onnx::ModelProto& model, std::int64_t opset, std::int64_t ir_version) {
  bool at_opset = false;
  for (const onnx::OperatorSetIdProto& op : model.opset_import())
    at_opset = at_opset || (is_default_domain(op.domain()) && op.version() >= opset);
  if (!at_opset) Raising(model, opset).run();
  model.set_ir_version(std::max(model.ir_version(), ir_version));
}

}  // namespace saturn::tensor::onnx_io

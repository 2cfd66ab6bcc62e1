// Operators of later opsets in opset 17's operators (opset_expansions.h).
#include "saturn/onnx/opset_expansions.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "fmt/format.h"

namespace saturn::tensor::onnx_io {

namespace {

onnx::AttributeProto int_attribute(const std::string& name, std::int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

onnx::AttributeProto float_attribute(const std::string& name, float value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}

onnx::AttributeProto ints_attribute(const std::string& name, const std::vector<std::int64_t>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (std::int64_t v : values) a.add_ints(v);
  return a;
}

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& n, std::string_view name) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<std::int64_t> int_of(const onnx::NodeProto& n, std::string_view name) {
  const onnx::AttributeProto* a = find_attribute(n, name);
  return a ? std::optional(a->i()) : std::nullopt;
}

std::optional<float> float_of(const onnx::NodeProto& n, std::string_view name) {
  const onnx::AttributeProto* a = find_attribute(n, name);
  return a ? std::optional(a->f()) : std::nullopt;
}

// Writes the nodes that spell one node: each value is named after the
// node's first output and `tag` ("<output>/<tag>/<what>").
class Spelling {
 public:
  Spelling(const onnx::NodeProto& n, std::string_view tag, std::vector<onnx::NodeProto>& out)
      : n_(n), base_(fmt::format("{}/{}", n.output(0), tag)), out_(out) {}

  // A node `op_type` of `in`, with one output named after `what`.
  std::string op(std::string_view op_type, std::vector<std::string> in, std::string_view what,
                 std::vector<onnx::AttributeProto> attributes = {}) {
    return add(op_type, std::move(in), fmt::format("{}/{}", base_, what), std::move(attributes));
  }

  // The last node, computing the spelled node's output `k` under its name.
  void finish(std::string_view op_type, std::vector<std::string> in, int k = 0,
              std::vector<onnx::AttributeProto> attributes = {}) {
    add(op_type, std::move(in), n_.output(k), std::move(attributes));
    if (k == 0) out_.back().set_name(n_.name());
  }

  std::string scalar(std::string_view what, float value) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_float_data(value);
    return constant(what, std::move(t));
  }

  // A 1-D float constant.
  std::string floats(std::string_view what, const std::vector<float>& values) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(static_cast<std::int64_t>(values.size()));
    for (float v : values) t.add_float_data(v);
    return constant(what, std::move(t));
  }

  // An int64 constant: a scalar, or 1-D when `vector`.
  std::string ints(std::string_view what, const std::vector<std::int64_t>& values,
                   bool vector = true) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::INT64);
    if (vector) t.add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t v : values) t.add_int64_data(v);
    return constant(what, std::move(t));
  }

  // Dimensions [start, end) of `x`'s shape, as a 1-D int64 value.
  std::string dims(const std::string& x, std::string_view what, std::int64_t start,
                   std::optional<std::int64_t> end = std::nullopt) {
    std::vector<onnx::AttributeProto> a = {int_attribute("start", start)};
    if (end) a.push_back(int_attribute("end", *end));
    return op("Shape", {x}, what, std::move(a));
  }

 private:
  std::string constant(std::string_view what, onnx::TensorProto value) {
    onnx::AttributeProto a;
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    *a.mutable_t() = std::move(value);
    return op("Constant", {}, what, {std::move(a)});
  }

  std::string add(std::string_view op_type, std::vector<std::string> in, std::string name,
                  std::vector<onnx::AttributeProto> attributes) {
    onnx::NodeProto node;
    node.set_op_type(std::string(op_type));
    node.set_name(name);
    for (std::string& i : in) node.add_input(std::move(i));
    node.add_output(name);
    for (onnx::AttributeProto& a : attributes) *node.add_attribute() = std::move(a);
    out_.push_back(std::move(node));
    return name;
  }

  const onnx::NodeProto& n_;
  std::string base_;
  std::vector<onnx::NodeProto>& out_;
};

// Gelu (opset 20): 0.5 x (1 + erf(x / sqrt 2)), or with approximate="tanh",
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
absl::Status expand_gelu(const onnx::NodeProto& n, Spelling& s) {
  const onnx::AttributeProto* a = find_attribute(n, "approximate");
  const std::string approximate = a ? a->s() : "none";
  if (approximate != "none" && approximate != "tanh")
    return absl::InvalidArgumentError(
        fmt::format("approximate='{}' is not a Gelu variant", approximate));
  const std::string& x = n.input(0);
  std::string inner;
  if (approximate == "none") {
    inner = s.op("Erf", {s.op("Div", {x, s.scalar("sqrt2", std::sqrt(2.0f))}, "scaled")}, "erf");
  } else {
    const std::string x3 = s.op("Mul", {s.op("Mul", {x, x}, "x2"), x}, "x3");
    const std::string poly =
        s.op("Add", {x, s.op("Mul", {x3, s.scalar("c", 0.044715f)}, "cx3")}, "poly");
    const auto k = static_cast<float>(std::sqrt(2.0 / M_PI));
    inner = s.op("Tanh", {s.op("Mul", {poly, s.scalar("k", k)}, "arg")}, "tanh");
  }
  const std::string plus1 = s.op("Add", {inner, s.scalar("one", 1.0f)}, "plus1");
  s.finish("Mul", {s.op("Mul", {x, plus1}, "xplus"), s.scalar("half", 0.5f)});
  return absl::OkStatus();
}

// Mish (opset 18): x tanh(softplus(x)).
absl::Status expand_mish(const onnx::NodeProto& n, Spelling& s) {
  s.finish("Mul", {n.input(0), s.op("Tanh", {s.op("Softplus", {n.input(0)}, "softplus")}, "tanh")});
  return absl::OkStatus();
}

// RMSNormalization (opset 23): x / sqrt(mean(x^2 over the axes from `axis`
// on) + epsilon) * scale. Axes counted from the end are listed; a
// non-negative axis merges the axes from it on into one by a Reshape to
// [d0 .. d(axis-1), -1] and back, which needs no rank.
absl::Status expand_rms_norm(const onnx::NodeProto& n, Spelling& s) {
  const std::int64_t axis = int_of(n, "axis").value_or(-1);
  if (int_of(n, "stash_type").value_or(1) != 1)
    return absl::UnimplementedError("stash_type other than float32 has no equivalent");
  if (n.input_size() < 2)
    return absl::InvalidArgumentError("RMSNormalization needs an input and a scale");
  std::string x = n.input(0);
  if (axis >= 0) {
    const std::string merged = s.op(
        "Concat", {s.dims(x, "lead", 0, axis), s.ints("rest", {-1})}, "merged_shape",
        {int_attribute("axis", 0)});
    x = s.op("Reshape", {x, merged}, "merged");
  }
  std::vector<std::int64_t> axes;
  for (std::int64_t k = axis >= 0 ? -1 : axis; k <= -1; ++k) axes.push_back(k);
  const std::string mean = s.op("ReduceMean", {s.op("Mul", {x, x}, "squares")}, "mean",
                                {ints_attribute("axes", axes)});
  const std::string eps = s.scalar("epsilon", float_of(n, "epsilon").value_or(1e-5f));
  std::string normalized =
      s.op("Div", {x, s.op("Sqrt", {s.op("Add", {mean, eps}, "plus")}, "root")}, "normalized");
  if (axis >= 0)
    normalized = s.op("Reshape", {normalized, s.dims(n.input(0), "shape", 0)}, "unmerged");
  s.finish("Mul", {normalized, n.input(1)});
  return absl::OkStatus();
}

// GroupNormalization (opset 18, per-channel scale and bias from opset 21):
// x [N, C, ...] seen as [N, groups, -1] is an InstanceNormalization of the
// groups, which is how PyTorch writes a GroupNorm and what onnxruntime runs
// as one kernel. Before opset 21 the scale and bias are per group and go
// into the InstanceNormalization; from 21 on they are per channel and
// multiply and add in [N, C, -1] form after it.
absl::Status expand_group_norm(const onnx::NodeProto& n, const Source& source, Spelling& s) {
  const std::optional<std::int64_t> groups = int_of(n, "num_groups");
  if (!groups || *groups < 1) return absl::InvalidArgumentError("num_groups must be at least 1");
  if (n.input_size() < 3) return absl::InvalidArgumentError("it needs an input, a scale and a bias");
  if (int_of(n, "stash_type").value_or(1) != 1)
    return absl::UnimplementedError("stash_type other than float32 has no equivalent");
  const onnx::TypeProto* t = source.declared(n.input(0));
  if (t != nullptr && t->tensor_type().elem_type() != onnx::TensorProto::FLOAT)
    return absl::UnimplementedError("only float32 inputs are read");
  const std::string& x = n.input(0);
  const float epsilon = float_of(n, "epsilon").value_or(1e-5f);
  const std::string grouped = s.op("Reshape", {x, s.ints("group_shape", {0, *groups, -1})}, "grouped");
  const bool per_group = source.opset < 21;
  std::vector<std::string> affine = {n.input(1), n.input(2)};
  if (!per_group) {
    affine = {s.floats("ones", std::vector<float>(*groups, 1.0f)),
              s.floats("zeros", std::vector<float>(*groups, 0.0f))};
  }
  std::string y = s.op("InstanceNormalization", {grouped, affine[0], affine[1]}, "normalized",
                       {float_attribute("epsilon", epsilon)});
  if (!per_group) {
    const std::string channels = s.op(
        "Concat", {s.dims(x, "batch_channels", 0, 2), s.ints("rest", {-1})}, "channel_shape",
        {int_attribute("axis", 0)});
    const std::string column = s.ints("column", {-1, 1});
    y = s.op("Reshape", {y, channels}, "channels");
    y = s.op("Mul", {y, s.op("Reshape", {n.input(1), column}, "scale_column")}, "scaled");
    y = s.op("Add", {y, s.op("Reshape", {n.input(2), column}, "bias_column")}, "shifted");
  }
  s.finish("Reshape", {y, s.dims(x, "shape", 0)});
  return absl::OkStatus();
}

std::optional<std::int64_t> declared_dim(const DeclaredType& declared, const std::string& name,
                                         int axis) {
  const onnx::TypeProto* t = declared(name);
  if (t == nullptr || !t->tensor_type().has_shape() ||
      t->tensor_type().shape().dim_size() <= axis)
    return std::nullopt;
  const auto& d = t->tensor_type().shape().dim(axis);
  return d.has_dim_value() ? std::optional(d.dim_value()) : std::nullopt;
}

std::string optional_input(const onnx::NodeProto& n, int k) {
  return k < n.input_size() ? n.input(k) : std::string();
}

// The scores of Attention (opset 23) scaled (by `scale`, else
// 1 / sqrt(head size)), soft-capped, and masked: causally (upper-left
// aligned, from the lengths of `q` and `k`) and by attn_mask (boolean: where
// to attend; else added). `q` and `k` are [B, heads, sequence, head size].
absl::StatusOr<std::string> masked_scores(const onnx::NodeProto& n, const DeclaredType& declared,
                                          Spelling& s, const std::string& q, const std::string& k,
                                          std::string scores) {
  std::string scale;
  if (std::optional<float> given = float_of(n, "scale")) {
    scale = s.scalar("scale", *given);
  } else {
    const std::string size = s.op("Cast", {s.dims(q, "head_size", 3)}, "head_size_f",
                                  {int_attribute("to", onnx::TensorProto::FLOAT)});
    scale = s.op("Reciprocal", {s.op("Sqrt", {size}, "root_size")}, "scale");
  }
  scores = s.op("Mul", {scores, scale}, "scaled");
  if (const float cap = float_of(n, "softcap").value_or(0.0f); cap > 0) {
    const std::string c = s.scalar("softcap", cap);
    scores = s.op("Mul", {s.op("Tanh", {s.op("Div", {scores, c}, "capped")}, "capped_tanh"), c},
                  "soft_capped");
  }
  const std::string minus_infinity = s.scalar("minus_inf", -std::numeric_limits<float>::infinity());
  if (int_of(n, "is_causal").value_or(0) != 0) {
    const std::string zero = s.ints("zero", {0}, false), one = s.ints("one", {1}, false);
    const std::string two = s.ints("two", {2}, false);
    auto length = [&](const std::string& x, std::string_view what) {
      return s.op("Gather", {s.op("Shape", {x}, fmt::format("{}_shape", what)), two}, what,
                  {int_attribute("axis", 0)});
    };
    const std::string rows = s.op(
        "Unsqueeze", {s.op("Range", {zero, length(q, "q_length"), one}, "rows"), s.ints("axis1", {1})},
        "row_column");
    const std::string cols = s.op("Range", {zero, length(k, "kv_length"), one}, "columns");
    const std::string allowed = s.op("LessOrEqual", {cols, rows}, "causal");
    scores = s.op("Where", {allowed, scores, minus_infinity}, "causal_masked");
  }
  if (const std::string mask = optional_input(n, 3); !mask.empty()) {
    const onnx::TypeProto* t = declared(mask);
    if (t == nullptr || !t->has_tensor_type())
      return absl::UnimplementedError("its attn_mask's element type is not declared");
    scores = t->tensor_type().elem_type() == onnx::TensorProto::BOOL
                 ? s.op("Where", {mask, scores, minus_infinity}, "masked")
                 : s.op("Add", {scores, mask}, "masked");
  }
  return scores;
}

// Attention (opset 23): softmax(q k^T * scale + mask) v over [B, heads,
// sequence, head size] (3-D inputs [B, sequence, heads * head size] are
// split into heads by q_num_heads and kv_num_heads and merged back), with
// past keys and values prepended and returned as the present ones. With
// fewer key heads than query heads (grouped-query attention) the query
// heads are grouped [B, kv heads, group, ...] against the key heads
// unsqueezed, so no key is copied; the scores are masked in the
// [B, heads, ...] form.
absl::Status expand_attention(const onnx::NodeProto& n, const Source& source,
                              Spelling& s) {
  const DeclaredType& declared = source.declared;
  if (n.input_size() < 3)
    return absl::InvalidArgumentError("Attention needs queries, keys and values");
  if (n.output_size() > 3 && !n.output(3).empty())
    return absl::UnimplementedError("its qk_matmul_output has no spelling here");
  if (!optional_input(n, 6).empty())
    return absl::UnimplementedError("its nonpad_kv_seqlen input has no spelling here");
  const std::optional<std::int64_t> q_heads_3d = int_of(n, "q_num_heads");
  const std::optional<std::int64_t> kv_heads_3d = int_of(n, "kv_num_heads");
  const bool three_d = q_heads_3d.has_value();
  if (three_d != kv_heads_3d.has_value())
    return absl::InvalidArgumentError("q_num_heads and kv_num_heads come together (3-D inputs)");
  const std::vector<std::int64_t> swap_12 = {0, 2, 1, 3};
  auto to_heads = [&](const std::string& x, std::int64_t heads, std::string_view what) {
    if (!three_d) return x;
    const std::string split =
        s.op("Reshape", {x, s.ints(fmt::format("{}_split_shape", what), {0, 0, heads, -1})},
             fmt::format("{}_split", what));
    return s.op("Transpose", {split}, fmt::format("{}_heads", what), {ints_attribute("perm", swap_12)});
  };
  const std::string q = to_heads(n.input(0), q_heads_3d.value_or(0), "q");
  std::string k = to_heads(n.input(1), kv_heads_3d.value_or(0), "k");
  std::string v = to_heads(n.input(2), kv_heads_3d.value_or(0), "v");
  if (const std::string past = optional_input(n, 4); !past.empty())
    k = s.op("Concat", {past, k}, "all_k", {int_attribute("axis", 2)});
  if (const std::string past = optional_input(n, 5); !past.empty())
    v = s.op("Concat", {past, v}, "all_v", {int_attribute("axis", 2)});
  if (n.output_size() > 1 && !n.output(1).empty()) s.finish("Identity", {k}, 1);
  if (n.output_size() > 2 && !n.output(2).empty()) s.finish("Identity", {v}, 2);

  // Grouped unless both head counts are known and equal.
  const std::optional<std::int64_t> q_heads = three_d ? q_heads_3d : declared_dim(declared, q, 1);
  const std::optional<std::int64_t> kv_heads = three_d ? kv_heads_3d : declared_dim(declared, k, 1);
  const bool grouped = !q_heads || !kv_heads || *q_heads != *kv_heads;
  // A [B, kv heads, group, ...] value back in [B, heads, ...] form.
  auto ungroup = [&](const std::string& x, std::string_view what) {
    const std::string shape = s.op(
        "Concat", {s.dims(q, fmt::format("{}_lead", what), 0, 2), s.dims(x, fmt::format("{}_tail", what), 3)},
        fmt::format("{}_shape", what), {int_attribute("axis", 0)});
    return s.op("Reshape", {x, shape}, what);
  };
  std::string query = q, key = k, value = v;
  if (grouped) {
    const std::string group_shape = s.op(
        "Concat", {s.dims(k, "batch_kv", 0, 2), s.ints("group", {-1}), s.dims(q, "seq_size", 2)},
        "group_shape", {int_attribute("axis", 0)});
    query = s.op("Reshape", {q, group_shape}, "q_grouped");
    const std::string at_2 = s.ints("axis2", {2});
    key = s.op("Unsqueeze", {k, at_2}, "k_grouped");
    value = s.op("Unsqueeze", {v, at_2}, "v_grouped");
  }
  const std::vector<std::int64_t> swap_last =
      grouped ? std::vector<std::int64_t>{0, 1, 2, 4, 3} : std::vector<std::int64_t>{0, 1, 3, 2};
  const std::string product = s.op(
      "MatMul", {query, s.op("Transpose", {key}, "k_t", {ints_attribute("perm", swap_last)})}, "qk");
  absl::StatusOr<std::string> scores =
      masked_scores(n, declared, s, q, k, grouped ? ungroup(product, "qk_heads") : product);
  if (!scores.ok()) return scores.status();
  std::string probabilities = s.op("Softmax", {*scores}, "probabilities", {int_attribute("axis", -1)});
  if (grouped)
    probabilities = s.op("Reshape", {probabilities, s.op("Shape", {product}, "grouped_shape")},
                         "probabilities_grouped");
  std::string y = s.op("MatMul", {probabilities, value}, "weighted");
  if (grouped) y = ungroup(y, "weighted_heads");
  if (!three_d) {
    s.finish("Identity", {y});
    return absl::OkStatus();
  }
  const std::string merged = s.op("Transpose", {y}, "merged_t", {ints_attribute("perm", swap_12)});
  s.finish("Reshape", {merged, s.ints("merged_shape", {0, 0, -1})});
  return absl::OkStatus();
}

// RotaryEmbedding (opset 23): the first `rotary_embedding_dim` features of
// each head (all when 0) rotated by position: halves x1, x2 (or the even
// and odd features when interleaved) become x1 cos - x2 sin and
// x2 cos + x1 sin, the rest passes. cos and sin are the caches gathered at
// position_ids when given ([B, S, rotary / 2] otherwise), broadcast over the
// heads: X is [B, heads, S, head size], or [B, S, heads * head size] with
// num_heads.
absl::Status expand_rotary_embedding(const onnx::NodeProto& n, const Source& source,
                                     Spelling& s) {
  const DeclaredType& declared = source.declared;
  if (n.input_size() < 3)
    return absl::InvalidArgumentError("RotaryEmbedding needs an input and the cos and sin caches");
  const std::int64_t rotary = int_of(n, "rotary_embedding_dim").value_or(0);
  const bool interleaved = int_of(n, "interleaved").value_or(0) != 0;
  const std::optional<std::int64_t> heads = int_of(n, "num_heads");
  std::optional<std::int64_t> rank = std::nullopt;
  if (const onnx::TypeProto* t = declared(n.input(0)); t && t->tensor_type().has_shape())
    rank = t->tensor_type().shape().dim_size();
  if (!rank) rank = heads ? 3 : 4;
  if (*rank == 3 && !heads)
    return absl::InvalidArgumentError("a 3-D input needs num_heads");
  // x as [B, S, heads, head size] (3-D) or [B, heads, S, head size].
  std::string x = n.input(0);
  if (*rank == 3) x = s.op("Reshape", {x, s.ints("heads_shape", {0, 0, *heads, -1})}, "heads");
  std::string cos = n.input(1), sin = n.input(2);
  if (const std::string positions = optional_input(n, 3); !positions.empty()) {
    cos = s.op("Gather", {cos, positions}, "cos_at", {int_attribute("axis", 0)});
    sin = s.op("Gather", {sin, positions}, "sin_at", {int_attribute("axis", 0)});
  }
  // [B, S, r/2] broadcast over the heads' axis.
  const std::string heads_axis = s.ints("heads_axis", {*rank == 3 ? 2 : 1});
  cos = s.op("Unsqueeze", {cos, heads_axis}, "cos_heads");
  sin = s.op("Unsqueeze", {sin, heads_axis}, "sin_heads");
  const std::string last = s.ints("last_axis", {-1});
  auto slice = [&](const std::string& v, std::int64_t start, std::int64_t end, std::int64_t step,
                   std::string_view what) {
    return s.op("Slice", {v, s.ints(fmt::format("{}_start", what), {start}),
                          s.ints(fmt::format("{}_end", what), {end}), last,
                          s.ints(fmt::format("{}_step", what), {step})},
                what);
  };
  constexpr std::int64_t kEnd = std::numeric_limits<std::int64_t>::max();
  std::string rotated = x;
  if (rotary > 0) rotated = slice(x, 0, rotary, 1, "rotated_part");
  std::string x1, x2;
  if (interleaved) {
    x1 = slice(rotated, 0, kEnd, 2, "even");
    x2 = slice(rotated, 1, kEnd, 2, "odd");
  } else {
    const std::string half = s.op(
        "Div", {s.op("Gather", {s.op("Shape", {rotated}, "rotated_shape"), s.ints("minus_one", {-1}, false)},
                     "rotated_size", {int_attribute("axis", 0)}),
                s.ints("two", {2}, false)},
        "half");
    const std::string at = s.op("Unsqueeze", {half, s.ints("axis0", {0})}, "half_1d");
    x1 = s.op("Slice", {rotated, s.ints("zero", {0}), at, last}, "first_half");
    x2 = s.op("Slice", {rotated, at, s.ints("to_end", {kEnd}), last}, "second_half");
  }
  const std::string out1 = s.op("Sub", {s.op("Mul", {x1, cos}, "x1_cos"), s.op("Mul", {x2, sin}, "x2_sin")},
                                "out1");
  const std::string out2 = s.op("Add", {s.op("Mul", {x2, cos}, "x2_cos"), s.op("Mul", {x1, sin}, "x1_sin")},
                                "out2");
  std::string result;
  if (interleaved) {
    const std::string pairs = s.op(
        "Concat", {s.op("Unsqueeze", {out1, last}, "out1_pair"), s.op("Unsqueeze", {out2, last}, "out2_pair")},
        "pairs", {int_attribute("axis", -1)});
    result = s.op("Reshape", {pairs, s.op("Shape", {rotated}, "rotated_dims")}, "interleaved");
  } else {
    result = s.op("Concat", {out1, out2}, "rotated", {int_attribute("axis", -1)});
  }
  if (rotary > 0)
    result = s.op("Concat", {result, slice(x, rotary, kEnd, 1, "passed")}, "with_passed",
                  {int_attribute("axis", -1)});
  if (*rank == 3) {
    s.finish("Reshape", {result, s.dims(n.input(0), "input_shape", 0)});
  } else {
    s.finish("Identity", {result});
  }
  return absl::OkStatus();
}

// The operators spelled here: their name, the tag their values are named
// with, and the spelling.
struct Expansion {
  std::string_view op_type;
  std::string_view tag;
  absl::Status (*expand)(const onnx::NodeProto&, const Source&, Spelling&);
};

constexpr Expansion kExpansions[] = {
    {"Gelu", "gelu", [](const onnx::NodeProto& n, const Source&, Spelling& s) { return expand_gelu(n, s); }},
    {"Mish", "mish", [](const onnx::NodeProto& n, const Source&, Spelling& s) { return expand_mish(n, s); }},
    {"RMSNormalization", "rms",
     [](const onnx::NodeProto& n, const Source&, Spelling& s) { return expand_rms_norm(n, s); }},
    {"GroupNormalization", "group_norm", expand_group_norm},
    {"Attention", "attention", expand_attention},
    {"RotaryEmbedding", "rotary", expand_rotary_embedding},
};

const Expansion* find_expansion(std::string_view op_type) {
  for (const Expansion& e : kExpansions)
    if (e.op_type == op_type) return &e;
  return nullptr;
}

}  // namespace

bool has_expansion(std::string_view op_type) { return find_expansion(op_type) != nullptr; }

absl::Status expand_node(const onnx::NodeProto& n, const Source& source,
                         std::vector<onnx::NodeProto>& out) {
  const Expansion* e = find_expansion(n.op_type());
  if (e == nullptr) return absl::UnimplementedError("no spelling in older operators");
  if (n.input_size() < 1 || n.output_size() < 1 || n.output(0).empty())
    return absl::InvalidArgumentError("it has no input or no first output");
  Spelling s(n, e->tag, out);
  return e->expand(n, source, s);
}

}  // namespace saturn::tensor::onnx_io

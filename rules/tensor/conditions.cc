// The tensor rule set: the conditions its rules may name (those on quantized
// values are in conditions_quantization.cc). The shipped rule files are read
// in rule_files.cc, the rule verifier is in verifier.cc.
#include "saturn/rules/tensor/tensor_rules.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>

#include "saturn/base/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "saturn/rules/rewrite.h"
#include "saturn/rules/tensor/conditions_internal.h"
#include "saturn/tensor/analysis.h"
#include "saturn/tensor/infer.h"

namespace saturn {

using rule_conditions::of_weight_values;
using rule_conditions::shapes_of;
using rule_conditions::type_of;
using Ints = std::vector<std::int64_t>;

std::optional<std::vector<std::int64_t>> same_pads(std::span<const std::int64_t> d) {
  if (d.size() != 4 || d[2] < 1 || d[3] < 1) return std::nullopt;
  // Stride 1: k - 1 in all along each axis, the smaller half first.
  const std::int64_t h = d[2] - 1, w = d[3] - 1;
  return Ints{h / 2, w / 2, h - h / 2, w - w / 2};
}

namespace {

// SAME padding for the kernel class `w` (nullopt unless a 4-D tensor).
std::optional<Ints> same_pads_of(const EGraph& egraph, Id w) {
  const tensor::ValueType& t = type_of(egraph, w);
  return t.is_tuple ? std::nullopt : same_pads(t.tensor().dims);
}

// Whether a rank-2 tensor's rows repeat their first half in their second
// (rotary tables written for the half-split layout: cos and sin of
// cat(angles, angles)).
bool halves_equal(const tensor::Tensor& t) {
  const tensor::Dims& d = t.dims();
  if (t.type().dtype != tensor::DType::kFloat32 || d.size() != 2 || d[1] % 2 != 0) return false;
  const std::int64_t half = d[1] / 2;
  std::span<const float> v = t.floats();
  for (std::int64_t r = 0; r < d[0]; ++r) {
    for (std::int64_t i = 0; i < half; ++i) {
      if (v[r * d[1] + i] != v[r * d[1] + half + i]) return false;
    }
  }
  return true;
}

bool make_halves_equal(tensor::Tensor& t) {
  const tensor::Dims& d = t.dims();
  if (t.type().dtype != tensor::DType::kFloat32 || d.size() != 2 || d[1] % 2 != 0) return false;
  const std::int64_t half = d[1] / 2;
  std::span<float> v = t.mutable_floats();
  for (std::int64_t r = 0; r < d[0]; ++r) {
    for (std::int64_t i = 0; i < half; ++i) v[r * d[1] + half + i] = v[r * d[1] + i];
  }
  return true;
}

// Whether Slice attributes (starts, ends, axes, steps: a[1..4]) take the
// first (`second` false) or second half of class a[0]'s last axis.
bool slices_half(const EGraph& g, std::span<const Id> a, bool second) {
  const tensor::ValueType& t = type_of(g, a[0]);
  auto list = [&](std::size_t k) { return std::get_if<Ints>(&g.attr_value(AttrId(a[k].value))); };
  const Ints *starts = list(1), *ends = list(2), *axes = list(3), *steps = list(4);
  if (t.is_tuple || !starts || !ends || !axes || !steps || starts->size() != 1 ||
      ends->size() != 1 || axes->size() != 1 || steps->size() > 1)
    return false;
  const std::size_t rank = t.tensor().rank();
  std::optional<std::int64_t> axis = tensor::normalize_axis(axes->front(), rank);
  const std::int64_t step = steps->empty() ? 1 : steps->front();
  if (!axis || *axis + 1 != static_cast<std::int64_t>(rank) || step != 1) return false;
  const std::int64_t dim = t.tensor().dims.back();
  if (dim % 2 != 0) return false;
  tensor::SliceRange r = tensor::slice_range(dim, starts->front(), ends->front(), step);
  return r.count == dim / 2 && r.start == (second ? dim / 2 : 0);
}

// Masks at least this negative make a softmax weight exactly 0 in float32
// (exp underflows long before), as a causal kernel's skipped positions are.
constexpr float kMasked = -1e4f;

// Whether an additive mask ([S, S], with leading ones allowed) keeps key j
// for query i exactly when j <= i: 0 there, kMasked or less above the
// diagonal.
bool is_causal_mask(const tensor::Tensor& m, std::int64_t seq) {
  const tensor::Dims& d = m.dims();
  if (m.type().dtype != tensor::DType::kFloat32 || d.size() < 2 || d[d.size() - 1] != seq ||
      d[d.size() - 2] != seq)
    return false;
  for (std::size_t i = 0; i + 2 < d.size(); ++i) {
    if (d[i] != 1) return false;
  }
  std::span<const float> v = m.floats();
  for (std::int64_t i = 0; i < seq; ++i) {
    for (std::int64_t j = 0; j < seq; ++j) {
      const float x = v[i * seq + j];
      if (j <= i ? x != 0.0f : !(x <= kMasked)) return false;
    }
  }
  return true;
}

bool make_causal_mask(tensor::Tensor& m) {
  const tensor::Dims& d = m.dims();
  if (m.type().dtype != tensor::DType::kFloat32 || d.size() < 2 || d[d.size() - 1] != d[d.size() - 2])
    return false;
  const std::int64_t seq = d.back();
  std::span<float> v = m.mutable_floats();
  for (std::int64_t r = 0; r < m.size() / (seq * seq); ++r) {
    for (std::int64_t i = 0; i < seq; ++i) {
      for (std::int64_t j = 0; j < seq; ++j) v[(r * seq + i) * seq + j] = j <= i ? 0.0f : kMasked;
    }
  }
  return true;
}

// The dimensions of a float tensor `in` reshaped to `shape` (0 copies, -1
// infers), as shape inference gives them; nullopt when it does not resolve.
std::optional<tensor::Dims> reshaped(tensor::Dims in, const Ints& shape) {
  const tensor::ValueType input = tensor::ValueType::of(tensor::TensorType{tensor::DType::kFloat32, std::move(in)});
  absl::StatusOr<tensor::ValueType> out =
      tensor::infer_type(tensor::Op::kReshape, Attributes{{"shape", shape}}, std::span(&input, 1));
  if (!out.ok()) return std::nullopt;
  return out->tensor().dims;
}

constexpr ValueCondition kValueConditions[] = {{"halves-equal", make_halves_equal},
                                               {"causal-mask", make_causal_mask},
                                               {"lowest-values", rule_conditions::make_all_lowest},
                                               {"positive-values", rule_conditions::make_all_positive}};

}  // namespace

namespace rule_conditions {

// The values of a Constant node in class `id` (a float scalar the model
// gives: the importer makes one of each), or nullopt.
std::optional<tensor::Tensor> constant_values(const EGraph& g, Id id) {
  for (const ENode& n : g.nodes(g.find(id))) {
    if (tensor::TensorLanguage::op(n.op) != tensor::Op::kConstant) continue;
    const Attributes& a = g.attrs().get(n.attrs);
    const std::string* dtype = a.get_string("dtype");
    if (dtype != nullptr && *dtype != "float32") continue;
    tensor::Tensor t(tensor::TensorType{tensor::DType::kFloat32, *a.get_ints("shape")});
    std::ranges::fill(t.mutable_floats(), static_cast<float>(*a.get_float("value")));
    return t;
  }
  return std::nullopt;
}

}  // namespace rule_conditions

std::span<const ValueCondition> value_conditions() { return kValueConditions; }

ConditionRegistry tensor_conditions() {
  ConditionRegistry r;
  r.add(
      "is-weight", 1,
      [](const EGraph& g, std::span<const Id> a) {
        return shapes_of(g).info(g.find(a[0])).weight_only;
      },
      "the class depends on weights only (computed once at load time)");
  r.add(
       "same-shape", 2,
       [](const EGraph& g, std::span<const Id> a) { return type_of(g, a[0]) == type_of(g, a[1]); },
       "the two classes have the same type")
      .symmetric = true;
  r.add(
      "kernel-1x1", 1,
      [](const EGraph& g, std::span<const Id> a) {
        const tensor::ValueType& t = type_of(g, a[0]);
        return !t.is_tuple && t.tensor().rank() == 4 && t.tensor().dims[2] == 1 &&
               t.tensor().dims[3] == 1;
      },
      "the class is a convolution kernel of size 1x1");
  r.add(
      "last-axis", 2,
      [](const EGraph& g, std::span<const Id> a) {
        const tensor::ValueType& t = type_of(g, a[0]);
        const AttrValue& value = g.attr_value(AttrId(a[1].value));
        std::optional<std::int64_t> axis;
        if (const auto* one = std::get_if<std::int64_t>(&value)) axis = *one;
        if (const auto* list = std::get_if<Ints>(&value); list && list->size() == 1)
          axis = list->front();
        if (t.is_tuple || !axis) return false;
        std::optional<std::int64_t> n = tensor::normalize_axis(*axis, t.tensor().rank());
        return n && *n + 1 == static_cast<std::int64_t>(t.tensor().rank());
      },
      "(last-axis ?x ?axis): the attribute value ?axis (an axis, or a list of one) names the "
      "last axis of ?x");
  r.add(
      "identity-perm", 1,
      [](const EGraph& g, std::span<const Id> a) {
        const auto* perm = std::get_if<Ints>(&g.attr_value(AttrId(a[0].value)));
        if (perm == nullptr || perm->empty()) return false;
        for (std::size_t i = 0; i < perm->size(); ++i) {
          if ((*perm)[i] != static_cast<std::int64_t>(i)) return false;
        }
        return true;
      },
      "(identity-perm ?p): the permutation ?p keeps every axis in place");
  r.add(
      "reshape-keeps-shape", 2,
      [](const EGraph& g, std::span<const Id> a) {
        const tensor::ValueType& t = type_of(g, a[0]);
        if (t.is_tuple) return false;
        absl::StatusOr<tensor::ValueType> out = tensor::infer_type(
            tensor::Op::kReshape, Attributes{{"shape", g.attr_value(AttrId(a[1].value))}},
            std::span(&t, 1));
        return out.ok() && *out == t;
      },
      "(reshape-keeps-shape ?x ?s): reshaping ?x to the shape ?s gives ?x's own shape");
  r.add(
      "reshape-keeps-last-dim", 2,
      [](const EGraph& g, std::span<const Id> a) {
        const tensor::ValueType& t = type_of(g, a[0]);
        if (t.is_tuple || t.tensor().rank() == 0) return false;
        absl::StatusOr<tensor::ValueType> out = tensor::infer_type(
            tensor::Op::kReshape, Attributes{{"shape", g.attr_value(AttrId(a[1].value))}},
            std::span(&t, 1));
        return out.ok() && !out->is_tuple && out->tensor().rank() > 0 &&
               out->tensor().dims.back() == t.tensor().dims.back();
      },
      "(reshape-keeps-last-dim ?x ?s): reshaping ?x to the shape ?s keeps its last dimension "
      "(each run of the last axis stays a run)");
  r.add(
      "no-copied-dims", 1,
      [](const EGraph& g, std::span<const Id> a) {
        const auto* shape = std::get_if<Ints>(&g.attr_value(AttrId(a[0].value)));
        return shape != nullptr && std::find(shape->begin(), shape->end(), 0) == shape->end();
      },
      "(no-copied-dims ?s): the reshape target ?s has no 0 (a dimension copied from the input)");
  r.add(
      std::string(kFloatValuesCondition), 1,
      [](const EGraph& g, std::span<const Id> a) {
        const tensor::ValueType& t = type_of(g, a[0]);
        return std::ranges::all_of(t.parts, [](const tensor::TensorType& part) {
          return tensor::is_floating(part.dtype);
        });
      },
      "the class holds floating-point elements (a tuple: every part does); what a rule with no "
      "dtype condition needs of each class it matches");
  // (dtype-int8 ?z) and the like: the element type a rule holds for. The
  // verifier draws the variable at that type.
  for (int i = 0; i < tensor::kNumDTypes; ++i) {
    const auto dtype = static_cast<tensor::DType>(i);
    if (!tensor::is_plain_number(dtype)) continue;
    r.add(
        fmt::format("{}{}", kDTypeConditionPrefix, tensor::dtype_name(dtype)), 1,
        [dtype](const EGraph& g, std::span<const Id> a) {
          const tensor::ValueType& t = type_of(g, a[0]);
          return !t.is_tuple && t.tensor().dtype == dtype;
        },
        fmt::format("the class holds {} elements", tensor::dtype_name(dtype)));
  }
  rule_conditions::add_quantization_conditions(r);
  // scalar, rank-1 (a vector), rank-2 (a matrix), rank-3, rank-4.
  for (const std::size_t rank : {0, 1, 2, 3, 4}) {
    r.add(
        rank == 0 ? std::string("scalar") : fmt::format("rank-{}", rank), 1,
        [rank](const EGraph& g, std::span<const Id> a) {
          const tensor::ValueType& t = type_of(g, a[0]);
          return !t.is_tuple && t.tensor().rank() == rank;
        },
        fmt::format("the class has rank {}", rank));
  }
  r.add(
       "same-last-dim", 2,
       [](const EGraph& g, std::span<const Id> a) {
         const tensor::ValueType& x = type_of(g, a[0]);
         const tensor::ValueType& y = type_of(g, a[1]);
         return !x.is_tuple && !y.is_tuple && x.tensor().rank() > 0 && y.tensor().rank() > 0 &&
                x.tensor().dims.back() == y.tensor().dims.back();
       },
       "(same-last-dim ?x ?y): the two classes have the same last dimension (a bias that "
       "matches a product's columns rather than broadcasting over them)")
      .symmetric = true;
  // Split sizes for merged operators: one axis's extent of each argument.
  auto extents = [](int axis) {
    return [axis](const EGraph& g, std::span<const Id> a) -> std::optional<AttrValue> {
      std::vector<std::int64_t> sizes;
      for (Id id : a) {
        const tensor::ValueType& t = type_of(g, id);
        if (t.is_tuple) return std::nullopt;
        std::optional<std::int64_t> n = tensor::normalize_axis(axis, t.tensor().rank());
        if (!n) return std::nullopt;
        sizes.push_back(t.tensor().dims[*n]);
      }
      return sizes;
    };
  };
  r.add_function(
      "compose-perm", 2,
      [](const EGraph& g, std::span<const Id> a) -> std::optional<AttrValue> {
        // Transpose{q}(Transpose{p}(x)) reads x's axis p[q[i]] at axis i.
        const auto* p = std::get_if<Ints>(&g.attr_value(AttrId(a[0].value)));
        const auto* q = std::get_if<Ints>(&g.attr_value(AttrId(a[1].value)));
        if (p == nullptr || q == nullptr || p->size() != q->size()) return std::nullopt;
        Ints out;
        for (std::int64_t i : *q) {
          if (i < 0 || i >= static_cast<std::int64_t>(p->size())) return std::nullopt;
          out.push_back((*p)[static_cast<std::size_t>(i)]);
        }
        return out;
      },
      "(compose-perm ?p ?q): the permutation of a transpose by ?p followed by one by ?q");
  r.add_function("first-dims", -1, extents(0), "[d0 of each argument]: split sizes along axis 0");
  r.add_function("last-dims", -1, extents(-1),
                 "[last dimension of each argument]: split sizes along the last axis");
  r.add_function("row-dims", -1, extents(-2), "[second-to-last dimension of each argument]");
  r.add_function("channel-dims", -1, extents(1),
                 "[d1 of each argument]: split sizes along axis 1 (channels)");
  r.add(
      "same-padding", 2,
      [](const EGraph& g, std::span<const Id> a) {
        const auto* pads = std::get_if<Ints>(&g.attr_value(AttrId(a[0].value)));
        std::optional<Ints> same = same_pads_of(g, a[1]);
        return pads != nullptr && same && *pads == *same;
      },
      "(same-padding ?p ?w): the pads ?p are SAME padding (ONNX SAME_UPPER, stride 1) for the "
      "kernel ?w");
  r.add_function(
      "same-pads", 1,
      [](const EGraph& g, std::span<const Id> a) -> std::optional<AttrValue> {
        std::optional<Ints> same = same_pads_of(g, a[0]);
        if (!same) return std::nullopt;
        return *same;
      },
      "(same-pads ?w): SAME padding (ONNX SAME_UPPER, stride 1) for the kernel ?w");
  r.add_function(
      "kernel-size", 1,
      [](const EGraph& g, std::span<const Id> a) -> std::optional<AttrValue> {
        const tensor::ValueType& w = type_of(g, a[0]);
        if (w.is_tuple || w.tensor().rank() != 4) return std::nullopt;
        return Ints{w.tensor().dims[2], w.tensor().dims[3]};
      },
      "(kernel-size ?w): [height, width] of the convolution kernel ?w");
  r.add(
      "first-half", 5,
      [](const EGraph& g, std::span<const Id> a) { return slices_half(g, a, false); },
      "(first-half ?x ?starts ?ends ?axes ?steps): Slice attributes that take the first half "
      "of ?x's last axis");
  r.add(
      "second-half", 5,
      [](const EGraph& g, std::span<const Id> a) { return slices_half(g, a, true); },
      "(second-half ?x ?starts ?ends ?axes ?steps): Slice attributes that take the second half "
      "of ?x's last axis");
  r.add(
      "not-centred", 1,
      [](const EGraph& g, std::span<const Id> a) {
        for (const ENode& n : g.nodes(g.find(a[0]))) {
          if (tensor::TensorLanguage::op(n.op) != tensor::Op::kSub) continue;
          const Id y = g.find(n.children[0]);
          for (const ENode& m : g.nodes(g.find(n.children[1]))) {
            if (tensor::TensorLanguage::op(m.op) == tensor::Op::kReduceMean && g.find(m.children[0]) == y)
              return false;
          }
        }
        return true;
      },
      "(not-centred ?x): ?x is not spelled as y - mean(y). (An RMSNorm of a centred value is a "
      "LayerNorm, and written out, onnxruntime fuses it into one, with a residual Add before it "
      "into its SkipLayerNormalization kernel, which its price alone does not show.)");
  r.add(
      "halves-equal", 1, of_weight_values<halves_equal>,
      "(halves-equal ?t): ?t is a matrix of weights whose values the model gives, and each "
      "row's second half repeats its first (rotary tables of the half-split layout)");
  r.add(
      "row-per-position", 2,
      [](const EGraph& g, std::span<const Id> a) {
        const tensor::ValueType& t = type_of(g, a[0]);
        const tensor::ValueType& x = type_of(g, a[1]);
        if (t.is_tuple || x.is_tuple || t.tensor().rank() != 2 || x.tensor().rank() != 4) return false;
        const tensor::Dims& d = x.tensor().dims;
        return t.tensor().dims == tensor::Dims{d[2], d[3]};
      },
      "(row-per-position ?t ?x): ?t is [S, head] for ?x [batch, heads, S, head]: a row for "
      "each position");
  r.add(
      "causal-mask", 2,
      [](const EGraph& g, std::span<const Id> a) {
        const tensor::ValueType& q = type_of(g, a[1]);
        const tensor::Tensor* mask = shapes_of(g).weight_values(g, a[0]);
        return !q.is_tuple && q.tensor().rank() == 4 && mask != nullptr &&
               is_causal_mask(*mask, q.tensor().dims[2]);
      },
      "(causal-mask ?m ?q): ?m is an additive mask of weights whose values the model gives, "
      "[S, S] (leading ones allowed) for the queries ?q [batch, heads, S, head]: 0 on and below "
      "the diagonal, -1e4 or less above");
  r.add(
      "merges-heads", 2,
      [](const EGraph& g, std::span<const Id> a) {
        const tensor::ValueType& q = type_of(g, a[0]);
        const auto* shape = std::get_if<Ints>(&g.attr_value(AttrId(a[1].value)));
        if (q.is_tuple || q.tensor().rank() != 4 || shape == nullptr) return false;
        const tensor::Dims& d = q.tensor().dims;  // [batch, heads, sequence, head]
        std::optional<tensor::Dims> out = reshaped({d[0], d[2], d[1], d[3]}, *shape);
        return out && *out == Ints{d[0], d[2], d[1] * d[3]};
      },
      "(merges-heads ?q ?s): the reshape target ?s turns ?q [batch, heads, sequence, head], "
      "transposed to [batch, sequence, heads, head], into [batch, sequence, heads * head]");
  r.add_function(
      "heads", 1,
      [](const EGraph& g, std::span<const Id> a) -> std::optional<AttrValue> {
        const tensor::ValueType& t = type_of(g, a[0]);
        if (t.is_tuple || t.tensor().rank() != 4) return std::nullopt;
        return t.tensor().dims[1];
      },
      "(heads ?q): d1 of ?q [batch, heads, sequence, head]");
  r.add_function(
      "reciprocal", 1,
      [](const EGraph& g, std::span<const Id> a) -> std::optional<AttrValue> {
        const auto* x = std::get_if<double>(&g.attr_value(AttrId(a[0].value)));
        if (x == nullptr || *x == 0 || !std::isfinite(1.0 / *x)) return std::nullopt;
        return 1.0 / *x;
      },
      "(reciprocal ?c): 1 / ?c (a scale from a divisor)");
  r.add_function(
      "half-last-dim", 1,
      [](const EGraph& g, std::span<const Id> a) -> std::optional<AttrValue> {
        const tensor::ValueType& t = type_of(g, a[0]);
        if (t.is_tuple || t.tensor().rank() == 0 || t.tensor().dims.back() % 2 != 0)
          return std::nullopt;
        return Ints{t.tensor().dims.back() / 2};
      },
      "(half-last-dim ?t): [half of ?t's last dimension] (slice bounds)");
  r.add_function(
      "half", 1,
      [](const EGraph& g, std::span<const Id> a) -> std::optional<AttrValue> {
        const auto* n = std::get_if<std::int64_t>(&g.attr_value(AttrId(a[0].value)));
        if (n == nullptr || *n < 2 || *n % 2 != 0) return std::nullopt;
        return *n / 2;
      },
      "(half ?g): the whole number ?g / 2 (a group count after merging groups in pairs)");
  // The group count TASO infers for a convolution: its input's channels
  // (axis 1) over its kernel's; the arguments are the parts concatenated into
  // the input, then the last `kernels` ones the parts of the kernel.
  auto conv_group = [](std::size_t kernels) {
    return [kernels](const EGraph& g, std::span<const Id> a) -> std::optional<AttrValue> {
      if (a.size() <= kernels) return std::nullopt;
      std::int64_t inputs = 0, per_group = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        const tensor::ValueType& t = type_of(g, a[i]);
        if (t.is_tuple || t.tensor().rank() < 2) return std::nullopt;
        (i + kernels < a.size() ? inputs : per_group) += t.tensor().dims[1];
      }
      if (per_group <= 0 || inputs % per_group != 0) return std::nullopt;
      return inputs / per_group;
    };
  };
  r.add_function("conv-group", -1, conv_group(1),
                 "(conv-group ?x... ?w): the channels (axis 1) of the ?x over the kernel ?w's "
                 "input channels (the group count TASO infers)");
  for (const std::size_t k : {2, 3})
    r.add_function(fmt::format("conv-group-k{}", k), -1, conv_group(k),
                   fmt::format("(conv-group-k{} ?x... ?w...): conv-group with a kernel "
                               "concatenated from the last {} arguments",
                               k, k));
  return r;
}

}  // namespace saturn

// The verifier's draws: shapes and attribute values for a rule's variables,
// related as rules relate their operands. See verifier_draws.h.
#include "saturn/rules/tensor/verifier_draws.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "absl/strings/numbers.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/ops.h"

namespace saturn::verifier {

using Ints = std::vector<std::int64_t>;

namespace {

std::int64_t pick(Rng& rng, std::int64_t lo, std::int64_t hi) {  // inclusive
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

// A random value for an attribute variable bound to `key`, or nullopt when
// the verifier has no sampler for that key.
std::optional<AttrValue> sample_attribute(const std::string& key, Rng& rng) {
  auto one_of = [&](std::vector<AttrValue> values) { return values[rng() % values.size()]; };
  if (key == "strides" || key == "dilations") return one_of({Ints{1, 1}, Ints{2, 2}, Ints{2, 1}});
  if (key == "pads")
    return one_of({Ints{0, 0, 0, 0}, Ints{1, 1, 1, 1}, Ints{1, 0, 1, 0}, Ints{0, 1, 1, 0}});
  if (key == "group") return one_of({std::int64_t{1}, std::int64_t{2}});
  if (key == "kernel_shape") return one_of({Ints{1, 1}, Ints{2, 2}, Ints{3, 3}});
  if (key == "axis" || key == "index") return AttrValue(pick(rng, -1, 3));
  if (key == "activation")
    return one_of(
        {std::string("none"), std::string("relu"), std::string("sigmoid"), std::string("tanh")});
  if (key == "value" || key == "alpha" || key == "beta") return one_of({0.5, 2.0, -1.5});
  if (key == "epsilon") return one_of({1e-5, 1e-3});
  if (key == "count_include_pad" || key == "transA" || key == "transB" || key == "channels_last")
    return one_of({std::int64_t{0}, std::int64_t{1}});
  if (key == "opset") return one_of({std::int64_t{11}, std::int64_t{13}});  // QLinearSoftmax's
  if (key == "axes") return one_of({Ints{-1}, Ints{1}, Ints{2}, Ints{0}});
  if (key == "starts" || key == "ends")
    return one_of({Ints{0}, Ints{1}, Ints{2}, Ints{-1}, Ints{std::numeric_limits<std::int64_t>::max()}});
  if (key == "steps") return one_of({Ints{}, Ints{1}, Ints{2}});
  if (key == "split")
    return one_of({Ints{1, 1}, Ints{1, 2}, Ints{2, 1}, Ints{1, 1, 1}, Ints{2, 2}});
  if (key == "shape")
    return one_of({Ints{-1}, Ints{1, -1}, Ints{-1, 1}, Ints{2, -1}, Ints{-1, 2}, Ints{-1, 1, 1},
                   Ints{1, -1, 2}, Ints{3, -1}});
  if (key == "perm") {
    Ints perm(static_cast<std::size_t>(pick(rng, 2, 4)));
    for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int64_t>(i);
    std::shuffle(perm.begin(), perm.end(), rng);
    return perm;
  }
  return std::nullopt;
}

// The attribute key each attribute variable is first bound to.
std::vector<std::string> attribute_keys(const Rule& rule) {
  std::vector<std::string> keys(rule.num_vars());
  for (const auto* side : {&rule.lhs, &rule.rhs}) {
    for (const Pattern& p : *side) {
      for (const PatternNode& n : p.nodes) {
        for (const AttrVar& a : n.attr_vars) {
          if (keys[a.var].empty()) keys[a.var] = a.key;
        }
      }
    }
  }
  return keys;
}

// The rank an operator expects of its input `position`, or 0 if any.
int expected_rank(tensor::Op op, std::size_t position) {
  using tensor::Op;
  switch (op) {
    case Op::kConv:
      return position < 2 ? 4 : 1;
    case Op::kBatchNorm:
    case Op::kInstanceNorm:
      return position == 0 ? 4 : 1;
    case Op::kLayerNorm:
      return position == 0 ? 0 : 1;
    case Op::kMaxPool:
    case Op::kAveragePool:
    case Op::kGlobalAveragePool:
    case Op::kEnlarge:
    case Op::kMergeGroups:
      return 4;
    case Op::kGemm:
      return position < 2 ? 2 : 1;
    default:
      return 0;
  }
}

// For each variable, the rank a `rank-N` condition on it asks for, or else
// the rank its first use on the left side expects.
std::vector<int> rank_hints_of(const Rule& rule) {
  std::vector<int> hints(rule.num_vars(), 0);
  for (const Pattern& p : rule.lhs) {
    for (const PatternNode& n : p.nodes) {
      for (std::size_t i = 0; i < n.children.size(); ++i) {
        const PatternNode& child = p.nodes[n.children[i]];
        if (child.is_var() && hints[child.var] == 0)
          hints[child.var] = expected_rank(tensor::TensorLanguage::op(n.op), i);
      }
    }
  }
  for (const RuleCondition& c : rule.conditions) {
    const std::string& name = c.predicate->name;
    int rank = 0;
    if (c.args.size() == 1 && name.starts_with("rank-") &&
        absl::SimpleAtoi(absl::string_view(name).substr(5), &rank))
      hints[static_cast<std::size_t>(c.args[0])] = rank;
    if (c.args.size() == 1 && name == "halves-equal") hints[static_cast<std::size_t>(c.args[0])] = 2;
    if (c.args.size() == 1 && name == "scalar") hints[static_cast<std::size_t>(c.args[0])] = kScalar;
    if (c.args.size() == 2 && name == "causal-mask") hints[static_cast<std::size_t>(c.args[0])] = 2;
  }
  return hints;
}

// For each variable, the element type a `dtype-*` condition asks for, or
// float32 (a `dtype-quantized` variable's is chosen per draw).
std::vector<tensor::DType> dtype_hints_of(const Rule& rule) {
  std::vector<tensor::DType> hints(rule.num_vars(), tensor::DType::kFloat32);
  for (const RuleCondition& c : rule.conditions) {
    const std::string& name = c.predicate->name;
    if (c.args.size() != 1 || !name.starts_with(kDTypeConditionPrefix)) continue;
    if (name == kQuantizedCondition) continue;
    if (std::optional<tensor::DType> dtype =
            tensor::parse_dtype(std::string_view(name).substr(kDTypeConditionPrefix.size())))
      hints[static_cast<std::size_t>(c.args[0])] = *dtype;
  }
  return hints;
}

// For each variable, an earlier one a `same-shape` condition ties it to, or
// itself.
std::vector<std::size_t> same_shape_of(const Rule& rule) {
  std::vector<std::size_t> same(rule.num_vars());
  for (std::size_t v = 0; v < same.size(); ++v) same[v] = v;
  for (const RuleCondition& c : rule.conditions) {
    if (c.predicate->name != "same-shape" || c.args.size() != 2) continue;
    // (std::minmax of temporaries would return references to them.)
    const auto x = static_cast<std::size_t>(c.args[0]), y = static_cast<std::size_t>(c.args[1]);
    const std::size_t a = std::min(x, y), b = std::max(x, y);
    if (same[b] == b) same[b] = a;
  }
  return same;
}

// A shape: often one drawn before (or one dimension off it), since rules
// relate their operands; otherwise fresh, of the hinted rank if any.
tensor::Dims sample_dims(Rng& rng, const std::vector<std::int64_t>& pool, int rank_hint,
                         const std::vector<tensor::Dims>& drawn) {
  if (rank_hint == kScalar) return {};
  const std::uint64_t roll = rng() % 10;
  if (!drawn.empty() && roll < 6) {
    tensor::Dims d = drawn[rng() % drawn.size()];
    if (rank_hint == 0 || static_cast<int>(d.size()) == rank_hint) {
      if (roll >= 4 && !d.empty()) d[rng() % d.size()] = pool[rng() % pool.size()];
      return d;
    }
  }
  tensor::Dims d(static_cast<std::size_t>(rank_hint > 0 ? rank_hint : pick(rng, 1, 4)));
  for (std::int64_t& x : d) x = pool[rng() % pool.size()];
  return d;
}

}  // namespace

RuleVars::RuleVars(const Rule& rule)
    : rule(rule),
      keys(attribute_keys(rule)),
      ranks(rank_hints_of(rule)),
      dtypes(dtype_hints_of(rule)),
      same_shape(same_shape_of(rule)) {
  for (std::size_t v = 0; v < rule.num_vars(); ++v) (rule.attr_vars[v] ? attr : tensor).push_back(v);
  for (const RuleCondition& c : rule.conditions) {
    if (c.predicate->name == kQuantizedCondition && c.args.size() == 1)
      quantized.push_back(static_cast<std::size_t>(c.args[0]));
  }
}

std::vector<tensor::DType> RuleVars::draw_dtypes(Rng& rng) const {
  std::vector<tensor::DType> out = dtypes;
  if (quantized.empty()) return out;  // (the draws of other rules stay as they were)
  const tensor::DType chosen = kQuantizedDTypes[rng() % std::size(kQuantizedDTypes)];
  for (std::size_t v : quantized) out[v] = chosen;
  return out;
}

namespace {

// Attribute values for every attribute variable; false (and the key in
// `missing`) if one has no sampler.
bool sample_attributes(const RuleVars& vars, Rng& rng, Assignment& a, std::string& missing) {
  a.attrs.resize(vars.rule.num_vars());
  for (std::size_t v : vars.attr) {
    std::optional<AttrValue> value = sample_attribute(vars.keys[v], rng);
    if (!value) {
      missing = vars.keys[v];
      return false;
    }
    a.attrs[v] = *std::move(value);
  }
  return true;
}

// Mostly (7 in 8), the values that make a draw fit: the padding a
// `same-padding` condition asks of its kernel, and, for a convolution of a
// variable by a variable with a group-count variable, an input with that
// many times the kernel's input channels (and output channels the groups
// divide). Grouped convolutions are otherwise rare among the draws, and
// rules that hold only ungrouped pass unnoticed.
void fit_attributes(const RuleVars& vars, Rng& rng, Assignment& a) {
  for (const Pattern& p : vars.rule.lhs) {
    for (const PatternNode& n : p.nodes) {
      if (n.is_var() || tensor::TensorLanguage::op(n.op) != tensor::Op::kConv ||
          n.children.size() < 2 || rng() % 8 == 0)
        continue;
      const PatternNode& x = p.nodes[n.children[0]];
      const PatternNode& w = p.nodes[n.children[1]];
      for (const AttrVar& g : n.attr_vars) {
        const auto* groups = std::get_if<std::int64_t>(&a.attrs[static_cast<std::size_t>(g.var)]);
        if (g.key != "group" || groups == nullptr || *groups < 1 || !x.is_var() || !w.is_var())
          continue;
        tensor::Dims& xd = a.dims[static_cast<std::size_t>(x.var)];
        tensor::Dims& wd = a.dims[static_cast<std::size_t>(w.var)];
        if (xd.size() != 4 || wd.size() != 4) continue;
        xd[1] = *groups * wd[1];
        wd[0] = (wd[0] + *groups - 1) / *groups * *groups;
      }
    }
  }
  for (const RuleCondition& c : vars.rule.conditions) {
    const std::string& name = c.predicate->name;
    if (name == "same-padding" && c.args.size() == 2 && rng() % 8 != 0) {
      const auto pads = static_cast<std::size_t>(c.args[0]);
      const auto kernel = static_cast<std::size_t>(c.args[1]);
      if (std::optional<Ints> same = same_pads(a.dims[kernel])) a.attrs[pads] = *std::move(same);
    }
    if (name == "row-per-position" && c.args.size() == 2 && rng() % 8 != 0) {
      const tensor::Dims& x = a.dims[static_cast<std::size_t>(c.args[1])];
      if (x.size() == 4) a.dims[static_cast<std::size_t>(c.args[0])] = {x[2], x[3]};
    }
    if (name == "reshape-keeps-last-dim" && c.args.size() == 2 && rng() % 8 != 0) {
      // A shape that folds the leading axes and keeps the last one.
      const tensor::Dims& x = a.dims[static_cast<std::size_t>(c.args[0])];
      if (!x.empty()) a.attrs[static_cast<std::size_t>(c.args[1])] = Ints{-1, x.back()};
    }
    if (name == "merges-heads" && c.args.size() == 2 && rng() % 8 != 0) {
      const tensor::Dims& q = a.dims[static_cast<std::size_t>(c.args[0])];
      if (q.size() == 4) a.attrs[static_cast<std::size_t>(c.args[1])] = Ints{q[0], q[2], q[1] * q[3]};
    }
    if ((name == "first-half" || name == "second-half") && c.args.size() == 5 && rng() % 8 != 0) {
      // Slice attributes (starts, ends, axes, steps) taking that half of an
      // even last axis.
      tensor::Dims& x = a.dims[static_cast<std::size_t>(c.args[0])];
      if (x.empty()) continue;
      if (x.back() % 2 != 0) x.back() *= 2;
      const std::int64_t half = x.back() / 2;
      const bool second = name == "second-half";
      a.attrs[static_cast<std::size_t>(c.args[1])] = Ints{second ? half : 0};
      a.attrs[static_cast<std::size_t>(c.args[2])] =
          Ints{second ? std::numeric_limits<std::int64_t>::max() : half};
      a.attrs[static_cast<std::size_t>(c.args[3])] = Ints{-1};
      a.attrs[static_cast<std::size_t>(c.args[4])] = Ints{1};
    }
  }
}

}  // namespace

// Shapes related as rules usually relate their operands: a small alphabet of
// dimensions per draw, and shapes reused from earlier variables.
bool random_assignment(const RuleVars& vars, Rng& rng, Assignment& a, std::string& missing) {
  std::vector<std::int64_t> pool{1, 2, 3, 4, 5, 6};
  std::shuffle(pool.begin(), pool.end(), rng);
  pool.resize(static_cast<std::size_t>(pick(rng, 2, 3)));
  a.source = Assignment::Source::kRandom;
  a.dims.assign(vars.rule.num_vars(), {});
  std::vector<tensor::Dims> drawn;
  for (std::size_t v : vars.tensor) {
    // Mostly as a same-shape condition asks; sometimes not, to see it refuse.
    const std::size_t like = vars.same_shape[v];
    a.dims[v] =
        like != v && rng() % 8 != 0 ? a.dims[like] : sample_dims(rng, pool, vars.ranks[v], drawn);
    drawn.push_back(a.dims[v]);
  }
  if (!sample_attributes(vars, rng, a, missing)) return false;
  fit_attributes(vars, rng, a);
  return true;
}

// Neighbours of an assignment that passed: one dimension of one variable
// changed (to 1, to twice or one more than it was, to a prime, or to a size
// another variable has), so that
// operands the rule silently assumes equal come apart where its left side
// still allows it; and one attribute drawn again.
std::vector<Assignment> variations(const RuleVars& vars, const Assignment& a, Rng& rng) {
  std::vector<Assignment> out;
  // Sizes other variables have, so that a dimension can also come to agree
  // with another operand's.
  std::vector<std::int64_t> present;
  for (std::size_t v : vars.tensor)
    present.insert(present.end(), a.dims[v].begin(), a.dims[v].end());
  for (std::size_t v : vars.tensor) {
    for (std::size_t i = 0; i < a.dims[v].size(); ++i) {
      const std::int64_t d = a.dims[v][i];
      std::vector<std::int64_t> sizes = {1, 2 * d, d + 1, 7};
      sizes.insert(sizes.end(), present.begin(), present.end());
      std::sort(sizes.begin(), sizes.end());
      sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
      for (std::int64_t x : sizes) {
        if (x == d || x > 16) continue;
        Assignment b = a;
        b.dims[v][i] = x;
        b.source = Assignment::Source::kVaried;
        out.push_back(std::move(b));
      }
    }
  }
  for (std::size_t v : vars.attr) {
    Assignment b = a;
    b.source = Assignment::Source::kVaried;
    // A permutation keeps its length (it must fit the same tensor).
    if (auto* perm = std::get_if<Ints>(&b.attrs[v]); perm != nullptr && vars.keys[v] == "perm") {
      std::shuffle(perm->begin(), perm->end(), rng);
      out.push_back(std::move(b));
    } else if (std::optional<AttrValue> value = sample_attribute(vars.keys[v], rng)) {
      b.attrs[v] = *std::move(value);
      out.push_back(std::move(b));
    }
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

// Every combination of small shapes (dimensions 1 to 3, the hinted rank or
// ranks 1 and 2) for a rule with at most two tensor variables; attributes
// drawn at random. Empty for larger rules.
std::vector<Assignment> enumerated(const RuleVars& vars, Rng& rng) {
  constexpr std::size_t kMaxVars = 2, kMaxCombinations = 1024;
  std::vector<Assignment> out;
  if (vars.tensor.empty() || vars.tensor.size() > kMaxVars) return out;
  // The shapes each variable may take.
  std::vector<std::vector<tensor::Dims>> choices;
  for (std::size_t v : vars.tensor) {
    std::vector<tensor::Dims> shapes;
    for (int rank : vars.ranks[v] != 0 ? std::vector<int>{std::max(0, vars.ranks[v])}
                                        : std::vector<int>{1, 2}) {
      tensor::Dims d(static_cast<std::size_t>(rank), 1);
      for (bool more = true; more;) {
        shapes.push_back(d);
        more = false;
        for (std::size_t i = 0; i < d.size() && !more; ++i) {
          if (d[i] < 3) {
            ++d[i];
            more = true;
          } else {
            d[i] = 1;
          }
        }
      }
    }
    choices.push_back(std::move(shapes));
  }
  std::size_t combinations = 1;
  for (const auto& c : choices) combinations *= c.size();
  if (combinations > kMaxCombinations) return out;
  std::string missing;
  for (std::size_t k = 0; k < combinations; ++k) {
    Assignment a;
    a.source = Assignment::Source::kEnumerated;
    a.dims.assign(vars.rule.num_vars(), {});
    std::size_t rest = k;
    for (std::size_t j = 0; j < vars.tensor.size(); ++j) {
      a.dims[vars.tensor[j]] = choices[j][rest % choices[j].size()];
      rest /= choices[j].size();
    }
    if (!sample_attributes(vars, rng, a, missing)) return {};
    out.push_back(std::move(a));
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

}  // namespace saturn::verifier

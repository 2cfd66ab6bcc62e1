// The rule verifier: draws shapes, attributes and values for a rule's
// variables, evaluates both sides in the reference interpreter and compares.
#include <algorithm>
#include <cmath>
#include <random>

#include "base/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "rules/rewrite.h"
#include "rules/tensor/tensor_rules.h"
#include "tensor/analysis.h"
#include "tensor/infer.h"
#include "tensor/interpreter/interpreter.h"

namespace saturn {

using tensor::TensorAnalysis;
using Ints = std::vector<std::int64_t>;

namespace {

using Rng = std::mt19937_64;

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
  if (key == "count_include_pad" || key == "transA" || key == "transB")
    return one_of({std::int64_t{0}, std::int64_t{1}});
  if (key == "axes") return one_of({Ints{-1}, Ints{1}, Ints{2}, Ints{0}});
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

// For each variable, the rank its first use on the left side expects.
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
  return hints;
}

// A shape: often one drawn before (or one dimension off it), since rules
// relate their operands; otherwise fresh, of the hinted rank if any.
tensor::Dims sample_dims(Rng& rng, const std::vector<std::int64_t>& pool, int rank_hint,
                         const std::vector<tensor::Dims>& drawn) {
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

// One instantiation of a rule's variables and its two sides in a fresh e-graph.
class Draw {
 public:
  Draw(const Rule& rule, const tensor::TensorLanguage& lang)
      : rule_(rule), egraph_(lang, &shapes_) {}

  // Leaves for the variables; false if an attribute has no sampler.
  // Weight values are drawn from [low, high).
  bool bind(Rng& rng, const std::vector<std::string>& keys, std::uint64_t seed, float low,
            float high) {
    // A small alphabet of dimensions per draw makes shapes agree often.
    std::vector<std::int64_t> pool{1, 2, 3, 4, 5, 6};
    std::shuffle(pool.begin(), pool.end(), rng);
    pool.resize(static_cast<std::size_t>(pick(rng, 2, 3)));
    subst_.assign(rule_.num_vars(), Id());
    const std::vector<int> rank_hints = rank_hints_of(rule_);
    std::vector<tensor::Dims> drawn;
    for (std::size_t v = 0; v < rule_.num_vars(); ++v) {
      if (rule_.attr_vars[v]) {
        std::optional<AttrValue> value = sample_attribute(keys[v], rng);
        if (!value) {
          missing_sampler_ = keys[v];
          return false;
        }
        subst_[v] = Id(egraph_.intern_value(*value).value);
        continue;
      }
      tensor::Dims dims = sample_dims(rng, pool, rank_hints[v], drawn);
      drawn.push_back(dims);
      std::string name = rule_.var_names[v].substr(1);
      Attributes a =
          *tensor::normalize_attributes(tensor::Op::kWeight, {{"name", name}, {"shape", dims}});
      subst_[v] = egraph_
                      .add(ENode(tensor::TensorLanguage::symbol(tensor::Op::kWeight),
                                 egraph_.attrs().intern(a)))
                      .id;
      source_.weights[name] =
          tensor::WeightInit{nullptr, seed ^ tensor::stable_hash(name), low, high};
    }
    return true;
  }

  // Instantiates `side`; false if a pattern does not type-check.
  bool instantiate_side(const std::vector<Pattern>& side, std::vector<Id>& roots) {
    roots.clear();
    for (const Pattern& p : side) {
      std::optional<Id> id = instantiate(egraph_, p, subst_, nullptr);
      if (!id) return false;
      roots.push_back(*id);
    }
    egraph_.rebuild();
    return true;
  }

  bool conditions_hold() {
    std::vector<Id> args;
    for (const RuleCondition& c : rule_.conditions) {
      args.clear();
      for (int v : c.args) args.push_back(subst_[v]);
      if (!c.predicate->fn(egraph_, args)) return false;
    }
    return true;
  }

  absl::StatusOr<std::vector<tensor::Tensor>> evaluate(const std::vector<Id>& roots) {
    std::vector<tensor::ClassOutput> outputs;
    for (std::size_t i = 0; i < roots.size(); ++i)
      outputs.push_back({roots[i], fmt::format("out{}", i)});
    absl::StatusOr<tensor::Graph> g = tensor::graph_from_egraph(
        egraph_, source_, outputs, [&](Id id) { return &egraph_.nodes(egraph_.find(id)).front(); });
    if (!g.ok()) return g.status();
    return tensor::evaluate(*g, {});
  }

  // "?x=float32[2,3], ?p=[1,0]"
  std::string describe() const {
    std::string out;
    for (std::size_t v = 0; v < rule_.num_vars(); ++v) {
      if (!out.empty()) out += ", ";
      out += rule_.var_names[v] + "=";
      out += rule_.attr_vars[v] ? format_attr_value(egraph_.attr_value(AttrId(subst_[v].value)))
                                : tensor::to_string(shapes_.info(egraph_.find(subst_[v])).type);
    }
    return out;
  }

  const std::string& missing_sampler() const { return missing_sampler_; }

 private:
  const Rule& rule_;
  TensorAnalysis shapes_;
  EGraph egraph_;
  tensor::Graph source_;
  std::vector<Id> subst_;
  std::string missing_sampler_;
};

// The first element where two outputs differ, described.
std::string first_difference(const tensor::Tensor& left, const tensor::Tensor& right, double rtol,
                             double atol) {
  if (left.type() != right.type()) {
    return fmt::format("left is {}, right is {}", tensor::to_string(left.type()),
                       tensor::to_string(right.type()));
  }
  std::span<const float> a = left.floats(), b = right.floats();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (!(std::abs(a[i] - b[i]) <= atol + rtol * std::abs(a[i]))) {
      return fmt::format("element {}: left {:.6g}, right {:.6g}", i, a[i], b[i]);
    }
  }
  return "no element differs";
}

}  // namespace

RuleVerdict verify_rule(const Rule& rule, const tensor::TensorLanguage& language,
                        const VerifyOptions& options) {
  RuleVerdict verdict;
  Rng rng(options.seed ^ tensor::stable_hash(rule.name));
  const std::vector<std::string> keys = attribute_keys(rule);
  int lhs_misfits = 0, failed_conditions = 0, rhs_misfits = 0, non_finite = 0;
  std::vector<Id> lhs, rhs;
  for (int attempt = 0; attempt < options.attempts && verdict.draws < options.draws; ++attempt) {
    Draw draw(rule, language);
    // Every other draw uses positive values only, so that rules over
    // square roots and variances see defined results.
    const bool positive = attempt % 2 == 1;
    if (!draw.bind(rng, keys, rng(), positive ? 0.25f : -1.0f, positive ? 1.25f : 1.0f)) {
      verdict.detail = fmt::format("no sampler for attribute '{}'", draw.missing_sampler());
      return verdict;
    }
    if (!draw.instantiate_side(rule.lhs, lhs)) {
      ++lhs_misfits;
      continue;
    }
    if (!draw.conditions_hold()) {
      ++failed_conditions;
      continue;
    }
    if (!draw.instantiate_side(rule.rhs, rhs)) {
      ++rhs_misfits;
      continue;
    }
    absl::StatusOr<std::vector<tensor::Tensor>> left = draw.evaluate(lhs);
    absl::StatusOr<std::vector<tensor::Tensor>> right = draw.evaluate(rhs);
    if (!left.ok() || !right.ok()) {
      verdict.outcome = VerifyOutcome::kFailed;
      verdict.detail = fmt::format("with {}: evaluation failed: {}", draw.describe(),
                                   message(!left.ok() ? left.status() : right.status()));
      return verdict;
    }
    bool finite = true;
    for (const tensor::Tensor& t : *left) {
      for (float x : t.floats()) finite = finite && std::isfinite(x);
    }
    if (!finite) {
      ++non_finite;
      continue;
    }
    for (std::size_t i = 0; i < left->size(); ++i) {
      if (max_error_ratio((*right)[i], (*left)[i], options.rtol, options.atol) > 1.0) {
        verdict.outcome = VerifyOutcome::kFailed;
        verdict.detail =
            fmt::format("with {}: output {} differs: {}", draw.describe(), i,
                        first_difference((*left)[i], (*right)[i], options.rtol, options.atol));
        return verdict;
      }
    }
    ++verdict.draws;
  }
  if (verdict.draws == 0) {
    verdict.detail = fmt::format(
        "no instantiation found in {} attempts (left side did not type-check {} times, conditions "
        "failed {}, right side "
        "did not type-check {}, values not finite {})",
        options.attempts, lhs_misfits, failed_conditions, rhs_misfits, non_finite);
    return verdict;
  }
  verdict.outcome = VerifyOutcome::kVerified;
  return verdict;
}

}  // namespace saturn

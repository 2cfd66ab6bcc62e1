// The rule verifier: draws shapes, attributes and values for a rule's
// variables, evaluates both sides in the reference interpreter and compares.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <utility>

#include "absl/strings/numbers.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "saturn/rules/rewrite.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/rules/tensor/verifier_draws.h"
#include "saturn/tensor/analysis.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/interpreter.h"

namespace saturn {

using tensor::TensorAnalysis;
using Ints = std::vector<std::int64_t>;

namespace {

using verifier::Assignment;
using verifier::Rng;
using verifier::RuleVars;

using IntegerRange = std::pair<std::int64_t, std::int64_t>;

template <typename T>
constexpr IntegerRange range_of() {
  return {std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
}

// The range of an integer element type; nullopt for the others (int64
// draws as the interpreter's other integers do).
std::optional<IntegerRange> integer_range(tensor::DType dtype) {
  using tensor::DType;
  switch (dtype) {
    case DType::kInt8: return range_of<std::int8_t>();
    case DType::kUInt8: return range_of<std::uint8_t>();
    case DType::kInt16: return range_of<std::int16_t>();
    case DType::kUInt16: return range_of<std::uint16_t>();
    case DType::kInt32: return range_of<std::int32_t>();
    default: return std::nullopt;
  }
}

// Integer values for a weight of `type`: each element one of the three
// values at either end of the range half of the time (where saturation and
// overflow are), otherwise anywhere in it. Little-endian two's complement.
tensor::Tensor integer_draw(const tensor::TensorType& type, IntegerRange range, std::uint64_t seed) {
  Rng rng(seed);
  const auto [lo, hi] = range;
  const auto span = static_cast<std::uint64_t>(hi - lo + 1);
  const std::size_t width = tensor::dtype_bytes(type.dtype);
  std::vector<std::byte> bytes(static_cast<std::size_t>(type.num_bytes()));
  for (std::size_t i = 0; i * width < bytes.size(); ++i) {
    std::int64_t v = lo + static_cast<std::int64_t>(rng() % span);
    if (rng() % 2 == 0) {
      const auto edge = static_cast<std::int64_t>(rng() % 3);
      v = rng() % 2 == 0 ? lo + edge : hi - edge;
    }
    const auto bits = static_cast<std::uint64_t>(v);
    for (std::size_t b = 0; b < width; ++b)
      bytes[i * width + b] = static_cast<std::byte>((bits >> (8 * b)) & 0xffu);
  }
  return tensor::Tensor(type, std::move(bytes));
}

// One instantiation of a rule's variables and its two sides in a fresh e-graph.
class Draw {
 public:
  Draw(const Rule& rule, const tensor::TensorLanguage& lang)
      : rule_(rule), egraph_(lang, &shapes_) {
    shapes_.set_weights(&source_.weights);
  }

  // Leaves for the variables, of the element types `dtypes`. Float weights
  // are drawn from [low, high), integer ones over their whole range.
  void bind(const Assignment& a, std::span<const tensor::DType> dtypes, std::uint64_t seed,
            float low, float high) {
    subst_.assign(rule_.num_vars(), Id());
    for (std::size_t v = 0; v < rule_.num_vars(); ++v) {
      if (rule_.attr_vars[v]) {
        subst_[v] = Id(egraph_.intern_value(a.attrs[v]).value);
        continue;
      }
      std::string name = rule_.var_names[v].substr(1);
      Attributes attrs = *tensor::normalize_attributes(
          tensor::Op::kWeight, {{"name", name},
                                {"shape", a.dims[v]},
                                {"dtype", std::string(tensor::dtype_name(dtypes[v]))}});
      subst_[v] = egraph_
                      .add(ENode(tensor::TensorLanguage::symbol(tensor::Op::kWeight),
                                 egraph_.attrs().intern(attrs)))
                      .id;
      tensor::WeightInit& init = source_.weights[name];
      init = tensor::WeightInit{nullptr, seed ^ tensor::stable_hash(name), low, high};
      if (std::optional range = integer_range(dtypes[v]))
        init.data = std::make_shared<const tensor::Tensor>(
            integer_draw(tensor::TensorType{dtypes[v], a.dims[v]}, *range, init.seed));
    }
    // The weight a value condition reads (its first argument) gets values;
    // three draws in four make the condition hold (the fourth sees it refuse).
    if (seed % 4 == 0) return;
    for (const RuleCondition& c : rule_.conditions) {
      for (const ValueCondition& vc : value_conditions()) {
        if (vc.name != c.predicate->name) continue;
        const int v = c.args.empty() ? -1 : c.args[0];
        if (v < 0 || rule_.attr_vars[v]) continue;
        tensor::WeightInit& w = source_.weights[rule_.var_names[v].substr(1)];
        // An integer draw is copied (its buffer is shared with w.data), a
        // float one drawn afresh.
        tensor::Tensor values =
            w.data && !tensor::is_computable(w.data->dtype())
                ? tensor::Tensor(w.data->type(), std::vector<std::byte>(w.data->data().begin(),
                                                                           w.data->data().end()))
                : tensor::random_tensor(tensor::TensorType{tensor::DType::kFloat32, a.dims[v]},
                                        w.seed, w.low, w.high);
        if (vc.make_hold(values)) w.data = std::make_shared<const tensor::Tensor>(std::move(values));
      }
    }
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

  // The first condition that does not hold, or -1.
  int failed_condition() {
    std::vector<Id> args;
    for (std::size_t i = 0; i < rule_.conditions.size(); ++i) {
      const RuleCondition& c = rule_.conditions[i];
      args.clear();
      for (int v : c.args) args.push_back(subst_[v]);
      if (!c.predicate->fn(egraph_, args)) return static_cast<int>(i);
    }
    return -1;
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

 private:
  const Rule& rule_;
  TensorAnalysis shapes_;
  EGraph egraph_;
  tensor::Graph source_;
  std::vector<Id> subst_;
};

// The first element where two outputs differ, described.
std::string first_difference(const tensor::Tensor& left, const tensor::Tensor& right, double rtol,
                             double atol) {
  if (left.type() != right.type()) {
    return fmt::format("left is {}, right is {}", tensor::to_string(left.type()),
                       tensor::to_string(right.type()));
  }
  if (left.dtype() != tensor::DType::kFloat32) {  // integers and bools: equal or not
    const std::span<const std::byte> a = left.data(), b = right.data();
    const std::size_t width = std::max<std::size_t>(1, tensor::dtype_bytes(left.dtype()));
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) return fmt::format("element {}: the bytes differ", i / width);
    }
    return "no element differs";
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
  const RuleVars vars(rule);
  // Where the next draw comes from: neighbours of draws that passed first
  // (every other attempt), then the small-shape enumeration, then random.
  std::deque<Assignment> varied;
  constexpr std::size_t kMaxVaried = 256;
  std::vector<Assignment> small = enumerated(vars, rng);
  std::size_t next_small = 0;
  int lhs_misfits = 0, rhs_misfits = 0, non_finite = 0, failed_conditions = 0, undefined = 0;
  std::vector<int> refused_by(rule.conditions.size(), 0);
  int from[3] = {0, 0, 0};  // draws per Assignment::Source
  int unequal = 0;          // draws in which two tensor variables of one rank differ
  std::vector<Id> lhs, rhs;
  for (int attempt = 0; attempt < options.attempts && verdict.draws < options.draws; ++attempt) {
    Assignment a;
    // Varied draws never outnumber random ones by more than one, so that the
    // draws do not all gather around the first one found.
    const int random_draws = from[static_cast<int>(Assignment::Source::kRandom)];
    const int varied_draws = from[static_cast<int>(Assignment::Source::kVaried)];
    if (!varied.empty() && attempt % 2 == 0 && varied_draws <= random_draws) {
      a = std::move(varied.front());
      varied.pop_front();
    } else if (next_small < small.size() && attempt % 4 == 1) {
      a = small[next_small++];
    } else if (std::string missing; !random_assignment(vars, rng, a, missing)) {
      verdict.detail = fmt::format("no sampler for attribute '{}'", missing);
      return verdict;
    }
    Draw draw(rule, language);
    // Every other draw uses positive values only, so that rules over
    // square roots and variances see defined results.
    const bool positive = rng() % 2 == 1;
    const std::vector<tensor::DType> dtypes = vars.draw_dtypes(rng);
    draw.bind(a, dtypes, rng(), positive ? 0.25f : -1.0f, positive ? 1.25f : 1.0f);
    if (!draw.instantiate_side(rule.lhs, lhs)) {
      ++lhs_misfits;
      continue;
    }
    if (const int c = draw.failed_condition(); c >= 0) {
      ++failed_conditions;
      ++refused_by[static_cast<std::size_t>(c)];
      continue;
    }
    if (!draw.instantiate_side(rule.rhs, rhs)) {
      // A match the rule does not rewrite; a second change may make one it
      // rewrites wrongly (a bias that broadcasts, next to one that does not).
      ++rhs_misfits;
      if (varied.size() < kMaxVaried / 2) {
        for (Assignment& b : variations(vars, a, rng)) varied.push_back(std::move(b));
      }
      continue;
    }
    absl::StatusOr<std::vector<tensor::Tensor>> left = draw.evaluate(lhs);
    if (!left.ok()) {
      // The left side has no value here (an index out of range): the rule
      // claims nothing for this draw.
      ++undefined;
      continue;
    }
    absl::StatusOr<std::vector<tensor::Tensor>> right = draw.evaluate(rhs);
    if (!right.ok()) {
      verdict.outcome = VerifyOutcome::kFailed;
      verdict.detail = fmt::format("with {}: evaluation failed: {}", draw.describe(),
                                   message(right.status()));
      return verdict;
    }
    bool finite = true;
    for (const tensor::Tensor& t : *left) {
      if (t.dtype() != tensor::DType::kFloat32) continue;  // integers are always finite
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
    ++from[static_cast<int>(a.source)];
    bool differ = false;
    for (std::size_t i = 0; i < vars.tensor.size(); ++i) {
      for (std::size_t j = i + 1; j < vars.tensor.size(); ++j) {
        const tensor::Dims& x = a.dims[vars.tensor[i]];
        const tensor::Dims& y = a.dims[vars.tensor[j]];
        differ = differ || (x.size() == y.size() && x != y);
      }
    }
    unequal += differ;
    if (varied.size() < kMaxVaried) {
      for (Assignment& b : variations(vars, a, rng)) varied.push_back(std::move(b));
    }
  }
  std::string conditions;
  for (std::size_t i = 0; i < rule.conditions.size(); ++i) {
    conditions += fmt::format("{}{} refused {}", i == 0 ? "; conditions: " : ", ",
                              rule.conditions[i].predicate->name, refused_by[i]);
  }
  verdict.coverage = fmt::format(
      "{} draws ({} random, {} varied, {} enumerated), {} with unequal shapes of one rank; "
      "{} attempts: left side did not type-check {}, right side {}, left side undefined {}, "
      "values not finite {}{}",
      verdict.draws, from[0], from[1], from[2], unequal,
      lhs_misfits + failed_conditions + rhs_misfits + undefined + non_finite + verdict.draws,
      lhs_misfits, rhs_misfits, undefined, non_finite, conditions);
  if (verdict.draws == 0) {
    verdict.detail = fmt::format(
        "no instantiation found in {} attempts (left side did not type-check {} times, conditions "
        "failed {}, right side "
        "did not type-check {}, left side undefined {}, values not finite {})",
        options.attempts, lhs_misfits, failed_conditions, rhs_misfits, undefined, non_finite);
    return verdict;
  }
  verdict.outcome = VerifyOutcome::kVerified;
  return verdict;
}

}  // namespace saturn

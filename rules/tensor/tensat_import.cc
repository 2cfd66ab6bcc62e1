#include "saturn/rules/tensor/tensat_import.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "absl/strings/str_join.h"
#include "saturn/egraph/sexpr.h"
#include "fmt/format.h"

namespace saturn {

namespace {

absl::Status untranslatable(std::string reason) {
  return absl::InvalidArgumentError(std::move(reason));
}

std::optional<std::int64_t> integer(const SExpr& e) {
  if (!e.is_atom()) return std::nullopt;
  std::int64_t v = 0;
  const char* end = e.text.data() + e.text.size();
  auto [p, ec] = std::from_chars(e.text.data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

const std::string& op_of(const SExpr& e) { return e.items.front().text; }
bool is_op(const SExpr& e, std::string_view op) {
  return e.is_list() && !e.items.empty() && e.items.front().is_atom() && op_of(e) == op;
}

// (relu t), (tanh t), (sigmoid t): the operand's shape.
bool is_activation(const SExpr& e) {
  return (is_op(e, "relu") || is_op(e, "tanh") || is_op(e, "sigmoid")) && e.items.size() == 2;
}
// (ewadd a b), (ewmul a b).
bool is_elementwise(const SExpr& e) {
  return (is_op(e, "ewadd") || is_op(e, "ewmul")) && e.items.size() == 3;
}

// TASO's activation codes (AC_MODE_*): 0 none, 1 sigmoid, 2 relu, 3 tanh.
std::optional<std::string> activation(std::int64_t code) {
  switch (code) {
    case 0:
      return "none";
    case 1:
      return "sigmoid";
    case 2:
      return "relu";
    case 3:
      return "tanh";
    default:
      return std::nullopt;
  }
}

// One rule's translation: its patterns share the group and padding variables
// and collect the conditions.
class RuleTranslator {
 public:
  explicit RuleTranslator(bool ungrouped_left) : ungrouped_left_(ungrouped_left) {}
  bool has_left_convolution() const { return left_convolution_; }

  absl::StatusOr<std::string> term(const SExpr& e, bool left) {
    if (e.is_variable()) return e.text;
    if (!e.is_list() || e.items.empty() || !e.items.front().is_atom())
      return untranslatable(fmt::format("unexpected '{}'", e.text));
    const std::string& op = op_of(e);
    const std::size_t arity = e.items.size() - 1;
    auto expect = [&](std::size_t n) -> absl::Status {
      if (arity == n) return absl::OkStatus();
      return untranslatable(fmt::format("{} takes {} arguments, given {}", op, n, arity));
    };
    if (op == "ewadd" || op == "ewmul") {
      if (absl::Status s = expect(2); !s.ok()) return s;
      return elementwise(op == "ewadd" ? "Add" : "Mul", e.items[1], e.items[2], left);
    }
    if (op == "relu" || op == "tanh" || op == "sigmoid") {
      if (absl::Status s = expect(1); !s.ok()) return s;
      absl::StatusOr<std::string> x = term(e.items[1], left);
      if (!x.ok()) return x.status();
      return fmt::format("({} {})", *activated_op(op), *x);
    }
    if (op == "matmul") {
      if (absl::Status s = expect(3); !s.ok()) return s;
      return matmul(e, left);
    }
    if (op == "conv2d") {
      if (absl::Status s = expect(6); !s.ok()) return s;
      return conv(e, left);
    }
    if (op == "concat") {
      if (absl::Status s = expect(4); !s.ok()) return s;
      return concat(e, left);
    }
    if (op == "enlarge") {  // (enlarge w like): w padded to the kernel size of `like`
      if (absl::Status s = expect(2); !s.ok()) return s;
      if (!e.items[2].is_variable())
        return untranslatable("enlarge to the size of something other than a variable");
      absl::StatusOr<std::string> w = term(e.items[1], left);
      if (!w.ok()) return w.status();
      return fmt::format("(Enlarge{{kernel_shape=(kernel-size {})}} {})", e.items[2].text, *w);
    }
    if (op == "merge") {  // (merge w 2): a grouped kernel for half the groups
      if (absl::Status s = expect(2); !s.ok()) return s;
      if (integer(e.items[2]) != 2) return untranslatable("merge by other than 2 groups");
      absl::StatusOr<std::string> group = group_of(e.items[1]);
      if (!group.ok()) return group.status();
      absl::StatusOr<std::string> w = term(e.items[1], left);
      if (!w.ok()) return w.status();
      return fmt::format("(MergeGroups{{group={}, count=2}} {})", *group, *w);
    }
    if (op == "split_0" || op == "split_1") {
      if (absl::Status s = expect(1); !s.ok()) return s;
      return split(e, left);
    }
    if (op == "smul" || op == "transpose" || op == "Iconv" || op == "Imatmul" ||
        op == "Iewmul" || op == "Cpool" || op == "poolavg" || op == "poolmax" || op == "noop")
      return untranslatable(fmt::format("'{}' is not translated (no counterpart in this importer)", op));
    return untranslatable(fmt::format("unknown operator '{}'", op));
  }

  // " if (...) (...)" or "".
  std::string conditions() const {
    return conditions_.empty() ? "" : " if " + absl::StrJoin(conditions_, " ");
  }

 private:
  static std::optional<std::string> activated_op(std::string_view name) {
    if (name == "relu") return "Relu";
    if (name == "tanh") return "Tanh";
    if (name == "sigmoid") return "Sigmoid";
    return std::nullopt;
  }

  void require(std::string condition) {
    if (std::find(conditions_.begin(), conditions_.end(), condition) == conditions_.end())
      conditions_.push_back(std::move(condition));
  }

  absl::StatusOr<std::string> elementwise(std::string_view op, const SExpr& a, const SExpr& b,
                                          bool left) {
    absl::StatusOr<std::string> x = term(a, left);
    if (!x.ok()) return x.status();
    absl::StatusOr<std::string> y = term(b, left);
    if (!y.ok()) return y.status();
    // TASO's operands have equal shapes; saturn's broadcast.
    if (left && a.is_variable() && b.is_variable() && *x != *y)
      require(fmt::format("(same-shape {} {})", *x, *y));
    return fmt::format("({} {} {})", op, *x, *y);
  }

  absl::StatusOr<std::string> matmul(const SExpr& e, bool left) {
    std::optional<std::int64_t> act = integer(e.items[1]);
    std::optional<std::string> fused = act ? activation(*act) : std::nullopt;
    if (!fused) return untranslatable(fmt::format("matmul activation '{}'", e.items[1].text));
    absl::StatusOr<std::string> a = term(e.items[2], left);
    if (!a.ok()) return a.status();
    absl::StatusOr<std::string> b = term(e.items[3], left);
    if (!b.ok()) return b.status();
    // TASO's matmul substitutions are over matrices; saturn's MatMul also
    // broadcasts batches.
    for (const SExpr* operand : {&e.items[2], &e.items[3]})
      if (operand->is_variable()) require(fmt::format("(rank-2 {})", operand->text));
    std::string product = fmt::format("(MatMul {} {})", *a, *b);
    if (*fused == "none") return product;
    return fmt::format("({} {})", *activated_op(*fused), product);
  }

  absl::StatusOr<std::string> conv(const SExpr& e, bool left) {
    std::optional<std::int64_t> sh = integer(e.items[1]), sw = integer(e.items[2]);
    std::optional<std::int64_t> pad = integer(e.items[3]), act = integer(e.items[4]);
    if (!sh || !sw || *sh < 1 || *sw < 1) return untranslatable("conv2d strides are not numbers");
    std::optional<std::string> fused = act ? activation(*act) : std::nullopt;
    if (!fused) return untranslatable(fmt::format("conv2d activation '{}'", e.items[4].text));
    absl::StatusOr<std::string> x = term(e.items[5], left);
    if (!x.ok()) return x.status();
    absl::StatusOr<std::string> w = term(e.items[6], left);
    if (!w.ok()) return w.status();
    // TASO's padding modes (PD_MODE_*): 0 SAME, 1 VALID.
    std::string pads;
    if (pad == 0) {
      absl::StatusOr<std::string> same = same_padding(e.items[6], *sh == 1 && *sw == 1, left);
      if (!same.ok()) return same.status();
      pads = *std::move(same);
    } else if (pad == 1) {
      pads = "[0,0,0,0]";
    } else {
      return untranslatable(fmt::format("conv2d padding mode '{}'", e.items[3].text));
    }
    absl::StatusOr<std::string> group = conv_group(e.items[5], e.items[6], left);
    if (!group.ok()) return group.status();
    return fmt::format("(Conv{{strides=[{},{}], pads={}, group={}{}}} {} {})", *sh, *sw, pads,
                       *group, *fused == "none" ? "" : ", activation=" + *fused, *x, *w);
  }

  // SAME padding, which follows the kernel's size (and, for strides other
  // than 1, the input's): a padding variable per kernel size on the left,
  // checked by `same-padding` for stride 1; on the right, the left
  // convolution's with a kernel of that size, or `same-pads` of the kernel.
  absl::StatusOr<std::string> same_padding(const SExpr& w, bool unit_strides, bool left) {
    std::optional<std::string> size = extent_var(w, 2);
    if (!size) return untranslatable("cannot tell a SAME convolution's kernel size");
    const std::string var = "?same_" + size->substr(1);
    // A kernel of the same variables has the same size, broadcasts and all.
    const std::string key = kernel_key(w);
    if (left) {
      if (bound_pads_.insert(var).second && unit_strides)
        require(fmt::format("(same-padding {} {})", var, *size));
      pads_of_kernel_.try_emplace(key, var);
      return var;
    }
    if (auto it = pads_of_kernel_.find(key); it != pads_of_kernel_.end()) return it->second;
    if (bound_pads_.contains(var)) return var;
    if (!unit_strides) return untranslatable("SAME padding of a strided convolution on the right");
    return fmt::format("(same-pads {})", *size);
  }

  // A variable with the extent of `t` along `axis` (a kernel's size along
  // axis 2, its output channels along axis 0).
  static std::optional<std::string> extent_var(const SExpr& t, std::int64_t axis) {
    if (t.is_variable()) return t.text;
    if (is_op(t, "concat") && t.items.size() == 5 && integer(t.items[1]) != axis)
      return extent_var(t.items[3], axis);
    // Enlarged to the second kernel's size; its other axes stay.
    if (is_op(t, "enlarge") && t.items.size() == 3)
      return extent_var(t.items[axis >= 2 ? 2 : 1], axis);
    if (is_op(t, "merge") && t.items.size() == 3 && axis != 1) return extent_var(t.items[1], axis);
    if (is_activation(t))
      return extent_var(t.items[1], axis);
    if (is_elementwise(t))
      return extent_var(t.items[1], axis);
    return std::nullopt;
  }

  // The group count TASO infers from the shapes: bound on the left; on the
  // right, the left convolution's with the same kernel, or the input's
  // channels over the kernel's.
  absl::StatusOr<std::string> conv_group(const SExpr& x, const SExpr& w, bool left) {
    // Kernels with the same variables have the same input channels.
    const std::string key = kernel_key(w);
    if (left) {
      left_convolution_ = true;
      auto [it, added] = group_of_kernel_.try_emplace(
          key, ungrouped_left_ ? "1" : fmt::format("?group_{}", group_of_kernel_.size()));
      return it->second;
    }
    // A kernel with merged groups: half the groups (TASO merges by 2).
    if (is_op(w, "merge")) {
      absl::StatusOr<std::string> merged = group_of(w.items[1]);
      if (!merged.ok()) return merged.status();
      return fmt::format("(half {})", *merged);
    }
    if (auto it = group_of_kernel_.find(key); it != group_of_kernel_.end()) return it->second;
    std::vector<std::string> inputs, kernels;
    if (!channel_parts(x, inputs, 1) || !channel_parts(w, kernels, 1) || kernels.size() > 3)
      return untranslatable("cannot infer a right-side convolution's group count");
    // conv-group's last argument, or last K arguments (conv-group-kK), are the kernel's parts.
    const std::string fn =
        kernels.size() == 1 ? "conv-group" : fmt::format("conv-group-k{}", kernels.size());
    inputs.insert(inputs.end(), kernels.begin(), kernels.end());
    return fmt::format("({} {})", fn, absl::StrJoin(inputs, " "));
  }

  // A kernel's variables, sorted: kernels with the same ones have the same
  // shape (the rules permute operands of commutative operators).
  static std::string kernel_key(const SExpr& w) {
    std::vector<std::string> vars;
    variables(w, vars);
    std::sort(vars.begin(), vars.end());
    return absl::StrJoin(vars, " ");
  }

  // The group count a left convolution with kernel `w` bound.
  absl::StatusOr<std::string> group_of(const SExpr& w) const {
    auto it = group_of_kernel_.find(kernel_key(w));
    if (it == group_of_kernel_.end())
      return untranslatable("merge of a kernel no left convolution uses");
    return it->second;
  }

  static void variables(const SExpr& e, std::vector<std::string>& out) {
    if (e.is_variable()) out.push_back(e.text);
    if (e.is_list())
      for (std::size_t i = 1; i < e.items.size(); ++i) variables(e.items[i], out);
  }

  // Variables whose extents along `axis` add up to `t`'s (channels of an
  // input, input channels of a kernel): concatenations along it add up,
  // element-wise operators keep their first operand's.
  static bool channel_parts(const SExpr& t, std::vector<std::string>& parts, std::int64_t axis) {
    if (t.is_variable()) {
      parts.push_back(t.text);
      return true;
    }
    if (is_op(t, "concat") && t.items.size() == 5) {
      if (integer(t.items[1]) == axis)
        return channel_parts(t.items[3], parts, axis) && channel_parts(t.items[4], parts, axis);
      return channel_parts(t.items[3], parts, axis);
    }
    if (is_activation(t))
      return channel_parts(t.items[1], parts, axis);
    if (is_elementwise(t))
      return channel_parts(t.items[1], parts, axis);
    if (is_op(t, "enlarge") && t.items.size() == 3) return channel_parts(t.items[1], parts, axis);
    return false;
  }

  absl::StatusOr<std::string> concat(const SExpr& e, bool left) {
    std::optional<std::int64_t> axis = integer(e.items[1]), ndim = integer(e.items[2]);
    if (!axis || !ndim || *ndim < 1 || *ndim > 4 || *axis < 0 || *axis >= *ndim)
      return untranslatable("concat axis or rank is not a number in range");
    std::string out = fmt::format("(Concat{{axis={}}}", *axis);
    for (std::size_t i = 3; i < 5; ++i) {
      absl::StatusOr<std::string> part = term(e.items[i], left);
      if (!part.ok()) return part.status();
      if (e.items[i].is_variable()) require(fmt::format("(rank-{} {})", *ndim, *part));
      out += " " + *part;
    }
    return out + ")";
  }

  absl::StatusOr<std::string> split(const SExpr& e, bool left) {
    const SExpr& s = e.items[1];
    std::optional<std::int64_t> axis = s.items.size() == 3 ? integer(s.items[1]) : std::nullopt;
    if (!is_op(s, "split") || !axis)
      return untranslatable(fmt::format("{} of something other than (split AXIS t)", op_of(e)));
    absl::StatusOr<std::string> t = term(s.items[2], left);
    if (!t.ok()) return t.status();
    std::optional<std::string> sizes = split_sizes(s.items[2], *axis);
    if (!sizes) return untranslatable("cannot tell the split sizes from the split term");
    return fmt::format("(TupleGet{{index={}}} (Split{{axis={}, split=({})}} {}))",
                       op_of(e) == "split_0" ? 0 : 1, *axis, *sizes, *t);
  }

  // "FUNCTION ?a ?b": the extents along `axis` of the two parts that were
  // concatenated into `t` (TENSAT finds the split point by analysis).
  static std::optional<std::string> split_sizes(const SExpr& t, std::int64_t axis) {
    if (is_op(t, "concat") && t.items.size() == 5) {
      std::optional<std::int64_t> along = integer(t.items[1]), ndim = integer(t.items[2]);
      if (!along || !ndim) return std::nullopt;
      if (*along != axis) return split_sizes(t.items[3], axis);
      std::optional<std::string> a = extent_var(t.items[3], axis), b = extent_var(t.items[4], axis);
      const char* fn = axis == 0           ? "first-dims"
                       : axis == *ndim - 1 ? "last-dims"
                       : axis == 1         ? "channel-dims"
                                           : nullptr;
      if (fn == nullptr || !a || !b) return std::nullopt;
      return fmt::format("{} {} {}", fn, *a, *b);
    }
    if (is_activation(t))
      return split_sizes(t.items[1], axis);
    if (is_elementwise(t)) {
      std::optional<std::string> a = split_sizes(t.items[1], axis);
      return a ? a : split_sizes(t.items[2], axis);
    }
    if (is_op(t, "matmul") && t.items.size() == 4) {  // TASO's matrices: rank 2
      if (axis == 0) return split_sizes(t.items[2], 0);
      if (axis == 1) return split_sizes(t.items[3], 1);
      return std::nullopt;
    }
    if (is_op(t, "conv2d") && t.items.size() == 7) {
      if (axis == 0) return split_sizes(t.items[5], 0);
      // Output channels: the kernels' first axis.
      if (axis == 1) return split_sizes(t.items[6], 0);
    }
    return std::nullopt;
  }

  std::vector<std::string> conditions_;
  // A left kernel's variables (sorted) -> its convolution's group count.
  std::map<std::string, std::string> group_of_kernel_;
  std::set<std::string> bound_pads_;  // SAME padding variables the left side binds
  std::map<std::string, std::string> pads_of_kernel_;  // a left kernel's variables -> its padding
  bool ungrouped_left_ = false;
  bool left_convolution_ = false;  // the left side has a convolution (and a group count)
};

struct SourceRule {
  int line = 0;
  std::string text;
  SExpr left, right;
};

// The `LHS=>RHS` rules of a file, one per line (blank lines and comments
// skipped).
absl::StatusOr<std::vector<SourceRule>> read_rules(const TensatSource& source) {
  std::vector<std::string_view> lines;
  for (std::string_view rest = source.text; !rest.empty();) {
    const std::size_t end = rest.find('\n');
    lines.push_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  std::vector<SourceRule> rules;
  SExprReader reader(source.text, source.name);
  while (!reader.at_end()) {
    absl::StatusOr<SExpr> left = reader.read();
    if (!left.ok()) return left.status();
    if (!reader.accept("=>"))
      return reader.error(reader.location(),
                          fmt::format("expected '=>', found {}", reader.describe_next()));
    absl::StatusOr<SExpr> right = reader.read();
    if (!right.ok()) return right.status();
    const int line = left->loc.line;
    if (right->loc.line != line)
      return reader.error(right->loc, "a rule's two sides must be on one line");
    std::string_view text = lines[static_cast<std::size_t>(line - 1)];
    while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
    rules.push_back({line, std::string(text), *std::move(left), *std::move(right)});
  }
  return rules;
}

std::string stem(const std::string& name) { return std::filesystem::path(name).stem().string(); }

// The rule made of `parts` (one for a single-pattern rule, two for a
// multi-pattern one) in saturn's language.
absl::StatusOr<std::string> translate(const std::string& name,
                                      const std::vector<const SourceRule*>& parts,
                                      bool ungrouped_left, bool* left_convolution = nullptr) {
  RuleTranslator t(ungrouped_left);
  std::vector<std::string> lefts, rights;
  for (const SourceRule* p : parts) {
    absl::StatusOr<std::string> l = t.term(p->left, /*left=*/true);
    if (!l.ok()) return l.status();
    lefts.push_back(*std::move(l));
  }
  for (const SourceRule* p : parts) {
    absl::StatusOr<std::string> r = t.term(p->right, /*left=*/false);
    if (!r.ok()) return r.status();
    rights.push_back(*std::move(r));
  }
  if (left_convolution != nullptr) *left_convolution = t.has_left_convolution();
  return fmt::format("rule {}: {}\n  => {}{}\n", name, absl::StrJoin(lefts, ", "),
                     absl::StrJoin(rights, ", "), t.conditions());
}

void add_rule(const std::string& file, const std::vector<const SourceRule*>& parts,
              TensatImport& out) {
  ImportedRule r;
  r.name = fmt::format("tensat-{}-{}", stem(file), parts.front()->line);
  for (const SourceRule* p : parts)
    r.source += fmt::format("# {}:{}: {}\n", file, p->line, p->text);
  bool convolutions = false;
  absl::StatusOr<std::string> rule = translate(r.name, parts, false, &convolutions);
  if (rule.ok()) {
    r.rule = *std::move(rule);
    if (convolutions) r.ungrouped = translate(r.name, parts, true).value_or("");
    ++out.translated;
  } else {
    r.reason = std::string(rule.status().message());
    out.skipped.push_back(fmt::format("{}:{}: {}", file, parts.front()->line, r.reason));
  }
  out.rules.push_back(std::move(r));
}

}  // namespace

absl::StatusOr<TensatImport> import_tensat(const std::vector<TensatSource>& single,
                                           const std::vector<TensatSource>& multi) {
  TensatImport out;
  for (const auto* files : {&single, &multi})
    for (const TensatSource& s : *files) out.files.push_back(s.name);
  for (const TensatSource& s : single) {
    absl::StatusOr<std::vector<SourceRule>> rules = read_rules(s);
    if (!rules.ok()) return rules.status();
    for (const SourceRule& r : *rules) add_rule(s.name, {&r}, out);
  }
  for (const TensatSource& s : multi) {
    absl::StatusOr<std::vector<SourceRule>> rules = read_rules(s);
    if (!rules.ok()) return rules.status();
    if (rules->size() % 2 != 0)
      return absl::InvalidArgumentError(fmt::format(
          "{}: a multi-pattern file holds pairs of lines, one rule each; this one has {} rules",
          s.name, rules->size()));
    for (std::size_t i = 0; i < rules->size(); i += 2)
      add_rule(s.name, {&(*rules)[i], &(*rules)[i + 1]}, out);
  }
  return out;
}

std::string TensatImport::text() const {
  std::string text = fmt::format(
      "# Translated from TENSAT/TASO rule files ({}) by `saturn rules import --tensat`.\n"
      "# Each rule follows its source lines; rules not translated say why.\n"
      "group tensat\n",
      absl::StrJoin(files, ", "));
  for (const ImportedRule& r : rules) {
    text += "\n" + r.source;
    if (!r.reason.empty()) {
      text += fmt::format("# not translated: {}\n", r.reason);
      continue;
    }
    text += r.note;
    if (!r.commented_out) {
      text += r.rule;
      continue;
    }
    for (std::string_view rest = r.rule; !rest.empty();) {
      const std::size_t end = rest.find('\n');
      text += fmt::format("# {}\n", rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
  }
  return text;
}

}  // namespace saturn

#include "saturn/rules/math/math_language.h"

#include <cctype>
#include <charconv>

#include "saturn/base/embedded.h"
#include "saturn/egraph/egraph.h"
#include "saturn/egraph/term.h"
#include "fmt/format.h"
#include "saturn/rules/parser.h"

namespace saturn {

std::span<const EmbeddedFile> shipped_math_rules();  // generated (CMakeLists.txt)

namespace {

std::optional<double> parse_number(std::string_view token) {
  double v = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc() || p != token.data() + token.size()) return std::nullopt;
  return v;
}

bool is_word(std::string_view token) {
  if (token.empty() || !std::isalpha(static_cast<unsigned char>(token[0]))) return false;
  for (char c : token) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

const ConstantFolding& folding(const EGraph& egraph) {
  return static_cast<const ConstantFolding&>(*egraph.analysis());
}

bool has_symbol(const EGraph& egraph, Id id, Symbol sym) {
  for (const ENode& n : egraph.nodes(egraph.find(id))) {
    if (n.op == sym) return true;
  }
  return false;
}

}  // namespace

MathLanguage::MathLanguage() : Language("math") {
  num = add_operator("num", 0);
  sym = add_operator("sym", 0);
  add = add_operator("+", 2);
  sub = add_operator("-", 2);
  mul = add_operator("*", 2);
  div = add_operator("/", 2);
  pow = add_operator("pow", 2);
  ln = add_operator("ln", 1);
  sqrt = add_operator("sqrt", 1);
  sin = add_operator("sin", 1);
  cos = add_operator("cos", 1);
  d = add_operator("d", 2);
  i = add_operator("i", 2);
}

std::optional<Language::Leaf> MathLanguage::parse_leaf(std::string_view token) const {
  if (auto v = parse_number(token)) return Leaf{num, Attributes{{"value", *v}}};
  if (is_word(token) && !find(token)) return Leaf{sym, Attributes{{"name", std::string(token)}}};
  return std::nullopt;
}

std::string MathLanguage::node_label(Symbol op, const Attributes& attributes) const {
  if (op == num) {
    if (auto v = attributes.get_float("value")) return fmt::format("{}", *v);
  }
  if (op == sym) {
    if (const std::string* s = attributes.get_string("name")) return *s;
  }
  return Language::node_label(op, attributes);
}

std::optional<std::optional<double>> ConstantFolding::make_data(const EGraph& egraph,
                                                                const ENode& node) {
  if (node.op == lang_.num) return egraph.attrs().get(node.attrs).get_float("value");
  if (node.children.size() != 2) return std::optional<double>();
  const std::optional<double> a = data(egraph.find(node.children[0]));
  const std::optional<double> b = data(egraph.find(node.children[1]));
  if (!a || !b) return std::optional<double>();
  if (node.op == lang_.add) return std::optional<double>(*a + *b);
  if (node.op == lang_.sub) return std::optional<double>(*a - *b);
  if (node.op == lang_.mul) return std::optional<double>(*a * *b);
  if (node.op == lang_.div && *b != 0.0) return std::optional<double>(*a / *b);
  return std::optional<double>();
}

JoinResult ConstantFolding::join(std::optional<double>& into, const std::optional<double>& from) {
  if (into && from) {
    // Two constants in one class must agree (up to rounding); keep ours.
    return {false, false};
  }
  if (!into && from) {
    into = from;
    return {true, false};
  }
  return {false, into.has_value()};
}

void ConstantFolding::modify(EGraph& egraph, Id id) {
  const std::optional<double> c = data(egraph.find(id));
  if (!c) return;
  const AddResult num =
      egraph.add_into(ENode(lang_.num, egraph.attrs().intern(Attributes{{"value", *c}})), id);
  if (prune_ && num.ok()) egraph.keep_leaves(num.id);
}

ConditionRegistry math_conditions(const MathLanguage& lang) {
  ConditionRegistry conditions;
  conditions.add(
      "not-zero", 1,
      [](const EGraph& g, std::span<const Id> a) {
        std::optional<double> c = folding(g).constant(g.find(a[0]));
        return !c || *c != 0.0;
      },
      "the class is not known to be the constant 0 (as egg's is_not_zero)");
  conditions.add(
      "is-const", 1,
      [](const EGraph& g, std::span<const Id> a) {
        return folding(g).constant(g.find(a[0])).has_value();
      },
      "the class has a known constant value");
  conditions.add(
      "is-sym", 1,
      [&lang](const EGraph& g, std::span<const Id> a) { return has_symbol(g, a[0], lang.sym); },
      "the class holds a symbol");
  conditions.add(
      "is-const-or-distinct-var", 2,
      [&lang](const EGraph& g, std::span<const Id> a) {
        if (g.find(a[0]) == g.find(a[1])) return false;
        return folding(g).constant(g.find(a[0])).has_value() || has_symbol(g, a[0], lang.sym);
      },
      "the first class is a constant or a symbol other than the second");
  return conditions;
}

absl::Status add_egg_bench_terms(EGraph& egraph) {
  for (const char* term : kEggBenchTerms) {
    if (absl::StatusOr<Id> id = add_term(egraph, term); !id.ok()) return id.status();
  }
  egraph.rebuild();
  return absl::OkStatus();
}

absl::StatusOr<RuleSet> load_math_rules(const MathLanguage& language,
                                        const ConditionRegistry& conditions) {
  const EmbeddedFile& file = shipped_math_rules().front();
  return parse_rules(file.text, file.name, language, conditions);
}

}  // namespace saturn

#include "saturn/rules/parser.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "saturn/base/file.h"
#include "saturn/egraph/term.h"
#include "fmt/format.h"

namespace saturn {

namespace {

class RuleParser {
 public:
  RuleParser(std::string_view text, std::string_view file, const Language& language,
             const ConditionRegistry& conditions)
      : reader_(text, std::string(file)), language_(language), conditions_(conditions) {}

  absl::StatusOr<RuleSet> parse() {
    while (!reader_.at_end()) {
      const SourceLoc loc = reader_.location();
      if (reader_.accept("group")) {
        absl::StatusOr<std::string> name = read_name("a group name");
        if (!name.ok()) return name.status();
        group_ = *name;
      } else if (reader_.accept("rule")) {
        absl::Status s = parse_rule(loc);
        if (!s.ok()) return s;
      } else if (reader_.accept("define")) {
        absl::Status s = parse_definition();
        if (!s.ok()) return s;
      } else {
        return reader_.error(
            loc, fmt::format("expected 'rule', 'define' or 'group' but found {}", found()));
      }
    }
    return std::move(rules_);
  }

 private:
  std::string found() {
    std::string word = reader_.peek_word();
    return word.empty() ? reader_.describe_next() : fmt::format("'{}'", word);
  }

  absl::StatusOr<std::string> read_name(std::string_view what) {
    const SourceLoc loc = reader_.location();
    std::string word = reader_.peek_word();
    if (word.empty() || word == ":" || word == "," || word == "=>" || word == "<=>") {
      return reader_.error(loc, fmt::format("expected {} but found {}", what, found()));
    }
    reader_.accept(word);
    return word;
  }

  absl::Status expect(std::string_view word, std::string_view context) {
    const SourceLoc loc = reader_.location();
    if (reader_.accept(word)) return absl::OkStatus();
    return reader_.error(loc, fmt::format("expected '{}' {} but found {}", word, context, found()));
  }

  // A named pattern: `define (NAME ?p ...): pattern`. A call `(NAME a ...)`
  // in a later pattern of the file stands for the pattern with each
  // parameter replaced by its argument; the pattern names no variable but
  // its parameters, and may call earlier definitions.
  struct Definition {
    std::vector<std::string> parameters;
    SExpr body;
  };

  absl::Status parse_definition() {
    const SourceLoc loc = reader_.location();
    absl::StatusOr<SExpr> call = reader_.read();
    if (!call.ok()) return call.status();
    if (!call->is_list() || !call->items.front().is_atom() || call->items.front().is_variable() ||
        call->items.front().has_attrs)
      return reader_.error(loc, "expected a definition's name and parameters, such as (moved ?z)");
    const std::string& name = call->items.front().text;
    if (language_.find(name) || definitions_.contains(name))
      return reader_.error(loc, fmt::format("'{}' is already {}", name,
                                            definitions_.contains(name) ? "defined"
                                                                        : "an operator"));
    Definition d;
    for (std::size_t i = 1; i < call->items.size(); ++i) {
      const SExpr& p = call->items[i];
      if (!p.is_variable() || p.has_attrs)
        return reader_.error(p.loc, "a definition's parameters must be variables");
      if (std::find(d.parameters.begin(), d.parameters.end(), p.text) != d.parameters.end())
        return reader_.error(p.loc, fmt::format("parameter '{}' is named twice", p.text));
      d.parameters.push_back(p.text);
    }
    if (absl::Status s = expect(":", fmt::format("after definition '{}'", name)); !s.ok())
      return s;
    const SourceLoc body_loc = reader_.location();
    absl::StatusOr<SExpr> body = reader_.read();
    if (!body.ok()) return body.status();
    absl::StatusOr<SExpr> expanded = expand(*body);
    if (!expanded.ok()) return expanded.status();
    if (absl::Status s = only_parameters(*expanded, d.parameters, name); !s.ok()) return s;
    if (!expanded->is_list() && !expanded->is_atom())
      return reader_.error(body_loc, "expected a pattern");
    d.body = *std::move(expanded);
    definitions_.emplace(name, std::move(d));
    return absl::OkStatus();
  }

  absl::Status only_parameters(const SExpr& e, const std::vector<std::string>& parameters,
                               const std::string& name) {
    if (e.is_variable() &&
        std::find(parameters.begin(), parameters.end(), e.text) == parameters.end())
      return reader_.error(e.loc, fmt::format("variable '{}' is not a parameter of '{}'", e.text,
                                              name));
    for (const SExpr& item : e.items) {
      if (absl::Status s = only_parameters(item, parameters, name); !s.ok()) return s;
    }
    for (const SExprAttr& a : e.attrs) {
      if (absl::Status s = only_parameters(a.second, parameters, name); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // `e` with every call of a definition replaced by its pattern.
  absl::StatusOr<SExpr> expand(const SExpr& e) {
    SExpr out = e;
    out.items.clear();
    for (const SExpr& item : e.items) {
      absl::StatusOr<SExpr> x = expand(item);
      if (!x.ok()) return x.status();
      out.items.push_back(*std::move(x));
    }
    if (!out.is_list() || !out.items.front().is_atom()) return out;
    auto it = definitions_.find(out.items.front().text);
    if (it == definitions_.end()) return out;
    const Definition& d = it->second;
    if (out.items.front().has_attrs)
      return reader_.error(out.loc, fmt::format("'{}' is a definition and takes no attributes",
                                                out.items.front().text));
    if (out.items.size() - 1 != d.parameters.size())
      return reader_.error(out.loc, fmt::format("'{}' takes {} arguments but is given {}",
                                                out.items.front().text, d.parameters.size(),
                                                out.items.size() - 1));
    return substitute(d.body, d, out);
  }

  // `body` with each parameter of `d` replaced by `call`'s argument.
  absl::StatusOr<SExpr> substitute(const SExpr& body, const Definition& d, const SExpr& call) {
    if (body.is_variable()) {
      const auto k = std::find(d.parameters.begin(), d.parameters.end(), body.text) -
                     d.parameters.begin();
      return call.items[static_cast<std::size_t>(k) + 1];
    }
    SExpr out = body;
    for (SExpr& item : out.items) {
      absl::StatusOr<SExpr> x = substitute(item, d, call);
      if (!x.ok()) return x.status();
      item = *std::move(x);
    }
    for (SExprAttr& a : out.attrs) {
      absl::StatusOr<SExpr> x = substitute(a.second, d, call);
      if (!x.ok()) return x.status();
      if (!x->is_atom() && !a.second.is_atom())
        return reader_.error(call.loc, fmt::format("attribute '{}' needs a value or a variable",
                                                   a.first));
      a.second = *std::move(x);
    }
    return out;
  }

  // The index of variable `e`; `bind` says whether it may be new (left side).
  // A variable is either a class or an attribute value, never both.
  absl::StatusOr<int> variable(const SExpr& e, bool bind, bool attribute) {
    auto it = vars_.find(e.text);
    if (it == vars_.end()) {
      if (!bind) {
        return reader_.error(
            e.loc,
            fmt::format("variable '{}' on the right side is not bound by the left side", e.text));
      }
      it = vars_.emplace(e.text, static_cast<int>(var_names_.size())).first;
      var_names_.push_back(e.text);
      attr_vars_.push_back(attribute);
    }
    if (attr_vars_[it->second] != attribute) {
      return reader_.error(e.loc, fmt::format("variable '{}' stands for {} elsewhere", e.text,
                                              attribute ? "an e-class" : "an attribute value"));
    }
    return it->second;
  }

  // `key=(fn ?a ...)` on the right side: a registered function of bound variables.
  absl::StatusOr<AttrCall> attribute_call(const std::string& key, const SExpr& e, bool bind) {
    if (bind) return reader_.error(e.loc, "attribute functions are only allowed on the right side");
    const SExpr& head = e.items.front();
    const ConditionRegistry::Function* fn =
        head.is_atom() ? conditions_.find_function(head.text) : nullptr;
    if (fn == nullptr)
      return reader_.error(head.loc, fmt::format("unknown attribute function '{}'", head.text));
    const std::size_t given = e.items.size() - 1;
    if (fn->arity >= 0 && static_cast<std::size_t>(fn->arity) != given) {
      return reader_.error(head.loc,
                           fmt::format("attribute function '{}' takes {} arguments but is given {}",
                                       head.text, fn->arity, given));
    }
    AttrCall call{key, fn, {}};
    for (std::size_t i = 1; i < e.items.size(); ++i) {
      const SExpr& arg = e.items[i];
      if (!arg.is_variable())
        return reader_.error(arg.loc, "attribute function arguments must be variables");
      auto it = vars_.find(arg.text);
      if (it == vars_.end()) {
        return reader_.error(
            arg.loc,
            fmt::format("variable '{}' on the right side is not bound by the left side", arg.text));
      }
      call.args.push_back(it->second);
    }
    return call;
  }

  // Converts an S-expression to a pattern; `bind` says whether new variables
  // may appear (left side) or must already be bound (right side).
  absl::Status to_pattern(const SExpr& e, Pattern& out, bool bind) {
    if (e.is_variable()) {
      if (e.has_attrs) return reader_.error(e.loc, "a variable cannot have attributes");
      absl::StatusOr<int> var = variable(e, bind, /*attribute=*/false);
      if (!var.ok()) return var.status();
      out.nodes.push_back(PatternNode{*var, Symbol(), {}, {}, {}});
      return absl::OkStatus();
    }
    if (e.kind == SExpr::Kind::kString || e.kind == SExpr::Kind::kVector) {
      return reader_.error(e.loc, "expected a pattern");
    }
    const bool is_list = e.is_list();
    const SExpr& head = e.head();
    std::vector<AttrVariable> attr_vars;
    absl::StatusOr<ResolvedOp> op = resolve_operator(
        language_, head, is_list ? e.items.size() - 1 : 0, is_list, reader_, &attr_vars);
    if (!op.ok()) return op.status();
    PatternNode node{-1, op->op, std::move(op->attributes), {}, {}};
    for (const AttrVariable& a : attr_vars) {
      if (a.variable->is_list()) {
        absl::StatusOr<AttrCall> call = attribute_call(a.key, *a.variable, bind);
        if (!call.ok()) return call.status();
        node.attr_calls.push_back(*std::move(call));
        continue;
      }
      absl::StatusOr<int> var = variable(*a.variable, bind, /*attribute=*/true);
      if (!var.ok()) return var.status();
      node.attr_vars.push_back(AttrVar{a.key, *var});
    }
    for (std::size_t i = 1; is_list && i < e.items.size(); ++i) {
      absl::Status s = to_pattern(e.items[i], out, bind);
      if (!s.ok()) return s;
      node.children.push_back(static_cast<std::uint32_t>(out.nodes.size() - 1));
    }
    out.nodes.push_back(std::move(node));
    return absl::OkStatus();
  }

  // One side: patterns separated by commas, with their locations.
  absl::StatusOr<std::vector<std::pair<SExpr, SourceLoc>>> read_side() {
    std::vector<std::pair<SExpr, SourceLoc>> side;
    do {
      const SourceLoc loc = reader_.location();
      if (reader_.at_end() || reader_.peek_word() == "if" || reader_.peek_word() == "rule" ||
          reader_.peek_word() == "=>" || reader_.peek_word() == "<=>") {
        return reader_.error(loc, fmt::format("expected a pattern but found {}", found()));
      }
      absl::StatusOr<SExpr> e = reader_.read();
      if (!e.ok()) return e.status();
      side.emplace_back(*std::move(e), loc);
    } while (reader_.accept(","));
    return side;
  }

  absl::Status parse_rule(SourceLoc rule_loc) {
    const SourceLoc name_loc = reader_.location();
    absl::StatusOr<std::string> name = read_name("a rule name");
    if (!name.ok()) return name.status();
    if (absl::Status s = expect(":", fmt::format("after rule name '{}'", *name)); !s.ok()) return s;

    vars_.clear();
    var_names_.clear();
    attr_vars_.clear();
    auto lhs = read_side();
    if (!lhs.ok()) return lhs.status();
    const SourceLoc arrow_loc = reader_.location();
    bool both = false;
    if (reader_.accept("<=>")) {
      both = true;
    } else if (!reader_.accept("=>")) {
      return reader_.error(arrow_loc, fmt::format("expected '=>' or '<=>' but found {}", found()));
    }
    auto rhs = read_side();
    if (!rhs.ok()) return rhs.status();

    Rule rule;
    rule.name = *name;
    rule.group = group_;
    rule.file = reader_.source_name();
    rule.loc = rule_loc;
    for (auto* side : {&*lhs, &*rhs}) {
      for (auto& [e, loc] : *side) {
        absl::StatusOr<SExpr> expanded = expand(e);
        if (!expanded.ok()) return expanded.status();
        e = *std::move(expanded);
      }
    }
    for (auto& [e, loc] : *lhs) {
      Pattern p;
      if (absl::Status s = to_pattern(e, p, /*bind=*/true); !s.ok()) return s;
      rule.lhs.push_back(std::move(p));
    }
    const std::size_t lhs_vars = var_names_.size();
    if (both) {
      // Both sides bind: each must bind the same variables.
      for (auto& [e, loc] : *rhs) {
        Pattern p;
        if (absl::Status s = to_pattern(e, p, /*bind=*/true); !s.ok()) return s;
        rule.rhs.push_back(std::move(p));
      }
      if (var_names_.size() != lhs_vars) {
        return reader_.error(arrow_loc, fmt::format("'<=>' needs both sides to use the same "
                                                    "variables, but '{}' is only on the right",
                                                    var_names_[lhs_vars]));
      }
      for (std::size_t v = 0; v < lhs_vars; ++v) {
        bool on_right = std::any_of(rule.rhs.begin(), rule.rhs.end(), [&](const Pattern& p) {
          auto vars = p.variables();
          return std::find(vars.begin(), vars.end(), static_cast<int>(v)) != vars.end();
        });
        if (!on_right) {
          return reader_.error(arrow_loc, fmt::format("'<=>' needs both sides to use the same "
                                                      "variables, but '{}' is only on the left",
                                                      var_names_[v]));
        }
      }
    } else {
      for (auto& [e, loc] : *rhs) {
        Pattern p;
        if (absl::Status s = to_pattern(e, p, /*bind=*/false); !s.ok()) return s;
        rule.rhs.push_back(std::move(p));
      }
    }
    if (rule.lhs.size() != rule.rhs.size()) {
      return reader_.error(arrow_loc, fmt::format("rule '{}' has {} left-hand patterns but {} "
                                                  "right-hand results; each pattern needs one",
                                                  rule.name, rule.lhs.size(), rule.rhs.size()));
    }
    if (rule.is_multi()) {
      for (std::size_t i = 0; i < rule.lhs.size(); ++i) {
        if (rule.lhs[i].root().is_var()) {
          return reader_.error((*lhs)[i].second,
                               "a multi-pattern rule's patterns must each start with an operator");
        }
      }
    }
    if (absl::Status s = parse_conditions(rule); !s.ok()) return s;
    rule.var_names = var_names_;
    rule.attr_vars = attr_vars_;

    std::vector<Rule> made;
    if (both) {
      Rule reverse = rule;
      reverse.name = rule.name + "-rev";
      std::swap(reverse.lhs, reverse.rhs);
      if (reverse.is_multi() && std::any_of(reverse.lhs.begin(), reverse.lhs.end(),
                                            [](const Pattern& p) { return p.root().is_var(); })) {
        return reader_.error(arrow_loc,
                             "a multi-pattern rule's patterns must each start with an operator");
      }
      made.push_back(std::move(rule));
      made.push_back(std::move(reverse));
    } else {
      made.push_back(std::move(rule));
    }
    for (Rule& r : made) {
      find_interchangeable_patterns(r);
      auto [it, inserted] = defined_at_.try_emplace(r.name, r.loc);
      if (!inserted) {
        return reader_.error(name_loc, fmt::format("duplicate rule name '{}' (first defined at "
                                                   "{}:{})",
                                                   r.name, it->second.line, it->second.column));
      }
      rules_.add(std::move(r));
    }
    return absl::OkStatus();
  }

  absl::Status parse_conditions(Rule& rule) {
    if (!reader_.accept("if")) return absl::OkStatus();
    do {
      const SourceLoc loc = reader_.location();
      absl::StatusOr<SExpr> e = reader_.read();
      if (!e.ok()) return e.status();
      if (!e->is_list() || !e->items.front().is_atom()) {
        return reader_.error(loc, "expected a condition such as (is-nonzero ?a)");
      }
      const SExpr& head = e->items.front();
      const ConditionRegistry::Entry* predicate = conditions_.find(head.text);
      if (predicate == nullptr) {
        return reader_.error(head.loc, fmt::format("unknown condition '{}'", head.text));
      }
      const std::size_t given = e->items.size() - 1;
      if (predicate->arity >= 0 && static_cast<std::size_t>(predicate->arity) != given) {
        return reader_.error(head.loc, fmt::format("condition '{}' takes {} arguments but is "
                                                   "given {}",
                                                   head.text, predicate->arity, given));
      }
      RuleCondition cond{predicate, {}};
      for (std::size_t i = 1; i < e->items.size(); ++i) {
        const SExpr& arg = e->items[i];
        auto it = arg.is_variable() ? vars_.find(arg.text) : vars_.end();
        if (!arg.is_variable()) {
          return reader_.error(arg.loc, "condition arguments must be variables");
        }
        if (it == vars_.end()) {
          return reader_.error(arg.loc, fmt::format("variable '{}' in the condition is not bound "
                                                    "by the left side",
                                                    arg.text));
        }
        cond.args.push_back(it->second);
      }
      rule.conditions.push_back(std::move(cond));
    } while (!reader_.at_end() && reader_.peek_word().empty());
    return absl::OkStatus();
  }

  SExprReader reader_;
  const Language& language_;
  const ConditionRegistry& conditions_;
  RuleSet rules_;
  std::string group_;
  absl::flat_hash_map<std::string, int> vars_;
  std::vector<std::string> var_names_;
  std::vector<bool> attr_vars_;
  absl::flat_hash_map<std::string, SourceLoc> defined_at_;
  absl::flat_hash_map<std::string, Definition> definitions_;
};

}  // namespace

absl::StatusOr<RuleSet> parse_rules(std::string_view text, std::string_view file,
                                    const Language& language, const ConditionRegistry& conditions) {
  return RuleParser(text, file, language, conditions).parse();
}

absl::StatusOr<RuleSet> load_rules(const std::string& path, const Language& language,
                                   const ConditionRegistry& conditions) {
  absl::StatusOr<std::string> text = read_text_file(path);
  if (!text.ok()) return text.status();
  return parse_rules(*text, path, language, conditions);
}

}  // namespace saturn

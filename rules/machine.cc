#include "rules/machine.h"

#include <algorithm>

namespace saturn {

namespace {

// An attribute variable at a bind: read `key` of the matched node, then
// store it in register `reg` (the first use) or compare it with `reg`.
struct AttrStep {
  std::string key;
  std::uint32_t reg;
  bool binds;
};

struct Instruction {
  enum class Kind : std::uint8_t { kBind, kCompare };
  Kind kind;
  std::uint32_t reg;    // the class to look in (bind) or the first class (compare)
  std::uint32_t other;  // bind: first output register; compare: second class
  Symbol op;
  AttrId attrs;
  std::uint32_t arity;
  // Bind with attribute variables: the pattern node (its literal attributes
  // are compared one by one) and its steps [first_step, last_step).
  const PatternNode* partial = nullptr;
  std::uint32_t first_step = 0, last_step = 0;
};

struct Program {
  std::vector<Instruction> code;
  std::vector<AttrStep> steps;
  std::vector<std::uint32_t> var_reg;  // register of each variable, or kNone
  std::uint32_t num_regs = 1;
  static constexpr std::uint32_t kNone = 0xffffffff;
};

// Compiles depth-first from the root; false if the pattern cannot match
// (it names attributes no node in this e-graph has).
bool compile(const EGraph& egraph, const Pattern& pattern, std::size_t num_vars, Program& prog) {
  prog.var_reg.assign(num_vars, Program::kNone);
  struct Item {
    std::uint32_t node, reg;
  };
  std::vector<Item> stack{{static_cast<std::uint32_t>(pattern.nodes.size() - 1), 0}};
  while (!stack.empty()) {
    Item it = stack.back();
    stack.pop_back();
    const PatternNode& n = pattern.nodes[it.node];
    if (n.is_var()) {
      std::uint32_t& r = prog.var_reg[n.var];
      if (r == Program::kNone) {
        r = it.reg;
      } else {
        prog.code.push_back({Instruction::Kind::kCompare, it.reg, r, Symbol(), AttrId(), 0});
      }
      continue;
    }
    const std::uint32_t out = prog.num_regs;
    prog.num_regs += n.children.size();
    Instruction bind{Instruction::Kind::kBind,
                     it.reg,
                     out,
                     n.op,
                     kNoAttributes,
                     static_cast<std::uint32_t>(n.children.size())};
    if (n.attr_vars.empty()) {
      std::optional<AttrId> attrs = egraph.attrs().find(n.attributes);
      if (!attrs) return false;
      bind.attrs = *attrs;
    } else {
      bind.partial = &n;
      bind.first_step = static_cast<std::uint32_t>(prog.steps.size());
      for (const AttrVar& a : n.attr_vars) {
        std::uint32_t& r = prog.var_reg[a.var];
        const bool binds = r == Program::kNone;
        if (binds) r = prog.num_regs++;
        prog.steps.push_back(AttrStep{a.key, r, binds});
      }
      bind.last_step = static_cast<std::uint32_t>(prog.steps.size());
    }
    prog.code.push_back(bind);
    for (std::size_t k = n.children.size(); k-- > 0;) {
      stack.push_back({n.children[k], out + static_cast<std::uint32_t>(k)});
    }
  }
  return true;
}

class Machine {
 public:
  Machine(const EGraph& egraph, const Program& prog, PatternMatches& out, std::size_t limit)
      : egraph_(egraph), prog_(prog), out_(out), limit_(limit), regs_(prog.num_regs) {}

  void run_at(Id root) {
    regs_[0] = root;
    run(0);
  }
  bool full() const { return out_.size() >= limit_; }

 private:
  void run(std::size_t pc) {
    if (full()) return;
    if (pc == prog_.code.size()) {
      out_.roots.push_back(regs_[0]);
      for (std::uint32_t r : prog_.var_reg)
        out_.substs.push_back(r == Program::kNone ? Id() : regs_[r]);
      return;
    }
    const Instruction& in = prog_.code[pc];
    if (in.kind == Instruction::Kind::kCompare) {
      if (regs_[in.reg] == regs_[in.other]) run(pc + 1);
      return;
    }
    std::span<const ENode> nodes = egraph_.nodes(regs_[in.reg]);
    // Nodes are sorted by operator: jump to this operator's run (by a scan
    // in the usual small class, where it beats a binary search's branches).
    auto before_op = [&](const ENode& n) { return n.op < in.op; };
    auto first = nodes.size() <= 8 ? std::find_if_not(nodes.begin(), nodes.end(), before_op)
                                   : std::partition_point(nodes.begin(), nodes.end(), before_op);
    for (auto it = first; it != nodes.end() && it->op == in.op; ++it) {
      if (it->children.size() != in.arity) continue;
      if (in.partial == nullptr ? it->attrs != in.attrs : !match_attributes(in, *it)) continue;
      std::copy(it->children.begin(), it->children.end(), regs_.begin() + in.other);
      run(pc + 1);
      if (full()) return;
    }
  }

  // Literal attributes equal, the node has no others, and the variable ones
  // bind or agree.
  bool match_attributes(const Instruction& in, const ENode& node) {
    const Attributes& have = egraph_.attrs().get(node.attrs);
    const Attributes& want = in.partial->attributes;
    if (have.entries().size() != want.entries().size() + in.partial->attr_vars.size()) return false;
    for (const Attribute& a : want.entries()) {
      const AttrValue* v = have.find(a.key);
      if (v == nullptr || !(*v == a.value)) return false;
    }
    for (std::uint32_t s = in.first_step; s < in.last_step; ++s) {
      const AttrStep& step = prog_.steps[s];
      const AttrValue* v = have.find(step.key);
      if (v == nullptr) return false;
      const Id handle(egraph_.intern_value(*v).value);
      if (step.binds) {
        regs_[step.reg] = handle;
      } else if (regs_[step.reg] != handle) {
        return false;
      }
    }
    return true;
  }

  const EGraph& egraph_;
  const Program& prog_;
  PatternMatches& out_;
  std::size_t limit_;
  std::vector<Id> regs_;
};

}  // namespace

void search_pattern(const EGraph& egraph, const Pattern& pattern, std::size_t num_vars,
                    PatternMatches& out, std::size_t limit) {
  out.num_vars = num_vars;
  Program prog;
  if (!compile(egraph, pattern, num_vars, prog)) return;
  Machine machine(egraph, prog, out, limit);
  if (pattern.root().is_var()) {
    for (Id id : egraph.class_ids()) {
      machine.run_at(id);
      if (machine.full()) return;
    }
    return;
  }
  // The candidates are scattered over the class table: fetching a few ahead
  // hides most of the wait for each class record.
  constexpr std::size_t kAhead = 4;
  std::span<const Id> roots = egraph.classes_with_op(pattern.root().op);
  for (std::size_t i = 0; i < roots.size(); ++i) {
    if (i + kAhead < roots.size()) __builtin_prefetch(&egraph.eclass(roots[i + kAhead]));
    machine.run_at(roots[i]);
    if (machine.full()) return;
  }
}

}  // namespace saturn

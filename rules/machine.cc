#include "saturn/rules/machine.h"

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
  // kLookup checks a register against the one class that holds a ground
  // subterm (`0` in `(+ ?a 0)`): a comparison instead of a search through
  // what is often the e-graph's largest class.
  enum class Kind : std::uint8_t { kBind, kCompare, kLookup };
  Kind kind;
  std::uint32_t reg;    // the class to look in (bind) or the first class (compare, lookup)
  std::uint32_t other;  // bind: first output register; compare: second class; lookup: class id
  Symbol op;
  AttrId attrs;
  std::uint32_t arity;
  // Bind with attribute variables: the pattern node (its literal attributes
  // are compared one by one) and its steps [first_step, last_step).
  const PatternNode* partial = nullptr;
  std::uint32_t first_step = 0, last_step = 0;
  // Bind whose first child is known before it runs (a variable bound
  // earlier, or a ground subterm): the register holding that class. Nodes
  // are sorted by head, then children, so the bind jumps straight to the
  // nodes with that first child: `factor`'s (* ?a ?c) then visits the
  // products of ?a, not every product in the class.
  std::uint32_t first_child = kNoRegister;
  static constexpr std::uint32_t kNoRegister = 0xffffffff;
};

struct Program {
  std::vector<Instruction> code;
  std::vector<AttrStep> steps;
  std::vector<std::uint32_t> var_reg;  // register of each variable, or kNone
  // Registers that hold a ground subterm's class from the start.
  std::vector<std::pair<std::uint32_t, Id>> constants;
  std::uint32_t num_regs = 1;
  static constexpr std::uint32_t kNone = 0xffffffff;
};

// The class of each ground pattern node (one without variables), found in
// the hash-cons; invalid for the other nodes. False if a ground node is not
// in the e-graph: the pattern cannot match then.
bool find_ground(const EGraph& egraph, const Pattern& pattern, std::vector<Id>& ground) {
  ground.assign(pattern.nodes.size(), Id());
  for (std::size_t i = 0; i < pattern.nodes.size(); ++i) {
    const PatternNode& n = pattern.nodes[i];
    if (n.is_var() || !n.attr_vars.empty() ||
        !std::all_of(n.children.begin(), n.children.end(),
                     [&](std::uint32_t c) { return ground[c].valid(); })) {
      continue;
    }
    std::optional<AttrId> attrs = egraph.attrs().find(n.attributes);
    if (!attrs) return false;
    ENode node(n.op, *attrs);
    for (std::uint32_t c : n.children) node.children.push_back(ground[c]);
    std::optional<Id> id = egraph.lookup(std::move(node));
    if (!id) return false;
    ground[i] = *id;
  }
  return true;
}

// Compiles depth-first from the root; false if the pattern cannot match
// (it names attributes or ground terms this e-graph does not have).
bool compile(const EGraph& egraph, const Pattern& pattern, std::size_t num_vars, Program& prog) {
  prog.var_reg.assign(num_vars, Program::kNone);
  std::vector<Id> ground;
  if (!find_ground(egraph, pattern, ground)) return false;
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
    // The root stays a bind: its candidates come from the operator index.
    if (ground[it.node].valid() && it.reg != 0) {
      prog.code.push_back(
          {Instruction::Kind::kLookup, it.reg, ground[it.node].value, Symbol(), AttrId(), 0});
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
    if (!n.children.empty()) {
      const std::uint32_t c = n.children.front();
      const PatternNode& first = pattern.nodes[c];
      if (first.is_var() && prog.var_reg[first.var] != Program::kNone) {
        bind.first_child = prog.var_reg[first.var];
      } else if (ground[c].valid()) {
        bind.first_child = prog.num_regs++;
        prog.constants.emplace_back(bind.first_child, ground[c]);
      }
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
      : egraph_(egraph), prog_(prog), out_(out), limit_(limit), regs_(prog.num_regs + 1) {
    // A variable no pattern binds reads the spare last register, which
    // stays invalid.
    gather_.reserve(prog.var_reg.size());
    for (std::uint32_t r : prog.var_reg) gather_.push_back(r == Program::kNone ? prog.num_regs : r);
    for (auto [r, id] : prog.constants) regs_[r] = id;
  }

  void run_at(Id root) {
    regs_[0] = root;
    run(0);
  }
  bool full() const { return out_.size() >= limit_; }

 private:
  void run(std::size_t pc) {
    const std::size_t size = prog_.code.size();
    // Compares and lookups need no search: check them in a row.
    for (; pc < size && prog_.code[pc].kind != Instruction::Kind::kBind; ++pc) {
      const Instruction& check = prog_.code[pc];
      const Id want =
          check.kind == Instruction::Kind::kCompare ? regs_[check.other] : Id(check.other);
      if (regs_[check.reg] != want) return;
    }
    if (pc == size) {
      out_.roots.push_back(regs_[0]);
      const std::size_t at = out_.substs.size();
      out_.substs.resize(at + gather_.size());
      Id* subst = out_.substs.data() + at;
      for (std::uint32_t r : gather_) *subst++ = regs_[r];
      return;
    }
    const Instruction& in = prog_.code[pc];
    if (!egraph_.may_have_op(regs_[in.reg], in.op)) return;
    std::span<const ENode> nodes = egraph_.nodes(regs_[in.reg]);
    if (in.partial != nullptr) {
      bind_with_attribute_variables(in, nodes, pc);
      return;
    }
    // Nodes are sorted by operator and attributes, then children: jump to
    // the run that has both, and the wanted first child if it is known (by a
    // scan in the usual small class, where it beats a binary search's
    // branches).
    const std::uint64_t head = (std::uint64_t{in.op.value} << 32) | in.attrs.value;
    if (in.first_child == Instruction::kNoRegister) {
      for (auto it = first_at_least(nodes, [head](const ENode& n) { return n.head() < head; });
           it != nodes.end() && it->head() == head; ++it) {
        if (!bind_node(in, *it, pc)) return;
      }
      return;
    }
    const Id first = regs_[in.first_child];
    auto before = [head, first](const ENode& n) {
      return n.head() < head || (n.head() == head && (n.children.empty() || n.children[0] < first));
    };
    for (auto it = first_at_least(nodes, before); it != nodes.end() && it->head() == head &&
                                                  !it->children.empty() && it->children[0] == first;
         ++it) {
      if (!bind_node(in, *it, pc)) return;
    }
  }

  // Binds `node`'s children and runs the rest of the program; false once
  // the matches are complete.
  bool bind_node(const Instruction& in, const ENode& node, std::size_t pc) {
    if (node.children.size() != in.arity) return true;
    std::copy_n(node.children.data(), in.arity, regs_.begin() + in.other);
    run(pc + 1);
    return !full();
  }

  void bind_with_attribute_variables(const Instruction& in, std::span<const ENode> nodes,
                                     std::size_t pc) {
    for (auto it = first_at_least(nodes, [&](const ENode& n) { return n.op < in.op; });
         it != nodes.end() && it->op == in.op; ++it) {
      if (match_attributes(in, *it) && !bind_node(in, *it, pc)) return;
    }
  }

  template <typename Before>
  static std::span<const ENode>::iterator first_at_least(std::span<const ENode> nodes,
                                                         Before before) {
    return nodes.size() <= 8 ? std::find_if_not(nodes.begin(), nodes.end(), before)
                             : std::partition_point(nodes.begin(), nodes.end(), before);
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
  std::vector<std::uint32_t> gather_;  // the register of each variable
};

}  // namespace

void search_pattern(const EGraph& egraph, const Pattern& pattern, std::size_t num_vars,
                    PatternMatches& out, std::size_t limit) {
  out.num_vars = num_vars;
  if (out.size() >= limit) return;
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

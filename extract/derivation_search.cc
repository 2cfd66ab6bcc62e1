#include "saturn/extract/derivation_search.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <utility>

#include "saturn/base/graph.h"
#include "saturn/base/stopwatch.h"

namespace saturn {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

// The search's view of the problem: the usable nodes ("items") of the
// non-free classes the roots reach, with their non-free child classes.
// Classes are numbered locally.
struct Items {
  std::vector<std::uint32_t> node;                   // per item: its problem node
  std::vector<std::uint32_t> cls;                    // per item: its local class
  std::vector<std::vector<std::uint32_t>> kids;      // per item: local child classes, distinct
  std::vector<std::uint32_t> problem_class;          // per local class: the problem's class
  std::vector<std::vector<std::uint32_t>> of_class;  // per local class: its items
  std::vector<std::uint32_t> roots;                  // local root classes

  Items(const ExtractionProblem& p, std::span<const std::int32_t> free,
        const std::vector<bool>& usable) {
    std::vector<std::uint32_t> local(p.num_classes(), kNone);
    auto visit = [&](std::uint32_t c) {
      if (local[c] == kNone) {
        local[c] = static_cast<std::uint32_t>(problem_class.size());
        problem_class.push_back(c);
        of_class.emplace_back();
      }
      return local[c];
    };
    for (std::uint32_t r : p.roots) {
      if (free[r] < 0) roots.push_back(visit(r));
    }
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    for (std::uint32_t c = 0; c < problem_class.size(); ++c) {  // grows while it runs
      const std::uint32_t pc = problem_class[c];
      for (std::uint32_t n = p.class_start[pc]; n < p.class_start[pc + 1]; ++n) {
        if (!usable[n]) continue;
        std::vector<std::uint32_t> k = needed_children(p, n, free);
        if (std::binary_search(k.begin(), k.end(), pc)) continue;  // its own child
        for (std::uint32_t& child : k) child = visit(child);
        of_class[c].push_back(static_cast<std::uint32_t>(node.size()));
        node.push_back(n);
        cls.push_back(c);
        kids.push_back(std::move(k));
      }
    }
  }
  std::uint32_t num_classes() const { return static_cast<std::uint32_t>(problem_class.size()); }
};

// The dominator tree of the class graph from a virtual root (number
// num_classes) above the roots (graph::immediate_dominators, after Cooper,
// Harvey and Kennedy), with each class's preorder number and subtree size in
// that tree.
struct Dominators {
  std::vector<std::uint32_t> idom;  // graph::kNoVertex for the virtual root
  std::vector<std::vector<std::uint32_t>> children;
  std::vector<std::uint32_t> pre, size;

  explicit Dominators(const graph::Successors& succ) {
    const std::uint32_t n = static_cast<std::uint32_t>(succ.size());
    const std::uint32_t top = n - 1;
    idom = graph::immediate_dominators(succ, top);
    children.resize(n);
    for (std::uint32_t v = 0; v < n; ++v) {
      if (v != top && idom[v] != graph::kNoVertex) children[idom[v]].push_back(v);
    }
    pre.assign(n, kNone);
    size.assign(n, 1);
    std::vector<std::uint32_t> walk{top}, by_pre;
    while (!walk.empty()) {
      const std::uint32_t v = walk.back();
      walk.pop_back();
      pre[v] = static_cast<std::uint32_t>(by_pre.size());
      by_pre.push_back(v);
      for (std::uint32_t w : children[v]) walk.push_back(w);
    }
    for (auto v = by_pre.rbegin(); v != by_pre.rend(); ++v) {
      if (*v != top) size[idom[*v]] += size[*v];
    }
  }
};

// One part of the problem: its own classes, the separators below it (as
// leaves of known cost) and the classes it must derive.
struct Part {
  std::vector<std::uint32_t> own;     // local classes decided in this part
  std::vector<std::uint32_t> leaves;  // separators below, derived by their own parts
  std::vector<std::uint32_t> goal;    // classes the part derives
};

// A set of derived classes per state, in one flat array, with a hash table
// to find a state again.
class StateTable {
 public:
  explicit StateTable(std::size_t words) : words_(words), slots_(1024, 0) {}
  std::size_t size() const { return cost_.size(); }
  const std::uint64_t* bits(std::uint32_t s) const { return bits_.data() + s * words_; }
  double& cost(std::uint32_t s) { return cost_[s]; }
  std::uint32_t& parent(std::uint32_t s) { return parent_[s]; }
  std::uint32_t& step(std::uint32_t s) { return step_[s]; }

  // The state with these bits, added (with infinite cost) if new.
  std::uint32_t find_or_add(const std::uint64_t* bits) {
    if (2 * (size() + 1) > slots_.size()) grow();
    std::size_t slot = hash(bits) & (slots_.size() - 1);
    while (slots_[slot] != 0) {
      const std::uint32_t s = slots_[slot] - 1;
      if (std::equal(bits, bits + words_, this->bits(s))) return s;
      slot = (slot + 1) & (slots_.size() - 1);
    }
    const auto s = static_cast<std::uint32_t>(size());
    slots_[slot] = s + 1;
    bits_.insert(bits_.end(), bits, bits + words_);
    cost_.push_back(std::numeric_limits<double>::infinity());
    parent_.push_back(kNone);
    step_.push_back(kNone);
    return s;
  }

 private:
  std::size_t hash(const std::uint64_t* bits) const {
    std::uint64_t h = 0x9E3779B97F4A7C15ull;
    for (std::size_t i = 0; i < words_; ++i) {
      h ^= bits[i] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
      h *= 0xBF58476D1CE4E5B9ull;
    }
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
  void grow() {
    std::vector<std::uint32_t> wider(slots_.size() * 2, 0);
    slots_.swap(wider);
    for (std::uint32_t s = 0; s < size(); ++s) {
      std::size_t slot = hash(this->bits(s)) & (slots_.size() - 1);
      while (slots_[slot] != 0) slot = (slot + 1) & (slots_.size() - 1);
      slots_[slot] = s + 1;
    }
  }

  std::size_t words_;
  std::vector<std::uint64_t> bits_;
  std::vector<double> cost_;
  std::vector<std::uint32_t> parent_, step_;
  std::vector<std::uint32_t> slots_;  // state + 1, or 0 when empty
};

// A part as the search sees it: its classes in slots 0..n-1 and the steps
// that derive them (an item, or a separator leaf at its part's cost).
struct PartProblem {
  struct Step {
    std::uint32_t slot;
    std::uint32_t item;               // kNone for a separator leaf
    double cost;                      // as the search counts it (ignored costs are 0)
    std::vector<std::uint32_t> kids;  // slots
  };
  std::vector<std::uint32_t> classes;  // per slot: the local class
  std::vector<Step> steps;
  std::vector<std::uint32_t> initial;                    // free steps without children
  std::vector<std::uint32_t> paid;                       // steps that cost something
  std::vector<std::vector<std::uint32_t>> free_readers;  // per slot: free steps reading it
  std::vector<std::uint32_t> goal;                       // slots to derive

  // `slot_of` is scratch indexed by local class, all kNone on entry and on
  // return.
  PartProblem(const ExtractionProblem& p, const Items& items, const Part& part,
              const std::vector<double>& leaf_cost, double ignore_below,
              std::vector<std::uint32_t>& slot_of) {
    for (const auto* list : {&part.own, &part.leaves}) {
      for (std::uint32_t c : *list) {
        slot_of[c] = static_cast<std::uint32_t>(classes.size());
        classes.push_back(c);
      }
    }
    free_readers.resize(classes.size());
    auto add = [&](Step s) {
      const auto index = static_cast<std::uint32_t>(steps.size());
      if (s.cost >= ignore_below && s.cost > 0) {
        paid.push_back(index);
      } else {
        s.cost = 0;
        if (s.kids.empty()) initial.push_back(index);
        for (std::uint32_t k : s.kids) free_readers[k].push_back(index);
      }
      steps.push_back(std::move(s));
    };
    for (std::uint32_t c : part.own) {
      for (std::uint32_t item : items.of_class[c]) {
        Step s{slot_of[c], item, p.node_cost[items.node[item]], {}};
        for (std::uint32_t k : items.kids[item]) {
          assert(slot_of[k] != kNone);  // a separator's subtree is entered only through it
          s.kids.push_back(slot_of[k]);
        }
        add(std::move(s));
      }
    }
    for (std::uint32_t c : part.leaves) {
      if (leaf_cost[c] < std::numeric_limits<double>::infinity())  // else underivable
        add(Step{slot_of[c], kNone, leaf_cost[c], {}});
    }
    for (std::uint32_t c : part.goal) goal.push_back(slot_of[c]);
    for (std::uint32_t c : classes) slot_of[c] = kNone;
  }
};

// Bits of a state.
bool has(const std::uint64_t* bits, std::uint32_t slot) {
  return (bits[slot / 64] >> (slot % 64)) & 1u;
}
void set(std::uint64_t* bits, std::uint32_t slot) {
  bits[slot / 64] |= std::uint64_t{1} << (slot % 64);
}

// Derives `slot` by step `by` and then everything free steps derive from
// there; `derived_by` (if given) records the step of each class derived.
void derive(const PartProblem& part, std::uint64_t* bits, std::uint32_t slot, std::uint32_t by,
            std::vector<std::uint32_t>& queue, std::vector<std::uint32_t>* derived_by) {
  if (has(bits, slot)) return;
  set(bits, slot);
  if (derived_by) (*derived_by)[slot] = by;
  queue.assign(1, slot);
  while (!queue.empty()) {
    const std::uint32_t c = queue.back();
    queue.pop_back();
    for (std::uint32_t r : part.free_readers[c]) {
      const PartProblem::Step& s = part.steps[r];
      if (has(bits, s.slot)) continue;
      if (!std::all_of(s.kids.begin(), s.kids.end(), [&](std::uint32_t k) { return has(bits, k); }))
        continue;
      set(bits, s.slot);
      if (derived_by) (*derived_by)[s.slot] = r;
      queue.push_back(s.slot);
    }
  }
}

struct PartResult {
  double cost = 0;
  std::vector<std::uint32_t> derived_by;  // per slot: the step that derives it, or kNone
  std::size_t states = 0;
};

// The cheapest set of paid steps that derives the goal, or nothing when the
// clock passes `deadline` seconds or the states pass `max_states`.
std::optional<PartResult> search_part(const PartProblem& part, const Stopwatch& clock,
                                      double deadline, std::size_t max_states) {
  const std::size_t words = (part.classes.size() + 63) / 64;
  StateTable table(words);
  std::vector<std::uint64_t> bits(words, 0), next(words);
  std::vector<std::uint32_t> queue;
  for (std::uint32_t s : part.initial)
    derive(part, bits.data(), part.steps[s].slot, s, queue, nullptr);
  const std::uint32_t start = table.find_or_add(bits.data());
  table.cost(start) = 0;
  using Entry = std::pair<double, std::uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> open;
  open.push({0.0, start});
  std::size_t expanded = 0;
  while (!open.empty()) {
    const auto [cost, state] = open.top();
    open.pop();
    if (cost > table.cost(state)) continue;  // reached more cheaply since
    std::copy_n(table.bits(state), words, bits.begin());
    if (std::all_of(part.goal.begin(), part.goal.end(),
                    [&](std::uint32_t g) { return has(bits.data(), g); })) {
      // Replay the paid steps from the start, recording who derives what.
      std::vector<std::uint32_t> path;
      for (std::uint32_t s = state; s != start; s = table.parent(s)) path.push_back(table.step(s));
      PartResult result{cost, std::vector<std::uint32_t>(part.classes.size(), kNone), table.size()};
      std::fill(next.begin(), next.end(), 0);
      for (std::uint32_t s : part.initial)
        derive(part, next.data(), part.steps[s].slot, s, queue, &result.derived_by);
      for (auto s = path.rbegin(); s != path.rend(); ++s)
        derive(part, next.data(), part.steps[*s].slot, *s, queue, &result.derived_by);
      return result;
    }
    if (++expanded % 256 == 0 && clock.seconds() > deadline) return std::nullopt;
    if (table.size() > max_states) return std::nullopt;
    for (std::uint32_t s : part.paid) {
      const PartProblem::Step& step = part.steps[s];
      if (has(bits.data(), step.slot) ||
          !std::all_of(step.kids.begin(), step.kids.end(),
                       [&](std::uint32_t k) { return has(bits.data(), k); }))
        continue;
      std::copy(bits.begin(), bits.end(), next.begin());
      derive(part, next.data(), step.slot, s, queue, nullptr);
      const std::uint32_t to = table.find_or_add(next.data());
      if (cost + step.cost < table.cost(to)) {
        table.cost(to) = cost + step.cost;
        table.parent(to) = state;
        table.step(to) = s;
        open.push({cost + step.cost, to});
      }
    }
  }
  return PartResult{std::numeric_limits<double>::infinity(), {}, table.size()};  // underivable
}

// Splits the classes into parts at the separators, lowest parts first.
std::vector<Part> split_into_parts(const Items& items) {
  const std::uint32_t n = items.num_classes();
  graph::Successors succ(n + 1);
  for (std::uint32_t i = 0; i < items.cls.size(); ++i) {
    for (std::uint32_t k : items.kids[i]) succ[items.cls[i]].push_back(k);
  }
  for (auto& s : succ) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  succ[n] = items.roots;
  const Dominators dom(succ);
  // A class is a separator when no edge leaves its dominator subtree: the
  // subtree then holds every class it reaches, and nothing outside enters
  // the subtree except through the class itself.
  std::vector<std::uint32_t> lo(n + 1), hi(n + 1), by_pre(n + 1);
  for (std::uint32_t v = 0; v <= n; ++v) {
    by_pre[dom.pre[v]] = v;
    lo[v] = hi[v] = dom.pre[v];
    for (std::uint32_t w : succ[v]) {
      lo[v] = std::min(lo[v], dom.pre[w]);
      hi[v] = std::max(hi[v], dom.pre[w]);
    }
  }
  for (std::uint32_t i = n; i > 0; --i) {
    const std::uint32_t v = by_pre[i];
    lo[dom.idom[v]] = std::min(lo[dom.idom[v]], lo[v]);
    hi[dom.idom[v]] = std::max(hi[dom.idom[v]], hi[v]);
  }
  std::vector<bool> separator(n + 1);
  for (std::uint32_t v = 0; v <= n; ++v)
    separator[v] = lo[v] >= dom.pre[v] && hi[v] < dom.pre[v] + dom.size[v];
  separator[n] = true;
  std::vector<Part> parts;
  for (std::uint32_t i = n + 1; i-- > 0;) {  // children before parents
    const std::uint32_t top = by_pre[i];
    if (!separator[top]) continue;
    Part part;
    std::vector<std::uint32_t> walk;
    if (top == n) {
      part.goal = items.roots;
      walk = dom.children[n];
    } else {
      part.goal = {top};
      walk = {top};
    }
    while (!walk.empty()) {
      const std::uint32_t v = walk.back();
      walk.pop_back();
      if (v != top && separator[v]) {
        part.leaves.push_back(v);
        continue;
      }
      part.own.push_back(v);
      for (std::uint32_t w : dom.children[v]) walk.push_back(w);
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace

std::optional<DerivationBound> derivation_search(const ExtractionProblem& problem,
                                                 std::span<const std::int32_t> free,
                                                 const std::vector<bool>& usable,
                                                 const DerivationSearchOptions& options) {
  const Stopwatch clock;
  const Items items(problem, free, usable);
  const std::vector<Part> parts = split_into_parts(items);
  DerivationBound bound;
  bound.parts = static_cast<int>(parts.size());
  bound.selection.choice.assign(free.begin(), free.end());
  std::vector<double> part_cost(items.num_classes(), 0);
  std::vector<std::uint32_t> slot_of(items.num_classes(), kNone);
  for (const Part& part : parts) {
    const PartProblem view(problem, items, part, part_cost, options.ignore_below, slot_of);
    const std::size_t budget =
        options.max_states > bound.states ? options.max_states - bound.states : 0;
    std::optional<PartResult> found = search_part(view, clock, options.seconds, budget);
    if (!found) return std::nullopt;
    bound.states += found->states;
    for (std::uint32_t slot = 0; slot < view.classes.size(); ++slot) {
      const std::uint32_t step = found->derived_by.empty() ? kNone : found->derived_by[slot];
      if (step == kNone || view.steps[step].item == kNone) continue;  // leaves: their own part
      bound.selection.choice[items.problem_class[view.classes[slot]]] =
          static_cast<std::int32_t>(items.node[view.steps[step].item]);
    }
    for (std::uint32_t c : part.goal) part_cost[c] = found->cost;
    bound.lower_bound = found->cost;  // the last part is the roots'
  }
  if (bound.lower_bound == std::numeric_limits<double>::infinity()) return std::nullopt;
  return bound;
}

}  // namespace saturn

#include "saturn/extract/ilp_reductions.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>

namespace saturn::ilp_detail {

namespace {

constexpr std::uint32_t kNoClass = std::numeric_limits<std::uint32_t>::max();

// Bottom-up derivation from the leaves through `items` (nodes or columns):
// item i derives class item_class[i] once its child classes kids[i] (sorted,
// distinct) are derived; `readers` lists per class the items with it as a
// child. Marks what is derived in `derived` (all false on entry), never
// deriving `banned`.
void derive_bottom_up(std::span<const std::uint32_t> item_class,
                      const std::vector<std::vector<std::uint32_t>>& kids,
                      const std::vector<std::vector<int>>& readers, std::uint32_t banned,
                      std::vector<bool>& derived) {
  std::vector<std::size_t> missing(item_class.size());
  std::vector<std::uint32_t> queue;
  auto derive = [&](std::uint32_t c) {
    if (c != banned && !derived[c]) {
      derived[c] = true;
      queue.push_back(c);
    }
  };
  for (std::size_t i = 0; i < item_class.size(); ++i) {
    missing[i] = kids[i].size();
    if (missing[i] == 0) derive(item_class[i]);
  }
  for (std::size_t q = 0; q < queue.size(); ++q) {
    for (int i : readers[queue[q]]) {
      if (--missing[i] == 0) derive(item_class[i]);
    }
  }
}

// The classes some acyclic selection can derive.
std::vector<bool> derivable_classes(const ExtractionProblem& p) {
  std::vector<std::vector<std::uint32_t>> kids(p.num_nodes());
  std::vector<std::vector<int>> readers(p.num_classes());
  for (std::uint32_t n = 0; n < p.num_nodes(); ++n) {
    kids[n].assign(p.children(n).begin(), p.children(n).end());
    std::sort(kids[n].begin(), kids[n].end());
    kids[n].erase(std::unique(kids[n].begin(), kids[n].end()), kids[n].end());
    for (std::uint32_t k : kids[n]) readers[k].push_back(static_cast<int>(n));
  }
  std::vector<bool> derived(p.num_classes(), false);
  derive_bottom_up(p.node_class, kids, readers, kNoClass, derived);
  return derived;
}

// The classes reachable from the roots through any node.
std::vector<bool> reachable_classes(const ExtractionProblem& p) {
  std::vector<bool> seen(p.num_classes(), false);
  std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end());
  for (std::uint32_t r : p.roots) seen[r] = true;
  while (!stack.empty()) {
    std::uint32_t c = stack.back();
    stack.pop_back();
    for (std::uint32_t n = p.class_start[c]; n < p.class_start[c + 1]; ++n) {
      for (std::uint32_t k : p.children(n)) {
        if (!seen[k]) {
          seen[k] = true;
          stack.push_back(k);
        }
      }
    }
  }
  return seen;
}

// Classes decided for free: a zero-cost node whose children are all free.
// Returns the chosen node per free class (-1 for the others).
std::vector<std::int32_t> free_classes(const ExtractionProblem& p) {
  std::vector<std::int32_t> choice(p.num_classes(), -1);
  for (double c : p.node_cost) {
    if (c < 0) return choice;  // the reduction assumes non-negative costs
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::uint32_t n = 0; n < p.num_nodes(); ++n) {
      std::uint32_t c = p.node_class[n];
      if (choice[c] >= 0 || p.node_cost[n] != 0) continue;
      bool ready = true;
      for (std::uint32_t k : p.children(n)) ready = ready && choice[k] >= 0;
      if (ready) {
        choice[c] = static_cast<std::int32_t>(n);
        changed = true;
      }
    }
  }
  return choice;
}

}  // namespace

ReducedNodes reduce_nodes(const ExtractionProblem& p) {
  const std::vector<bool> reachable = reachable_classes(p);
  const std::vector<bool> derivable = derivable_classes(p);
  ReducedNodes r;
  r.free = free_classes(p);
  r.never_needed.assign(p.num_nodes(), false);
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    if (!reachable[c] || r.free[c] >= 0) continue;
    std::vector<std::uint32_t> members;
    std::vector<std::vector<std::uint32_t>> member_kids;
    for (std::uint32_t n = p.class_start[c]; n < p.class_start[c + 1]; ++n) {
      std::vector<std::uint32_t> kids = needed_children(p, n, r.free);
      if (std::binary_search(kids.begin(), kids.end(), c) ||  // its own child
          !std::all_of(kids.begin(), kids.end(), [&](std::uint32_t k) { return derivable[k]; })) {
        r.never_needed[n] = true;
        continue;
      }
      members.push_back(n);
      member_kids.push_back(std::move(kids));
    }
    for (std::size_t i = 0; i < members.size(); ++i) {
      bool dominated = false;
      for (std::size_t j = 0; j < members.size() && !dominated && members.size() <= 64; ++j) {
        if (i == j) continue;
        double ci = p.node_cost[members[i]], cj = p.node_cost[members[j]];
        bool no_worse =
            cj < ci || (cj == ci && (member_kids[j].size() < member_kids[i].size() || j < i));
        dominated = no_worse && std::includes(member_kids[i].begin(), member_kids[i].end(),
                                              member_kids[j].begin(), member_kids[j].end());
      }
      if (dominated) {
        r.never_needed[members[i]] = true;
        continue;
      }
      r.kept.push_back(members[i]);
      r.kids.push_back(member_kids[i]);
    }
  }
  return r;
}

std::vector<std::uint32_t> mandatory_classes(const ExtractionProblem& p,
                                             const std::vector<std::vector<std::uint32_t>>& kids_of,
                                             const ColumnIndex& columns, const Selection& known) {
  std::vector<bool> derived(p.num_classes());
  auto derivable_without = [&](std::uint32_t banned) {
    std::fill(derived.begin(), derived.end(), false);
    derive_bottom_up(columns.class_of, kids_of, columns.readers, banned, derived);
    return std::all_of(p.roots.begin(), p.roots.end(),
                       [&](std::uint32_t r) { return derived[r] || columns.per_class[r] == 0; });
  };
  std::vector<std::uint32_t> needed;
  Selection used = prune_to_roots(p, known);
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    if (used.choice[c] < 0 || columns.per_class[c] == 0) continue;
    if (std::find(p.roots.begin(), p.roots.end(), c) != p.roots.end()) continue;
    if (!derivable_without(c)) needed.push_back(c);
  }
  return needed;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> needed_classes(
    const ExtractionProblem& p, const std::vector<std::vector<std::uint32_t>>& kids_of,
    const ColumnIndex& columns, double work_limit) {
  std::size_t edges = 0;
  for (const std::vector<std::uint32_t>& kids : kids_of) edges += kids.size();
  std::vector<std::uint32_t> candidates;  // classes that are some column's child
  std::vector<bool> is_child(p.num_classes(), false);
  for (const std::vector<std::uint32_t>& kids : kids_of) {
    for (std::uint32_t k : kids) is_child[k] = true;
  }
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    if (is_child[c] && columns.per_class[c] > 0) candidates.push_back(c);
  }
  if (static_cast<double>(candidates.size()) * static_cast<double>(kids_of.size() + edges) >
      work_limit)
    return {};
  std::vector<bool> base(p.num_classes(), false), derived(p.num_classes());
  derive_bottom_up(columns.class_of, kids_of, columns.readers, kNoClass, base);
  std::vector<std::vector<std::uint32_t>> needs(p.num_classes());
  for (std::uint32_t d : candidates) {
    std::fill(derived.begin(), derived.end(), false);
    derive_bottom_up(columns.class_of, kids_of, columns.readers, d, derived);
    for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
      if (c != d && base[c] && !derived[c]) needs[c].push_back(d);
    }
  }
  // Keep d for c unless a kept e of c needs it: going from the classes that
  // need the most, the first kept one of a chain covers the rest.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> rows;
  std::vector<std::uint32_t> covered(p.num_classes(), 0);
  std::uint32_t stamp = 0;
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    std::vector<std::uint32_t>& own = needs[c];
    if (own.empty()) continue;
    ++stamp;
    std::sort(own.begin(), own.end(), [&](std::uint32_t a, std::uint32_t b) {
      return needs[a].size() > needs[b].size() || (needs[a].size() == needs[b].size() && a < b);
    });
    for (std::uint32_t d : own) {
      if (covered[d] == stamp) continue;
      rows.push_back({d, c});
      for (std::uint32_t e : needs[d]) covered[e] = stamp;
    }
  }
  return rows;
}

ExtractionProblem without_nodes(const ExtractionProblem& p, const std::vector<bool>& drop,
                                std::vector<std::uint32_t>& kept) {
  ExtractionProblem q;
  kept.clear();
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    for (std::uint32_t n = p.class_start[c]; n < p.class_start[c + 1]; ++n) {
      if (drop[n]) continue;
      kept.push_back(n);
      q.node_class.push_back(c);
      q.node_cost.push_back(p.node_cost[n]);
      std::span<const std::uint32_t> kids = p.children(n);
      q.child_class.insert(q.child_class.end(), kids.begin(), kids.end());
      q.child_start.push_back(static_cast<std::uint32_t>(q.child_class.size()));
    }
    q.class_start.push_back(static_cast<std::uint32_t>(q.node_class.size()));
  }
  q.roots = p.roots;
  q.class_ids = p.class_ids;
  return q;
}

}  // namespace saturn::ilp_detail

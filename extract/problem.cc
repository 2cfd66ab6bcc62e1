#include "saturn/extract/problem.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>

#include "saturn/base/graph.h"
#include "fmt/format.h"

namespace saturn {

ExtractionProblem problem_from_egraph(const EGraph& egraph, std::span<const Id> roots,
                                      const std::function<double(Id, const ENode&)>& cost) {
  ExtractionProblem p;
  absl::flat_hash_map<Id, std::uint32_t> index;
  for (Id id : egraph.class_ids()) {
    index.emplace(id, static_cast<std::uint32_t>(p.class_ids.size()));
    p.class_ids.push_back(id);
  }
  for (std::uint32_t c = 0; c < p.class_ids.size(); ++c) {
    for (const ENode& node : egraph.nodes(p.class_ids[c])) {
      p.node_class.push_back(c);
      p.node_cost.push_back(cost(p.class_ids[c], node));
      for (Id child : node.children) p.child_class.push_back(index.at(egraph.find(child)));
      p.child_start.push_back(static_cast<std::uint32_t>(p.child_class.size()));
    }
    p.class_start.push_back(static_cast<std::uint32_t>(p.node_class.size()));
  }
  for (Id r : roots) p.roots.push_back(index.at(egraph.find(r)));
  return p;
}

ExtractionProblem problem_from_serialized(const SerializedEGraph& s) {
  ExtractionProblem p;
  for (std::uint32_t c = 0; c < s.class_nodes.size(); ++c) {
    for (std::uint32_t n : s.class_nodes[c]) {
      p.node_class.push_back(c);
      p.node_cost.push_back(s.nodes[n].cost);
      p.child_class.insert(p.child_class.end(), s.nodes[n].children.begin(),
                           s.nodes[n].children.end());
      p.child_start.push_back(static_cast<std::uint32_t>(p.child_class.size()));
    }
    p.class_start.push_back(static_cast<std::uint32_t>(p.node_class.size()));
  }
  p.roots = s.roots;
  return p;
}

std::vector<int> strongly_connected_components(
    const std::vector<std::vector<std::uint32_t>>& edges) {
  const graph::Components comps = graph::strong_components(edges);
  return std::vector<int>(comps.component.begin(), comps.component.end());
}

std::size_t classes_on_cycles(const ExtractionProblem& p) {
  std::vector<std::vector<std::uint32_t>> edges(p.num_classes());
  std::vector<bool> self_loop(p.num_classes(), false);
  for (std::uint32_t n = 0; n < p.num_nodes(); ++n) {
    const std::uint32_t c = p.node_class[n];
    for (std::uint32_t k : p.children(n)) {
      edges[c].push_back(k);
      if (k == c) self_loop[c] = true;
    }
  }
  const std::vector<int> comp = strongly_connected_components(edges);
  std::vector<std::size_t> size(p.num_classes(), 0);
  for (int c : comp) ++size[c];
  std::size_t on_cycles = 0;
  for (std::uint32_t c = 0; c < p.num_classes(); ++c)
    on_cycles += size[comp[c]] > 1 || self_loop[c];
  return on_cycles;
}

namespace {

// Depth-first walk over the chosen graph from the roots. Calls visit(class)
// in post-order; returns an error on a missing choice or a cycle.
template <typename Visit>
absl::Status walk_chosen(const ExtractionProblem& p, const Selection& s, Visit&& visit) {
  auto chosen = [&](std::uint32_t c) { return c < s.choice.size() ? s.choice[c] : -1; };
  auto valid = [&](std::uint32_t c) {  // a node of the class itself
    const std::int32_t n = chosen(c);
    return n >= 0 && static_cast<std::size_t>(n) < p.num_nodes() && p.node_class[n] == c;
  };
  // Each class points to its chosen node's children. A class without a
  // valid choice points to itself instead, so that the walk stops on
  // reaching it (as on a cycle) before it visits anything more.
  std::vector<std::uint32_t> itself;  // filled when first needed
  auto successors = [&](std::uint32_t c) -> std::span<const std::uint32_t> {
    if (valid(c)) return p.children(static_cast<std::uint32_t>(chosen(c)));
    if (itself.empty()) {
      itself.resize(p.num_classes());
      std::iota(itself.begin(), itself.end(), 0u);
    }
    return {&itself[c], 1};
  };
  const graph::DepthFirst walk = graph::depth_first(p.num_classes(), successors, p.roots);
  for (std::uint32_t c : walk.postorder) visit(c);
  if (walk.cycle.empty()) return absl::OkStatus();
  const std::uint32_t c = walk.cycle.front();
  if (chosen(c) < 0)
    return absl::InvalidArgumentError(fmt::format("class {} is needed but has no chosen node", c));
  if (!valid(c))
    return absl::InvalidArgumentError(
        fmt::format("class {} chose node {} of another class", c, chosen(c)));
  return absl::InvalidArgumentError(fmt::format("the selection has a cycle through class {}", c));
}

}  // namespace

SelectionSummary summarize_selection(const ExtractionProblem& p, const Selection& s) {
  SelectionSummary out;
  out.pruned.choice.assign(p.num_classes(), -1);
  std::vector<double> tree(p.num_classes(), 0);  // per class: its tree cost
  out.status = walk_chosen(p, s, [&](std::uint32_t c) {
    const auto n = static_cast<std::uint32_t>(s.choice[c]);
    out.pruned.choice[c] = s.choice[c];
    out.dag_cost += p.node_cost[n];
    double t = p.node_cost[n];
    for (std::uint32_t k : p.children(n)) t += tree[k];
    tree[c] = t;
  });
  if (s.choice.size() != p.num_classes()) {
    out.status = absl::InvalidArgumentError(fmt::format(
        "the selection covers {} classes, the problem has {}", s.choice.size(), p.num_classes()));
  }
  if (!out.status.ok()) {
    out.dag_cost = out.tree_cost = std::numeric_limits<double>::infinity();
    return out;
  }
  for (std::uint32_t r : p.roots) out.tree_cost += tree[r];
  return out;
}

absl::StatusOr<double> check_selection(const ExtractionProblem& p, const Selection& s) {
  SelectionSummary summary = summarize_selection(p, s);
  if (!summary.status.ok()) return summary.status;
  return summary.dag_cost;
}

double tree_cost(const ExtractionProblem& p, const Selection& s) {
  return summarize_selection(p, s).tree_cost;
}

std::vector<std::uint32_t> needed_children(const ExtractionProblem& p, std::uint32_t n,
                                           std::span<const std::int32_t> free) {
  std::vector<std::uint32_t> kids;
  for (std::uint32_t k : p.children(n)) {
    if (free[k] < 0) kids.push_back(k);
  }
  std::sort(kids.begin(), kids.end());
  kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
  return kids;
}

Selection prune_to_roots(const ExtractionProblem& p, const Selection& s) {
  return std::move(summarize_selection(p, s).pruned);
}

std::function<const ENode*(Id)> chosen_enodes(const EGraph& egraph,
                                              const ExtractionProblem& problem,
                                              const Selection& selection) {
  auto chosen = std::make_shared<absl::flat_hash_map<Id, const ENode*>>();
  for (std::uint32_t c = 0; c < problem.num_classes() && c < problem.class_ids.size(); ++c) {
    std::int32_t n = selection.choice[c];
    if (n >= 0)
      (*chosen)[problem.class_ids[c]] =
          &egraph.nodes(problem.class_ids[c])[n - problem.class_start[c]];
  }
  return [&egraph, chosen](Id id) -> const ENode* {
    auto it = chosen->find(egraph.find(id));
    return it == chosen->end() ? nullptr : it->second;
  };
}

}  // namespace saturn

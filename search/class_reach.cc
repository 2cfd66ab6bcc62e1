#include "saturn/search/class_reach.h"

#include <algorithm>

namespace saturn {

void ClassReach::rank(const EGraph& egraph) {
  const std::vector<Id> classes = egraph.class_ids();
  rank_.assign(egraph.num_ids(), kUnranked);
  // The class graph, its vertices the classes in class_ids() order (rank_
  // holds each class's vertex for the while).
  for (std::uint32_t v = 0; v < classes.size(); ++v) rank_[classes[v].index()] = v;
  class_succ_.resize(classes.size());
  for (std::uint32_t v = 0; v < classes.size(); ++v) {
    class_succ_[v].clear();
    for (const ENode& node : egraph.nodes(classes[v]))
      for (Id child : node.children) class_succ_[v].push_back(rank_[egraph.find(child).index()]);
  }
  const graph::Components components = graph::strong_components(class_succ_);
  component_succ_.resize(components.count);
  for (auto& succ : component_succ_) succ.clear();
  for (std::uint32_t v = 0; v < classes.size(); ++v) {
    const std::uint32_t c = components.component[v];
    for (std::uint32_t w : class_succ_[v]) {
      const std::uint32_t d = components.component[w];
      if (d != c) component_succ_[c].push_back(d);
    }
    rank_[classes[v].index()] = c;
  }
  const std::size_t words = (static_cast<std::size_t>(components.count) + 63) / 64;
  bitsets_ = static_cast<std::size_t>(components.count) * words * 8 <= max_bitset_bytes_;
  if (bitsets_) {
    reach_.resize(components.count);
    for (auto& bits : reach_) bits.clear();
  } else {
    reach_.clear();
    reach_.shrink_to_fit();
    seen_.assign(components.count, 0);
    epoch_ = 0;
  }
}

bool ClassReach::reaches(Id from, Id to) {
  const std::uint32_t a = rank_of(from), b = rank_of(to);
  if (a == kUnranked || b == kUnranked) return from == to;
  if (a == b) return true;  // one component
  if (a < b) return false;  // a reaches only lower ranks
  if (!bitsets_) return search(a, b);
  const std::vector<std::uint64_t>& bits = reach_of(a);
  return (bits[b / 64] >> (b % 64)) & 1;
}

// Depth-first from `from`, entering only components ranked above `to`
// (the others cannot reach it).
bool ClassReach::search(std::uint32_t from, std::uint32_t to) {
  if (++epoch_ == 0) {  // the marks wrapped around
    std::fill(seen_.begin(), seen_.end(), 0);
    epoch_ = 1;
  }
  todo_.assign(1, from);
  seen_[from] = epoch_;
  while (!todo_.empty()) {
    const std::uint32_t c = todo_.back();
    todo_.pop_back();
    for (std::uint32_t d : component_succ_[c]) {
      if (d == to) return true;
      if (d < to || seen_[d] == epoch_) continue;
      seen_[d] = epoch_;
      todo_.push_back(d);
    }
  }
  return false;
}

// Successors first, on an explicit stack: a component's bitset is its own bit
// and its successors' bitsets.
const std::vector<std::uint64_t>& ClassReach::reach_of(std::uint32_t component) {
  const std::size_t words = (reach_.size() + 63) / 64;
  if (!reach_[component].empty()) return reach_[component];
  stack_.assign(1, {component, 0});
  while (!stack_.empty()) {
    auto& [c, next] = stack_.back();
    const std::vector<std::uint32_t>& succ = component_succ_[c];
    while (next < succ.size() && !reach_[succ[next]].empty()) ++next;
    if (next < succ.size()) {
      stack_.push_back({succ[next], 0});
      continue;
    }
    std::vector<std::uint64_t>& bits = reach_[c];
    bits.assign(words, 0);
    bits[c / 64] |= std::uint64_t{1} << (c % 64);
    for (std::uint32_t d : succ) {
      const std::vector<std::uint64_t>& below = reach_[d];
      for (std::size_t w = 0; w < words; ++w) bits[w] |= below[w];
    }
    stack_.pop_back();
  }
  return reach_[component];
}

}  // namespace saturn

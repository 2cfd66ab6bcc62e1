#include "saturn/egraph/egraph.h"

#include <algorithm>
#include <cassert>
#include <variant>

#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "saturn/egraph/undo_entry.h"

namespace saturn {

namespace {

// Bytes of the per-id records: union-find parent and set size, the class
// record, its snapshot epoch, its entry in the by-operator index and its
// operator bits.
constexpr std::size_t kPerIdBytes = sizeof(Id) + sizeof(std::uint32_t) + sizeof(EClass) +
                                    sizeof(std::uint64_t) + sizeof(Id) + sizeof(std::uint64_t);

// The order of ENode's operator< as far as the head and the first two
// children decide it (each child + 1, 0 when absent, so that a shorter list
// comes first); nodes that agree there and have more children are compared
// in full. Sorting these keys moves 24-byte records instead of nodes.
struct SortKey {
  std::uint64_t head;
  std::uint64_t kids;
  std::uint32_t index;
};

SortKey sort_key(const ENode& node, std::uint32_t index) {
  const std::size_t n = node.children.size();
  const Id* c = node.children.data();
  const std::uint64_t first = n > 0 ? std::uint64_t{c[0].value} + 1 : 0;
  const std::uint64_t second = n > 1 ? std::uint64_t{c[1].value} + 1 : 0;
  return {node.head(), (first << 32) | second, index};
}

// Sorts a node list that is one long sorted run followed by shorter
// appendices (merge() puts the larger class's list first and appends the
// other's; repair() and add_into() append nodes): the tail is sorted on its
// own, then merged into the run from the back, so that only the entries
// after the first place the tail goes move.
void sort_tail(decltype(EClass::nodes)& v) {
  const auto mid = std::is_sorted_until(v.begin(), v.end());
  if (mid == v.end()) return;
  const auto last = v.end();
  absl::InlinedVector<ENode, 8> tail;
  tail.reserve(static_cast<std::size_t>(last - mid));
  if (std::is_sorted_until(mid, last) == last) {
    tail.assign(std::make_move_iterator(mid), std::make_move_iterator(last));
  } else {
    absl::InlinedVector<SortKey, 16> keys;
    for (auto it = mid; it != last; ++it) {
      keys.push_back(sort_key(*it, static_cast<std::uint32_t>(it - mid)));
    }
    std::sort(keys.begin(), keys.end(), [mid](const SortKey& a, const SortKey& b) {
      if (a.head != b.head) return a.head < b.head;
      if (a.kids != b.kids) return a.kids < b.kids;
      return mid[a.index] < mid[b.index];
    });
    for (const SortKey& k : keys) tail.push_back(std::move(mid[k.index]));
  }
  auto read = mid;      // one past the run's last unplaced entry
  auto write = last;    // one past the next slot to fill
  auto t = tail.end();  // one past the tail's last unplaced entry
  while (t != tail.begin()) {
    if (read != v.begin() && *(t - 1) < *(read - 1)) {
      *--write = std::move(*--read);
    } else {
      *--write = std::move(*--t);
    }
  }
}

// Appends `from` to `into`, the longer list first.
template <typename List>
void append_longer_first(List& into, List& from) {
  if (from.size() > into.size()) into.swap(from);
  into.insert(into.end(), std::make_move_iterator(from.begin()),
              std::make_move_iterator(from.end()));
}

}  // namespace

EGraph::EGraph(const Language& language, Analysis* analysis)
    : language_(&language), analysis_(analysis) {}

EGraph::~EGraph() = default;

std::size_t EGraph::trail_size() const { return trail_.size(); }

std::size_t EGraph::memo_entry_bytes(const ENode& node) {
  // Key, value and the flat hash map's control byte.
  return node.stored_bytes() + sizeof(Id) + 1;
}

std::size_t EGraph::member_cost_bytes(const ENode& node) {
  // The hash-cons entry, the copy in the class and an entry in each child's
  // parent list.
  return memo_entry_bytes(node) + node.stored_bytes() + node.children.size() * sizeof(Id);
}

std::size_t EGraph::node_cost_bytes(const ENode& node) const {
  return member_cost_bytes(node) + kPerIdBytes;
}

std::size_t EGraph::memory_bytes() const {
  return counters_.engine_bytes + attrs_.bytes() + (analysis_ ? analysis_->bytes() : 0);
}

void EGraph::canonicalize(ENode& node) const {
  for (Id& c : node.children) c = find(c);
}

bool EGraph::is_canonical(const ENode& node) const {
  return std::all_of(node.children.begin(), node.children.end(),
                     [&](Id c) { return parent_[c.index()] == c; });
}

std::optional<Id> EGraph::lookup(ENode node) const {
  canonicalize(node);
  auto it = memo_.find(node);
  if (it == memo_.end()) return std::nullopt;
  return find(it->second);
}

AddResult EGraph::add(ENode node) {
  canonicalize(node);
  const Id id(static_cast<std::uint32_t>(classes_.size()));
  // One hash-cons probe: insert first, take the entry back if refused.
  const auto [slot, inserted] = memo_.try_emplace(node, id);
  if (!inserted) return {find(slot->second), AddStatus::kExisting};
  auto refuse = [&, slot = slot](AddStatus why) -> AddResult {
    memo_.erase(slot);
    return {Id(), why};
  };
  const std::size_t cost = node_cost_bytes(node);
  if (std::optional<AddStatus> over = over_budget(cost)) return refuse(*over);
  if (analysis_ != nullptr) {
    if (!analysis_->make(*this, node, id)) return refuse(AddStatus::kRejected);
    if (over_byte_budget(cost)) {
      analysis_->discard_last();
      return refuse(AddStatus::kByteLimit);
    }
  }

  parent_.push_back(id);
  set_size_.push_back(1);
  ops_.push_back(op_bit(node.op));
  saved_epoch_.push_back(0);
  link(node, id);
  classes_.emplace_back().nodes.push_back(std::move(node));
  counters_.engine_bytes += cost;
  ++counters_.num_classes;
  ++counters_.nodes_added;
  new_version();

  if (analysis_ != nullptr) analysis_->modify(*this, id);
  return {id, AddStatus::kAdded};
}

AddResult EGraph::add_into(ENode node, Id into) {
  canonicalize(node);
  into = find(into);
  const auto [slot, inserted] = memo_.try_emplace(node, into);
  if (!inserted) {
    absl::StatusOr<Id> merged = merge(slot->second, into);
    if (!merged.ok()) return {Id(), AddStatus::kConflict};
    return {*merged, AddStatus::kExisting};
  }
  auto refuse = [&, slot = slot](AddStatus why) -> AddResult {
    memo_.erase(slot);
    return {Id(), why};
  };
  // The analysis joins the node's data as a merge would; the shipped joins
  // keep the data's size, so the bytes are checked before.
  const std::size_t cost = member_cost_bytes(node);
  if (std::optional<AddStatus> over = over_budget(cost)) return refuse(*over);
  if (analysis_ != nullptr) {
    switch (analysis_->join_node(*this, node, into)) {
      case NodeJoin::kRefused:
        return refuse(AddStatus::kRejected);
      case NodeJoin::kConflict:
        return refuse(AddStatus::kConflict);
      case NodeJoin::kChanged:
        data_changed(into);
        break;
      case NodeJoin::kUnchanged:
        break;
    }
  }

  snapshot_class(into);
  ops_[into.index()] |= op_bit(node.op);
  link(node, into);
  if (auto h = hidden_.find(into.index()); h != hidden_.end() && !node.children.empty()) {
    snapshot_hidden(into);
    h->second.push_back(std::move(node));
    ++counters_.hidden_nodes;
  } else {
    classes_[into.index()].nodes.push_back(std::move(node));
  }
  dirty_.push_back(into);  // its node list is sorted again there
  counters_.engine_bytes += cost;
  ++counters_.nodes_added;
  new_version();
  return {into, AddStatus::kAdded};
}

std::optional<AddStatus> EGraph::over_budget(std::size_t cost) const {
  if (memo_.size() > budget_.max_nodes) return AddStatus::kNodeLimit;
  if (over_byte_budget(cost)) return AddStatus::kByteLimit;
  return std::nullopt;
}

void EGraph::link(const ENode& node, Id cls) {
  for (Id c : node.children) push_parent(c, cls);
  if (by_op_.size() <= node.op.index()) by_op_.resize(node.op.index() + 1);
  by_op_[node.op.index()].push_back(cls);
  // The index only grows: rollback cuts it back to its length at the mark.
  if (recording()) log({UndoEntry::MemoInserted{node}});
}

void EGraph::push_parent(Id child, Id parent) {
  if (recording() && child.index() < marks_.back().num_ids &&
      saved_epoch_[child.index()] < marks_.back().epoch) {
    log({UndoEntry::ParentPushed{child}});
  }
  classes_[child.index()].parents.push_back(parent);
}

absl::StatusOr<Id> EGraph::merge(Id a, Id b) {
  a = find(a);
  b = find(b);
  if (a == b) return a;
  if (analysis_ != nullptr && analysis_->conflict(a, b)) {
    return absl::FailedPreconditionError(fmt::format(
        "classes {} and {} cannot be merged: their analysis data conflict", a.value, b.value));
  }
  return unite(a, b);
}

Id EGraph::unite(Id a, Id b) {
  a = find(a);
  b = find(b);
  if (a == b) return a;
  // Union by size keeps find() short without path compression, which would
  // otherwise have to be undone on rollback. Ties go to the older id.
  if (set_size_[a.index()] < set_size_[b.index()] ||
      (set_size_[a.index()] == set_size_[b.index()] && b < a)) {
    std::swap(a, b);
  }
  const Id root = a, loser = b;
  if (recording()) {
    log({UndoEntry::UnionLink{loser, root, set_size_[root.index()]}});
  }
  // The root's snapshot also keeps its operator bits from before the merge.
  snapshot_class(root);
  snapshot_class(loser);
  parent_[loser.index()] = root;
  set_size_[root.index()] += set_size_[loser.index()];
  ops_[root.index()] |= ops_[loser.index()];

  EClass& r = classes_[root.index()];
  EClass& l = classes_[loser.index()];
  // The loser's parents now hold stale children.
  for (Id p : l.parents) dirty_.push_back(p);
  dirty_.push_back(root);
  if (analysis_ != nullptr) {
    JoinResult changed = analysis_->merge(root, loser);
    if (changed.into_changed) {
      analysis_pending_.insert(analysis_pending_.end(), r.parents.begin(), r.parents.end());
    }
    if (changed.from_changed) {
      analysis_pending_.insert(analysis_pending_.end(), l.parents.begin(), l.parents.end());
    }
    if (changed.into_changed || changed.from_changed) modify_pending_.push_back(root);
  }
  append_longer_first(r.nodes, l.nodes);
  append_longer_first(r.parents, l.parents);
  l = EClass();
  auto loser_hidden = hidden_.find(loser.index());
  if (loser_hidden != hidden_.end() || hidden_.contains(root.index())) {
    snapshot_hidden(root);
    snapshot_hidden(loser);
    std::vector<ENode> moved;
    if (loser_hidden != hidden_.end()) {
      moved = std::move(loser_hidden->second);
      hidden_.erase(loser_hidden);
    }
    std::vector<ENode>& h = hidden_[root.index()];
    h.insert(h.end(), std::make_move_iterator(moved.begin()), std::make_move_iterator(moved.end()));
    hide_non_leaves(root);
  }
  --counters_.num_classes;
  new_version();
  return root;
}

void EGraph::keep_leaves(Id id) {
  id = find(id);
  snapshot_hidden(id);
  hidden_.try_emplace(id.index());
  hide_non_leaves(id);
  new_version();
}

void EGraph::hide_non_leaves(Id id) {
  snapshot_class(id);
  auto& nodes = classes_[id.index()].nodes;
  std::vector<ENode>& hidden = hidden_[id.index()];
  const auto first_hidden = std::stable_partition(
      nodes.begin(), nodes.end(), [](const ENode& n) { return n.children.empty(); });
  counters_.hidden_nodes += static_cast<std::size_t>(nodes.end() - first_hidden);
  hidden.insert(hidden.end(), std::make_move_iterator(first_hidden),
                std::make_move_iterator(nodes.end()));
  nodes.erase(first_hidden, nodes.end());
}

void EGraph::repair_hidden(Id id, std::vector<std::pair<Id, Id>>& congruent) {
  auto h = hidden_.find(id.index());
  if (h == hidden_.end()) return;
  snapshot_hidden(id);
  std::vector<ENode>& hidden = h->second;
  std::size_t out = 0;
  for (std::size_t i = 0; i < hidden.size(); ++i) {
    ENode& node = hidden[i];
    if (!is_canonical(node) && !rekey(node, id, congruent)) {
      --counters_.hidden_nodes;
      continue;
    }
    if (out != i) hidden[out] = std::move(node);
    ++out;
  }
  hidden.resize(out);
}

void EGraph::rebuild() {
  std::vector<Id> todo;
  while (!is_clean()) {
    if (!dirty_.empty()) {
      take_canonical(dirty_, todo);
      for (Id id : todo) repair(find(id));
    } else if (!analysis_pending_.empty()) {
      take_canonical(analysis_pending_, todo);
      for (Id id : todo) refine(find(id));
    } else {
      // All at once: their merges are then repaired together.
      take_canonical(modify_pending_, todo);
      for (Id id : todo) analysis_->modify(*this, find(id));
    }
  }
#ifndef NDEBUG
  absl::Status s = check_invariants();
  assert(s.ok() && "e-graph invariants broken after rebuild");
#endif
}

void EGraph::append_canonical(std::span<const Id> ids, std::vector<Id>& out) const {
  ++stamp_;
  seen_stamp_.resize(classes_.size(), 0);
  for (Id id : ids) {
    id = find(id);
    if (seen_stamp_[id.index()] == stamp_) continue;
    seen_stamp_[id.index()] = stamp_;
    out.push_back(id);
  }
}

void EGraph::take_canonical(std::vector<Id>& queue, std::vector<Id>& out) const {
  out.clear();
  append_canonical(queue, out);
  queue.clear();
}

// Re-canonicalizes a class's nodes. A node that becomes equal to a node of
// another class is a congruence: the two classes merge.
bool EGraph::rekey(ENode& node, Id id, std::vector<std::pair<Id, Id>>& congruent) {
  auto stale = memo_.find(node);
  assert(stale != memo_.end());
  if (recording()) log({UndoEntry::MemoErased{stale->first, stale->second}});
  memo_.erase(stale);
  canonicalize(node);
  auto [it, inserted] = memo_.try_emplace(node, id);
  if (inserted) {
    if (recording()) log({UndoEntry::MemoInserted{node}});
    return true;
  }
  // Already present: drop this copy (one e-node fewer).
  counters_.engine_bytes -= memo_entry_bytes(node) + node.stored_bytes();
  const Id other = find(it->second);
  if (other != id) congruent.emplace_back(other, id);
  return false;
}

void EGraph::repair(Id id) {
  snapshot_class(id);
  std::vector<std::pair<Id, Id>> congruent;
  {
    EClass& cls = classes_[id.index()];
    std::size_t out = 0;
    for (std::size_t i = 0; i < cls.nodes.size(); ++i) {
      ENode& node = cls.nodes[i];
      if (is_canonical(node)) {
        if (out != i) cls.nodes[out] = std::move(node);
        ++out;
        continue;
      }
      if (rekey(node, id, congruent)) rekeyed_nodes_.push_back(std::move(node));
    }
    cls.nodes.resize(out);
    cls.nodes.insert(cls.nodes.end(), std::make_move_iterator(rekeyed_nodes_.begin()),
                     std::make_move_iterator(rekeyed_nodes_.end()));
    rekeyed_nodes_.clear();
    sort_tail(cls.nodes);
  }
  if (!hidden_.empty()) repair_hidden(id, congruent);
  for (auto [a, b] : congruent) unite(a, b);
  new_version();
}

// A child's data changed: the class's nodes may derive better data. If they
// do, its own parents follow and the analysis may act on the class.
void EGraph::refine(Id id) {
  if (analysis_->is_final(id)) return;
  bool changed = false;
  for (std::size_t i = 0; i < classes_[id.index()].nodes.size(); ++i) {
    ENode node = classes_[id.index()].nodes[i];
    canonicalize(node);
    changed |= analysis_->refine(*this, node, id);
  }
  if (!changed) return;
  data_changed(id);
  new_version();
}

void EGraph::data_changed(Id id) {
  const auto& parents = classes_[id.index()].parents;
  analysis_pending_.insert(analysis_pending_.end(), parents.begin(), parents.end());
  modify_pending_.push_back(id);
}

std::vector<Id> EGraph::class_ids() const {
  std::vector<Id> out;
  out.reserve(counters_.num_classes);
  for (std::uint32_t i = 0; i < classes_.size(); ++i) {
    if (parent_[i] == Id(i)) out.push_back(Id(i));
  }
  return out;
}

std::span<const Id> EGraph::classes_with_op(Symbol op) const {
  if (op.index() >= by_op_.size()) return {};
  if (op_cache_.size() < by_op_.size()) op_cache_.resize(by_op_.size());
  OpCache& cache = op_cache_[op.index()];
  if (cache.version != version_) {
    cache.version = version_;
    cache.classes.clear();
    append_canonical(by_op_[op.index()], cache.classes);
  }
  return cache.classes;
}

absl::Status EGraph::check_invariants() const {
  std::size_t entries = 0;
  std::size_t canonical = 0;
  for (std::uint32_t i = 0; i < classes_.size(); ++i) {
    const Id id(i);
    const EClass& cls = classes_[i];
    if (find(id) != id) {
      if (!cls.nodes.empty()) return absl::InternalError(fmt::format("dead class {} has nodes", i));
      continue;
    }
    ++canonical;
    if (cls.nodes.empty()) return absl::InternalError(fmt::format("class {} is empty", i));
    for (std::size_t k = 0; k < cls.nodes.size(); ++k) {
      const ENode& n = cls.nodes[k];
      if (!is_canonical(n)) {
        return absl::InternalError(fmt::format("class {} holds a non-canonical node", i));
      }
      if (k > 0 && !(cls.nodes[k - 1] < n)) {
        return absl::InternalError(fmt::format("class {} nodes not sorted and unique", i));
      }
      auto it = memo_.find(n);
      if (it == memo_.end() || find(it->second) != id) {
        return absl::InternalError(
            fmt::format("class {} holds a node missing from the hash-cons", i));
      }
      if (analysis_ != nullptr && analysis_->member_conflicts(*this, n, id)) {
        return absl::InternalError(
            fmt::format("class {} holds a node whose analysis data conflict with it", i));
      }
      for (Id c : n.children) {
        const auto& ps = classes_[c.index()].parents;
        bool found = std::any_of(ps.begin(), ps.end(), [&](Id p) { return find(p) == id; });
        if (!found) {
          return absl::InternalError(
              fmt::format("class {} is not a parent of its child {}", i, c.value));
        }
      }
    }
    entries += cls.nodes.size();
    if (auto h = hidden_.find(i); h != hidden_.end()) {
      for (const ENode& n : cls.nodes) {
        if (!n.children.empty())
          return absl::InternalError(fmt::format("class {} keeps only leaves but shows a node "
                                                 "with children", i));
      }
      for (const ENode& n : h->second) {
        auto it = memo_.find(n);
        if (!is_canonical(n) || it == memo_.end() || find(it->second) != id)
          return absl::InternalError(
              fmt::format("class {} hides a node that is not canonical in the hash-cons", i));
      }
      entries += h->second.size();
    }
  }
  for (const auto& [index, nodes] : hidden_) {
    if (find(Id(index)) != Id(index))
      return absl::InternalError(fmt::format("dead class {} hides nodes", index));
  }
  if (entries != memo_.size()) {
    return absl::InternalError(
        fmt::format("hash-cons has {} nodes but classes hold {}", memo_.size(), entries));
  }
  if (canonical != counters_.num_classes) {
    return absl::InternalError(
        fmt::format("class count {} but {} canonical classes", counters_.num_classes, canonical));
  }
  return absl::OkStatus();
}

std::string EGraph::dump() const {
  std::string out;
  for (Id id : class_ids()) {
    out += fmt::format("{}:", id.value);
    for (const ENode& n : nodes(id)) {
      out += ' ';
      out += language_->node_label(n.op, attrs_.get(n.attrs));
      out += '(';
      for (std::size_t k = 0; k < n.children.size(); ++k) {
        if (k > 0) out += ' ';
        out += std::to_string(n.children[k].value);
      }
      out += ')';
    }
    out += '\n';
  }
  return out;
}

}  // namespace saturn

// Checkpoints: mark() remembers the e-graph's state, and every change after
// it is logged in the undo trail (undo_entry.h) so that rollback() returns
// to exactly that state in time proportional to what changed.
#include <cassert>
#include <utility>
#include <variant>
#include <vector>

#include "saturn/egraph/egraph.h"
#include "saturn/egraph/undo_entry.h"

namespace saturn {

void EGraph::log(UndoEntry entry) { trail_.push_back(std::move(entry)); }

void EGraph::snapshot_class(Id id) {
  if (!recording()) return;
  const MarkRecord& m = marks_.back();
  if (id.index() >= m.num_ids || saved_epoch_[id.index()] >= m.epoch) return;
  log({UndoEntry::ClassSnapshot{id, classes_[id.index()], ops_[id.index()],
                                saved_epoch_[id.index()]}});
  saved_epoch_[id.index()] = epoch_;
}

void EGraph::snapshot_hidden(Id id) {
  if (!recording() || id.index() >= marks_.back().num_ids) return;
  auto h = hidden_.find(id.index());
  log({UndoEntry::HiddenSnapshot{id, h != hidden_.end(),
                                 h != hidden_.end() ? h->second : std::vector<ENode>()}});
}

void EGraph::mark() {
  assert(is_clean() && "mark() needs a rebuilt e-graph");
  std::vector<std::size_t> by_op_sizes;
  by_op_sizes.reserve(by_op_.size());
  for (const std::vector<Id>& ids : by_op_) by_op_sizes.push_back(ids.size());
  marks_.push_back(MarkRecord{trail_.size(), classes_.size(), attrs_.size(), counters_, ++epoch_,
                              version_, std::move(by_op_sizes)});
  if (analysis_ != nullptr) analysis_->mark();
}

void EGraph::undo(UndoEntry& entry) {
  struct Undoer {
    EGraph& g;
    void operator()(UndoEntry::UnionLink& u) {
      g.parent_[u.loser.index()] = u.loser;
      g.set_size_[u.root.index()] = u.old_root_size;
    }
    void operator()(UndoEntry::ClassSnapshot& s) {
      g.classes_[s.id.index()] = std::move(s.old);
      g.ops_[s.id.index()] = s.old_ops;
      g.saved_epoch_[s.id.index()] = s.old_epoch;
    }
    void operator()(UndoEntry::ParentPushed& p) { g.classes_[p.id.index()].parents.pop_back(); }
    void operator()(UndoEntry::MemoInserted& m) { g.memo_.erase(m.key); }
    void operator()(UndoEntry::MemoErased& m) { g.memo_.emplace(std::move(m.key), m.value); }
    void operator()(UndoEntry::HiddenSnapshot& h) {
      if (h.kept_leaves)
        g.hidden_[h.id.index()] = std::move(h.old);
      else
        g.hidden_.erase(h.id.index());
    }
  };
  std::visit(Undoer{*this}, entry.change);
}

void EGraph::rollback() {
  assert(!marks_.empty());
  const MarkRecord m = std::move(marks_.back());
  marks_.pop_back();
  while (trail_.size() > m.trail_size) {
    undo(trail_.back());
    trail_.pop_back();
  }
  classes_.resize(m.num_ids);
  absl::erase_if(hidden_, [&](const auto& entry) { return entry.first >= m.num_ids; });
  parent_.resize(m.num_ids);
  set_size_.resize(m.num_ids);
  ops_.resize(m.num_ids);
  saved_epoch_.resize(m.num_ids);
  by_op_.resize(m.by_op_sizes.size());
  for (std::size_t op = 0; op < by_op_.size(); ++op) by_op_[op].resize(m.by_op_sizes[op]);
  attrs_.truncate(m.num_attrs);
  counters_ = m.counters;
  dirty_.clear();
  analysis_pending_.clear();
  modify_pending_.clear();
  if (analysis_ != nullptr) analysis_->rollback();
  version_ = m.version;  // the marked state again
}

void EGraph::release() {
  assert(!marks_.empty());
  marks_.pop_back();
  if (marks_.empty()) trail_.clear();
  if (analysis_ != nullptr) analysis_->release();
}

}  // namespace saturn

// E-class analyses: facts attached to every e-class and kept up to date as
// classes merge (egg's make / merge / modify), such as a folded constant or a
// tensor shape.
//
// Most analyses derive from `TypedAnalysis<Data>`, which stores one `Data`
// per class and handles checkpoints:
//
//   class ConstantFolding : public TypedAnalysis<std::optional<double>> {
//     std::optional<std::optional<double>> make_data(const EGraph&, const ENode&) override;
//     JoinResult join(std::optional<double>& into, const std::optional<double>& from) override;
//   };
//   EGraph egraph(language, &folding);
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "saturn/egraph/enode.h"

namespace saturn {

class EGraph;

struct JoinResult {
  bool into_changed = false;  // `into` is not what it was
  bool from_changed = false;  // the result differs from `from`
};

// What joining a new member's data into its class did.
enum class NodeJoin : std::uint8_t {
  kUnchanged,  // joined; the class's data is as it was
  kChanged,    // joined; the class's data changed
  kRefused,    // the node does not fit (its data cannot be made)
  kConflict,   // the node's data contradicts the class's: they cannot be equal
};

// The engine's view of an analysis. Data lives in the analysis, indexed by
// class id; the e-graph calls these hooks as it changes.
class Analysis {
 public:
  virtual ~Analysis() = default;

  // Computes and stores the data of `node`, which becomes the new class `id`
  // (ids are dense: `id` equals the number of classes made so far). Returns
  // false to refuse the node (it does not fit); nothing is stored then.
  virtual bool make(const EGraph& egraph, const ENode& node, Id id) = 0;
  // Forgets the data stored by the latest `make` (the e-graph could not keep
  // the node after all, e.g. the byte budget is full).
  virtual void discard_last() = 0;
  // Class `from` merges into `into`: joins the data into `into`'s and says
  // which side's data changed (its parents must then be revisited).
  virtual JoinResult merge(Id into, Id from) = 0;
  // `node`, a new member of the existing class `id` (EGraph::add_into),
  // joins its data into `id`'s. Nothing changes when the node is refused or
  // its data conflicts with the class's.
  virtual NodeJoin join_node(const EGraph& egraph, const ENode& node, Id id) = 0;
  // `node`, a member of class `id`, may now derive better data because a
  // child's data changed: joins it in. Returns true if `id`'s data changed.
  bool refine(const EGraph& egraph, const ENode& node, Id id) {
    return join_node(egraph, node, id) == NodeJoin::kChanged;
  }
  // Whether the data of classes `a` and `b` contradict each other (tensors
  // of different types): they cannot be equal, and EGraph::merge refuses.
  virtual bool conflict(Id a, Id b) const {
    (void)a;
    (void)b;
    return false;
  }
  // Whether `node`, a member of class `id`, would derive data contradicting
  // the class's (EGraph::check_invariants asks it of every node).
  virtual bool member_conflicts(const EGraph& egraph, const ENode& node, Id id) {
    (void)egraph;
    (void)node;
    (void)id;
    return false;
  }
  // Whether class `id`'s data can no longer change (refining it is skipped).
  virtual bool is_final(Id id) const {
    (void)id;
    return false;
  }
  // Called after class `id`'s data changed; may add nodes and merge classes.
  virtual void modify(EGraph& egraph, Id id) {
    (void)egraph;
    (void)id;
  }

  // Checkpoints, driven by EGraph::mark / rollback / release.
  virtual void mark() = 0;
  virtual void rollback() = 0;
  virtual void release() = 0;

  // Bytes of data held, counted in the e-graph's byte budget.
  virtual std::size_t bytes() const = 0;
};

// An analysis with one `Data` value per class.
template <typename Data>
class TypedAnalysis : public Analysis {
 public:
  // The data of a canonical class.
  const Data& data(Id id) const { return data_[id.index()]; }

  bool make(const EGraph& egraph, const ENode& node, Id id) final {
    std::optional<Data> made = make_data(egraph, node);
    if (!made) return false;
    assert(id.index() == data_.size());
    (void)id;
    bytes_ += data_bytes(*made);
    data_.push_back(std::move(*made));
    return true;
  }

  void discard_last() final {
    bytes_ -= data_bytes(data_.back());
    data_.pop_back();
  }

  JoinResult merge(Id into, Id from) final {
    save(into);
    Data& target = data_[into.index()];
    std::size_t before = data_bytes(target);
    JoinResult r = join(target, data_[from.index()]);
    bytes_ = bytes_ - before + data_bytes(target);
    if (!r.into_changed) drop_unneeded_save(into);
    return r;
  }

  NodeJoin join_node(const EGraph& egraph, const ENode& node, Id id) final {
    std::optional<Data> made = make_data(egraph, node);
    if (!made) return NodeJoin::kRefused;
    if (contradict(data_[id.index()], *made)) return NodeJoin::kConflict;
    save(id);
    Data& target = data_[id.index()];
    std::size_t before = data_bytes(target);
    bool changed = join(target, *made).into_changed;
    bytes_ = bytes_ - before + data_bytes(target);
    if (!changed) drop_unneeded_save(id);
    return changed ? NodeJoin::kChanged : NodeJoin::kUnchanged;
  }

  bool conflict(Id a, Id b) const final { return contradict(data(a), data(b)); }

  bool member_conflicts(const EGraph& egraph, const ENode& node, Id id) final {
    std::optional<Data> made = make_data(egraph, node);
    return made && contradict(data(id), *made);
  }

  void mark() final { marks_.push_back(Mark{trail_.size(), data_.size(), bytes_}); }

  void rollback() final {
    const Mark m = marks_.back();
    marks_.pop_back();
    while (trail_.size() > m.trail_size) {
      data_[trail_.back().index] = std::move(trail_.back().old);
      trail_.pop_back();
    }
    data_.resize(m.data_size);
    bytes_ = m.bytes;
  }

  void release() final {
    marks_.pop_back();
    if (marks_.empty()) trail_.clear();
  }

  std::size_t bytes() const final { return bytes_; }
  bool is_final(Id id) const final { return is_top(data_[id.index()]); }

 protected:
  // Whether a value is the lattice's top (no join can change it).
  virtual bool is_top(const Data& data) const {
    (void)data;
    return false;
  }
  // The data of a node from its children's data; nullopt refuses the node.
  virtual std::optional<Data> make_data(const EGraph& egraph, const ENode& node) = 0;
  // Joins `from` into `into` (a lattice join).
  virtual JoinResult join(Data& into, const Data& from) = 0;
  // Whether two values cannot describe one class (see Analysis::conflict).
  virtual bool contradict(const Data& a, const Data& b) const {
    (void)a;
    (void)b;
    return false;
  }
  // Bytes one value holds, for the budget.
  virtual std::size_t data_bytes(const Data& data) const {
    (void)data;
    return sizeof(Data);
  }

 private:
  struct Saved {
    std::size_t index;
    Data old;
  };
  struct Mark {
    std::size_t trail_size;
    std::size_t data_size;
    std::size_t bytes;
  };

  // Records the old value of a class that existed at the latest mark.
  void save(Id id) {
    if (!marks_.empty() && id.index() < marks_.back().data_size) {
      trail_.push_back(Saved{id.index(), data_[id.index()]});
    }
  }
  void drop_unneeded_save(Id id) {
    if (!marks_.empty() && id.index() < marks_.back().data_size) trail_.pop_back();
  }

  std::vector<Data> data_;
  std::vector<Saved> trail_;
  std::vector<Mark> marks_;
  std::size_t bytes_ = 0;
};

}  // namespace saturn

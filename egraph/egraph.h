// The e-graph: a hash-consed set of e-nodes partitioned into e-classes,
// with deferred rebuilding (egg, POPL 2021), an optional e-class analysis,
// a node/byte budget that is never exceeded, and checkpoints that roll back
// without copying the e-graph.
//
//   EGraph g(language);
//   Id x = g.add(ENode(sym_x, kNoAttributes)).id;
//   Id fx = g.add(ENode(f, kNoAttributes, {x})).id;
//   g.merge(x, y);      // cheap: congruence is restored by rebuild()
//   g.rebuild();
//   g.mark();           // checkpoint
//   ...grow...
//   g.rollback();       // back to exactly the checkpoint
//
// Ids handed out stay valid forever; `find` maps them to the canonical id of
// their class. Reads (`nodes`, `classes_with_op`) expect a rebuilt e-graph.
// One thread at a time: even const reads update caches (`find` compresses
// union-find paths).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/egraph/analysis.h"
#include "saturn/egraph/attributes.h"
#include "saturn/egraph/enode.h"
#include "saturn/egraph/language.h"

namespace saturn {

// Most classes hold one node and have few parents: both lists keep that
// many inline, which spares an allocation per class and, in e-matching, a
// pointer chase (the record is 64 bytes).
struct EClass {
  // Member e-nodes; canonical, unique and sorted once the e-graph is rebuilt.
  absl::InlinedVector<ENode, 1> nodes;
  // Classes holding a node that has this class as a child (may repeat, may
  // be non-canonical; `find` them). A merge appends the loser's list, so the
  // lists together hold one entry per child slot of every node ever added:
  // they are never tidied, as tidying cost more than the repeats it saved.
  absl::InlinedVector<Id, 4> parents;
};

// Caps on the e-graph's size; `add` refuses a node rather than exceed one.
struct Budget {
  static constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();
  std::size_t max_nodes = kUnlimited;  // e-nodes in the hash-cons
  std::size_t max_bytes = kUnlimited;  // memory_bytes()
};

enum class AddStatus : std::uint8_t {
  kAdded,      // a new e-node and class
  kExisting,   // the node was already present
  kNodeLimit,  // refused: the node budget is full
  kByteLimit,  // refused: the byte budget is full
  kRejected,   // refused by the analysis (e.g. shapes do not fit)
  kConflict,   // refused: its data contradicts the class it would join (Analysis::conflict)
};

struct AddResult {
  Id id;  // the node's class; invalid when refused
  AddStatus status;
  bool ok() const { return id.valid(); }
};

class EGraph {
 public:
  // `analysis` (optional) must outlive the e-graph and be used by no other.
  explicit EGraph(const Language& language, Analysis* analysis = nullptr);
  ~EGraph();
  EGraph(const EGraph&) = delete;
  EGraph& operator=(const EGraph&) = delete;

  const Language& language() const { return *language_; }
  Analysis* analysis() const { return analysis_; }
  AttrTable& attrs() { return attrs_; }
  const AttrTable& attrs() const { return attrs_; }
  // One attribute value as a handle, so that pattern variables bound to
  // attribute values can sit in a substitution beside class ids: the value
  // is interned as the set {"" = value}. Equal values give equal handles.
  // Const because e-matching binds them; the table only grows.
  AttrId intern_value(const AttrValue& value) const {
    return attrs_.intern(Attributes{{std::string(), value}});
  }
  const AttrValue& attr_value(AttrId id) const { return attrs_.get(id).entries().front().value; }

  // ---- Building -------------------------------------------------------

  // Adds `node` (children may be non-canonical) unless it is present.
  AddResult add(ENode node);
  // Adds `node` to the class of `into`: what `merge(into, add(node).id)`
  // does, without making a class for the node first (most nodes a rewrite
  // adds join the class it matched). Returns the merged class; kExisting if
  // the node was present (its class is merged with `into`). The analysis
  // joins the node's data into the class's, as a merge would, and the class
  // is repaired (its node list re-sorted) by the next `rebuild`. kConflict
  // when the node (or its class) contradicts `into`'s data, as merge refuses.
  AddResult add_into(ENode node, Id into);
  // The class of `node` if it is present.
  std::optional<Id> lookup(ENode node) const;
  // Asserts that two classes are equal; returns the surviving canonical id.
  // Congruence is restored by the next `rebuild`. Refused (an error, nothing
  // changes) when the analysis finds their data in conflict: tensors of
  // different types are never equal, whatever a rewrite claims.
  absl::StatusOr<Id> merge(Id a, Id b);
  // Restores the congruence and hash-cons invariants; runs analysis updates.
  void rebuild();
  // From now on only the leaf nodes (no children) of class `id` are its
  // visible members, also after later merges: egg's constant folding prunes
  // a class that holds a constant so. The other nodes stay in the hash-cons
  // (adding one again finds the class) and take part in congruence, but
  // e-matching and nodes() no longer see them. The class must hold a leaf.
  void keep_leaves(Id id);
  bool is_clean() const {
    return dirty_.empty() && analysis_pending_.empty() && modify_pending_.empty();
  }

  // ---- Budget ---------------------------------------------------------

  void set_budget(const Budget& budget) { budget_ = budget; }
  // Makes room in the hash-cons for `n` e-nodes in all, so that adding them
  // rehashes it at most once (a runner about to apply many matches).
  void reserve(std::size_t n) {
    if (n > memo_.size()) memo_.reserve(n);
  }
  const Budget& budget() const { return budget_; }
  // Whether `n` more e-nodes fit under the node budget.
  bool has_room_for(std::size_t n) const { return num_nodes() + n <= budget_.max_nodes; }

  // ---- Reading --------------------------------------------------------

  // The canonical id of `id`'s class.
  Id find(Id id) const {
    // Path halving shortens later finds; it is skipped while a mark is
    // active, as rollback would have to undo it.
    const bool compress = marks_.empty();
    while (parent_[id.index()] != id) {
      const Id up = parent_[id.index()];
      if (compress) parent_[id.index()] = parent_[up.index()];
      id = up;
    }
    return id;
  }
  // Replaces each child with its canonical id.
  void canonicalize(ENode& node) const;
  bool is_canonical(const ENode& node) const;

  // E-nodes in the hash-cons.
  std::size_t num_nodes() const { return memo_.size(); }
  // E-nodes the classes show (nodes()): num_nodes() less those keep_leaves()
  // hid. egg counts these (EGraph::total_size).
  std::size_t num_visible_nodes() const { return memo_.size() - counters_.hidden_nodes; }
  // Canonical classes.
  std::size_t num_classes() const { return counters_.num_classes; }
  // Ids handed out so far (canonical or not).
  std::size_t num_ids() const { return classes_.size(); }
  // E-nodes added so far (by `add` and `add_into`; rollback restores it).
  // More than num_nodes() once congruent nodes have merged.
  std::size_t nodes_added() const { return counters_.nodes_added; }
  // Bytes of e-graph content: each e-node in the hash-cons and in its class,
  // union-find entries, class records, parent lists, the attribute table and
  // analysis data. Container slack is not counted, so the figure is exact and
  // deterministic.
  std::size_t memory_bytes() const;
  // What one more e-node costs in memory_bytes(), not counting analysis
  // data: with a class of its own (`add`), or in an existing one (`add_into`).
  std::size_t node_cost_bytes(const ENode& node) const;
  static std::size_t member_cost_bytes(const ENode& node);

  const EClass& eclass(Id canonical) const { return classes_[canonical.index()]; }
  // False if the class holds no node with operator `op`; true if it may (a
  // filter that spares e-matching a look at the class record).
  bool may_have_op(Id canonical, Symbol op) const {
    return (ops_[canonical.index()] & op_bit(op)) != 0;
  }
  std::span<const ENode> nodes(Id canonical) const { return classes_[canonical.index()].nodes; }
  // Canonical ids in ascending order.
  std::vector<Id> class_ids() const;
  // The canonical classes holding at least one node with operator `op`, each
  // once. Valid until the e-graph changes; not safe to call concurrently.
  std::span<const Id> classes_with_op(Symbol op) const;
  // Names the e-graph's state: it changes whenever the e-graph changes, a
  // new state never reuses an earlier version, and rollback() returns to
  // the marked state's version (so a cache keyed by version stays valid
  // for states a search comes back to).
  std::uint64_t version() const { return version_; }

  // ---- Checkpoints ----------------------------------------------------

  // Remembers the current (rebuilt) state. Marks nest.
  void mark();
  // Returns to the state of the latest mark and forgets that mark. Costs time
  // proportional to what changed since the mark.
  void rollback();
  // Forgets the latest mark and keeps the changes.
  void release();
  std::size_t num_marks() const { return marks_.size(); }
  // Entries in the undo trail.
  std::size_t trail_size() const;

  // ---- Debugging ------------------------------------------------------

  // Checks the hash-cons, congruence and parent invariants (debug builds run
  // it after every rebuild).
  absl::Status check_invariants() const;
  // A canonical text dump: classes by id, nodes sorted.
  std::string dump() const;

 private:
  struct Counters {
    std::size_t engine_bytes = 0;
    std::size_t num_classes = 0;
    std::size_t nodes_added = 0;
    std::size_t hidden_nodes = 0;
  };
  struct MarkRecord {
    std::size_t trail_size;
    std::size_t num_ids;
    std::size_t num_attrs;
    Counters counters;
    std::uint64_t epoch;
    std::uint64_t version;
    std::vector<std::size_t> by_op_sizes;  // the by-operator index's list lengths
  };
  struct UndoEntry;

  // The limit a node of `cost` bytes would break, once it is in the hash-cons.
  std::optional<AddStatus> over_budget(std::size_t cost) const;
  // Whether `cost` more bytes break the byte budget (no sum when unlimited).
  bool over_byte_budget(std::size_t cost) const {
    return budget_.max_bytes != Budget::kUnlimited && memory_bytes() + cost > budget_.max_bytes;
  }
  // Enters a node that joins class `cls` in its children's parent lists and
  // the by-operator index (and the undo trail).
  void link(const ENode& node, Id cls);
  void snapshot_class(Id id);
  // Logs class `id`'s hidden nodes before they change (keep_leaves).
  void snapshot_hidden(Id id);
  // Moves the non-leaf nodes of class `id`, which keeps only its leaves,
  // from its members to its hidden nodes.
  void hide_non_leaves(Id id);
  // Re-canonicalizes the hidden nodes of `id`, as repair() its members.
  void repair_hidden(Id id, std::vector<std::pair<Id, Id>>& congruent);
  void push_parent(Id child, Id parent);
  void repair(Id id);
  // Re-keys `node`, a non-canonical member (or hidden node) of class `id`,
  // in the hash-cons. True when its canonical form is new there; false when
  // that form was present: the copy is to be dropped, and a congruence with
  // the other class is recorded in `congruent`.
  bool rekey(ENode& node, Id id, std::vector<std::pair<Id, Id>>& congruent);
  // The union itself: merge() after its check, and congruences (equal
  // children give equal data, so they never conflict).
  Id unite(Id a, Id b);
  void refine(Id id);
  // Class `id`'s analysis data changed: its parents are revisited and the
  // analysis may act on it.
  void data_changed(Id id);
  // Appends the canonical ids of `ids`, each once.
  void append_canonical(std::span<const Id> ids, std::vector<Id>& out) const;
  // Moves the canonical ids of `queue`, each once, into `out`; empties `queue`.
  void take_canonical(std::vector<Id>& queue, std::vector<Id>& out) const;
  void log(UndoEntry entry);
  void undo(UndoEntry& entry);
  bool recording() const { return !marks_.empty(); }
  static std::size_t memo_entry_bytes(const ENode& node);
  static std::uint64_t op_bit(Symbol op) { return std::uint64_t{1} << (op.value % 64); }

  const Language* language_;
  Analysis* analysis_;
  // Mutable for intern_value (append-only; rollback truncates it).
  mutable AttrTable attrs_;
  Budget budget_;

  mutable std::vector<Id> parent_;       // union-find (find() compresses paths)
  std::vector<std::uint32_t> set_size_;  // union-find set sizes
  // Per class, one bit per operator it holds (operator index mod 64);
  // merges join them, and nodes never leave a class, so they stay exact
  // up to that folding.
  std::vector<std::uint64_t> ops_;
  std::vector<EClass> classes_;          // by id; empty unless canonical
  absl::flat_hash_map<ENode, Id> memo_;  // hash-cons: node -> (some id of) its class
  std::vector<std::vector<Id>> by_op_;   // classes given a node with each operator
  std::vector<Id> dirty_;                // classes that may hold stale nodes
  std::vector<Id> analysis_pending_;     // classes whose nodes' data must be re-derived
  std::vector<Id> modify_pending_;       // classes whose data changed
  Counters counters_;
  std::uint64_t version_ = 0;
  std::uint64_t last_version_ = 0;  // the newest version given out
  // The e-graph changed: a version no state had before.
  void new_version() { version_ = ++last_version_; }

  std::vector<MarkRecord> marks_;
  std::vector<UndoEntry> trail_;
  std::vector<std::uint64_t> saved_epoch_;  // epoch of each class's latest snapshot
  std::uint64_t epoch_ = 0;

  struct OpCache {
    std::uint64_t version = std::numeric_limits<std::uint64_t>::max();
    std::vector<Id> classes;
  };
  mutable std::vector<OpCache> op_cache_;
  mutable std::vector<std::uint32_t> seen_stamp_;
  mutable std::uint32_t stamp_ = 0;
  // The classes that keep only their leaves (keep_leaves), by index: their
  // hidden nodes, in no order.
  absl::flat_hash_map<std::uint32_t, std::vector<ENode>> hidden_;
  // Scratch space of repair(): nodes whose keys changed.
  std::vector<ENode> rekeyed_nodes_;
};

}  // namespace saturn

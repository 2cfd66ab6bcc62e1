// Internal to the e-graph (egraph.cc, checkpoints.cc): one entry of the
// undo trail that rollback() replays backwards.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "saturn/egraph/egraph.h"

namespace saturn {

// One reversible change, recorded while a mark is active. Rollback undoes the
// entries in reverse order, so each undo sees exactly the state its change
// left behind.
struct EGraph::UndoEntry {
  struct UnionLink {  // `loser` was linked below `root`
    Id loser, root;
    std::uint32_t old_root_size;
  };
  struct ClassSnapshot {  // a class before its first change since the mark
    Id id;
    EClass old;
    std::uint64_t old_ops;
    std::uint64_t old_epoch;
  };
  struct ParentPushed {  // a parent appended to an old class
    Id id;
  };
  struct MemoInserted {
    ENode key;
  };
  struct MemoErased {
    ENode key;
    Id value;
  };
  struct HiddenSnapshot {  // a class's hidden nodes before they changed
    Id id;
    bool kept_leaves;  // whether the class kept only its leaves then
    std::vector<ENode> old;
  };
  std::variant<UnionLink, ClassSnapshot, ParentPushed, MemoInserted, MemoErased,
               HiddenSnapshot>
      change;
};

}  // namespace saturn

// The transformer blocks a graph holds, each either fused into one of the
// IR's fused operators or spelled out in primitives: what `saturn optimize`
// reports as fused against present.
//
//   BlockCounts c = count_blocks(graph);
//   c[BlockKind::kAttention].fused;    // GroupQueryAttention nodes
//   c[BlockKind::kAttention].spelled;  // softmax(q k^T ...) spelled out
//
// A spelled-out block is found by its anchor, one per block in the spellings
// exporters write:
//   attention      a Softmax of scores from a MatMul of two computed values
//                  (q and k, not a weight), through elementwise scaling,
//                  masking and reshapes;
//   normalization  a Sqrt of a ReduceMean (plus epsilon): LayerNorm's and
//                  RMSNorm's deviation;
//   rotary         rotate_half: the Concat of -x2 (Neg, or a product by -1)
//                  and x1, the two halves of one value sliced on the last
//                  axis (the half-split layout; the interleaved one is not
//                  counted).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "saturn/tensor/graph.h"

namespace saturn::tensor {

enum class BlockKind { kAttention, kNormalization, kRotary };
inline constexpr std::array<BlockKind, 3> kBlockKinds = {BlockKind::kAttention,
                                                         BlockKind::kNormalization,
                                                         BlockKind::kRotary};
std::string_view to_string(BlockKind kind);

struct BlockCount {
  int fused = 0;    // fused operators of the kind
  int spelled = 0;  // anchors of the kind's spelled-out form
  int present() const { return fused + spelled; }
};

struct BlockCounts {
  std::array<BlockCount, kBlockKinds.size()> counts;
  BlockCount& operator[](BlockKind k) { return counts[static_cast<std::size_t>(k)]; }
  const BlockCount& operator[](BlockKind k) const { return counts[static_cast<std::size_t>(k)]; }
};

BlockCounts count_blocks(const Graph& graph);

}  // namespace saturn::tensor

#include "saturn/tensor/blocks.h"

#include <optional>
#include <vector>

#include "absl/status/statusor.h"

namespace saturn::tensor {

namespace {

bool is_fixed(const Node& n) { return n.op == Op::kWeight || n.op == Op::kConstant; }

// What exporters put between the scores' product and their softmax: a
// scale, a mask or a bias (Where picks between them), a cast, the reshapes
// of exports that multiply the heads as one batch, and an Identity (a scale
// of 1 the import dropped).
bool is_scaling_or_masking(Op op) {
  return op == Op::kAdd || op == Op::kSub || op == Op::kMul || op == Op::kDiv ||
         op == Op::kWhere || op == Op::kCast || op == Op::kReshape || op == Op::kIdentity;
}

class Anchors {
 public:
  Anchors(const Graph& g, const std::vector<ValueType>* types) : g_(g), types_(types) {}

  const Node& input(const Node& n, std::size_t k) const {
    return g_.nodes[static_cast<std::size_t>(n.inputs[k])];
  }

  // Softmax(... MatMul(q, k) ...) with q and k computed.
  bool attention(const Node& softmax) const {
    const Node* n = &input(softmax, 0);
    for (int depth = 0; depth < 6; ++depth) {
      if (n->op == Op::kMatMul) return !is_fixed(input(*n, 0)) && !is_fixed(input(*n, 1));
      if (!is_scaling_or_masking(n->op)) return false;
      // Follow the scores: the first computed operand (a mask or a scale
      // is the other one, or both are computed and the scores come first).
      const Node* next = nullptr;
      for (std::size_t k = 0; k < n->inputs.size() && next == nullptr; ++k) {
        const Node& in = input(*n, k);
        if (!is_fixed(in) && (n->op != Op::kWhere || k > 0)) next = &in;
      }
      if (next == nullptr) return false;
      n = next;
    }
    return false;
  }

  // Sqrt(ReduceMean(...) [+ epsilon]).
  bool normalization(const Node& sqrt) const {
    const Node* n = &input(sqrt, 0);
    if (n->op == Op::kAdd) {
      const Node& a = input(*n, 0);
      const Node& b = input(*n, 1);
      n = is_fixed(b) ? &a : is_fixed(a) ? &b : nullptr;
    }
    return n != nullptr && n->op == Op::kReduceMean;
  }

  // Concat(-Slice(x), Slice(x)) on the last axis.
  bool rotary(const Node& concat) const {
    if (concat.inputs.size() != 2 || !last_axis(concat)) return false;
    const Node& negated = input(concat, 0);
    const Node& first = input(concat, 1);
    std::optional<int> second;
    if (negated.op == Op::kNeg) second = negated.inputs[0];
    if (negated.op == Op::kMul && input(negated, 1).op == Op::kConstant &&
        input(negated, 1).attributes.get_float("value") == -1.0)
      second = negated.inputs[0];
    if (!second || first.op != Op::kSlice) return false;
    const Node& s = g_.nodes[static_cast<std::size_t>(*second)];
    return s.op == Op::kSlice && s.inputs[0] == first.inputs[0];
  }

 private:
  bool last_axis(const Node& concat) const {
    const std::optional<std::int64_t> axis = concat.attributes.get_int("axis");
    if (axis == -1) return true;
    if (types_ == nullptr || !axis) return false;
    const ValueType& t = (*types_)[static_cast<std::size_t>(concat.inputs[0])];
    return !t.is_tuple && *axis == static_cast<std::int64_t>(t.tensor().rank()) - 1;
  }

  const Graph& g_;
  const std::vector<ValueType>* types_;  // null where the graph does not type
};

std::optional<BlockKind> fused_kind(Op op) {
  switch (op) {
    case Op::kGroupQueryAttention:
      return BlockKind::kAttention;
    case Op::kLayerNorm:
    case Op::kSimplifiedLayerNorm:
    case Op::kSkipLayerNorm:
    case Op::kSkipSimplifiedLayerNorm:
      return BlockKind::kNormalization;
    case Op::kRotaryEmbedding:
      return BlockKind::kRotary;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::string_view to_string(BlockKind kind) {
  switch (kind) {
    case BlockKind::kAttention:
      return "attention";
    case BlockKind::kNormalization:
      return "normalization";
    case BlockKind::kRotary:
      return "rotary";
  }
  return "?";
}

BlockCounts count_blocks(const Graph& graph) {
  BlockCounts out;
  const absl::StatusOr<std::vector<ValueType>> types = infer_types(graph);
  const Anchors anchors(graph, types.ok() ? &*types : nullptr);
  for (const Node& n : graph.nodes) {
    if (std::optional<BlockKind> kind = fused_kind(n.op)) ++out[*kind].fused;
    if (n.op == Op::kSoftmax && anchors.attention(n)) ++out[BlockKind::kAttention].spelled;
    if (n.op == Op::kSqrt && anchors.normalization(n)) ++out[BlockKind::kNormalization].spelled;
    if (n.op == Op::kConcat && anchors.rotary(n)) ++out[BlockKind::kRotary].spelled;
  }
  return out;
}

}  // namespace saturn::tensor

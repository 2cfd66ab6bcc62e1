// NasRNN (Zoph & Le, 2017): 5 recurrent steps of a NAS-discovered cell with
// hidden size 512, batch 1; one set of cell weights shared by all steps.
#include <array>
#include <string>

#include "fmt/format.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

constexpr std::int64_t kNasrnnHidden = 512;
constexpr int kNasrnnSteps = 5;
constexpr int kNasrnnBranches = 8;

// The cell's weights, created once and reused at every step.
struct CellWeights {
  std::array<Value, kNasrnnBranches> wx, wh, bias;
};

CellWeights make_cell_weights(GraphBuilder& b) {
  CellWeights w;
  for (int i = 0; i < kNasrnnBranches; ++i) {
    w.wx[i] = b.weight(fmt::format("cell.branch{}.wx", i), {kNasrnnHidden, kNasrnnHidden});
    w.wh[i] = b.weight(fmt::format("cell.branch{}.wh", i), {kNasrnnHidden, kNasrnnHidden});
    w.bias[i] = b.weight(fmt::format("cell.branch{}.bias", i), {kNasrnnHidden});
  }
  return w;
}

Value apply(GraphBuilder& b, Op activation, Value x) { return b.node(activation, {x}); }

// op(f(x), g(y)), building f(x) before g(y) so node order is fixed.
Value combine(GraphBuilder& b, Op op, Op f, Value x, Op g, Value y) {
  Value fx = apply(b, f, x);
  Value gy = apply(b, g, y);
  return b.node(op, {fx, gy});
}

// One step: eight branches x @ Wx + h @ Wh + bias, merged pairwise into a tree
// with mixed activations; the root is the new hidden state.
Value nas_cell(GraphBuilder& b, const CellWeights& w, Value x, Value h) {
  std::array<Value, kNasrnnBranches> t;
  for (int i = 0; i < kNasrnnBranches; ++i) {
    Value from_x = b.matmul(x, w.wx[i]);
    Value from_h = b.matmul(h, w.wh[i]);
    t[i] = b.add(b.add(from_x, from_h), w.bias[i]);
  }
  Value m0 = combine(b, Op::kAdd, Op::kSigmoid, t[0], Op::kRelu, t[1]);
  Value m1 = combine(b, Op::kMul, Op::kTanh, t[2], Op::kSigmoid, t[3]);
  Value m2 = combine(b, Op::kAdd, Op::kRelu, t[4], Op::kTanh, t[5]);
  Value m3 = combine(b, Op::kMul, Op::kSigmoid, t[6], Op::kTanh, t[7]);
  Value n0 = combine(b, Op::kMul, Op::kTanh, m0, Op::kSigmoid, m1);
  Value n1 = combine(b, Op::kAdd, Op::kRelu, m2, Op::kTanh, m3);
  return b.tanh(b.mul(n0, n1));
}

}  // namespace

absl::StatusOr<Graph> build_nasrnn() {
  GraphBuilder b("nasrnn");
  std::array<Value, kNasrnnSteps> xs;
  for (int i = 0; i < kNasrnnSteps; ++i) xs[i] = b.input(fmt::format("x{}", i), {1, kNasrnnHidden});
  Value h = b.input("h0", {1, kNasrnnHidden});
  CellWeights w = make_cell_weights(b);
  for (int i = 0; i < kNasrnnSteps; ++i) h = nas_cell(b, w, xs[i], h);
  b.output(h, fmt::format("h{}", kNasrnnSteps));
  return b.build();
}

}  // namespace saturn::tensor

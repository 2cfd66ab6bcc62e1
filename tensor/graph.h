// A tensor program as a flat list of nodes in topological order (a node's
// inputs come before it), with named graph outputs and weight contents.
// Every node yields one value: a tensor, or a tuple read with TupleGet.
//
//   Graph g = *GraphBuilder("mlp")...build();   // see builder.h
//   absl::StatusOr<std::vector<ValueType>> types = infer_types(g);
//   op_counts(g);   // {{Op::kMatMul, 2}, {Op::kRelu, 1}, ...}
#pragma once

#include <cstdint>
#include <map>
#include <compare>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/tensor.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor {

struct Node {
  Op op = Op::kIdentity;
  Attributes attributes;    // normalized (see normalize_attributes)
  std::vector<int> inputs;  // indices of earlier nodes
  std::string name;         // optional; names the node's value in files
};

struct GraphOutput {
  int node = 0;
  std::string name;
};

// How a weight's values are obtained: explicit data, or seeded uniform
// random values in [low, high) (so large models need not store weights).
struct WeightInit {
  std::shared_ptr<const Tensor> data;
  std::uint64_t seed = 0;
  float low = -0.1f, high = 0.1f;
};

// An operator the importer computed once (its output became a weight) whose
// source model's runtime computes it on every run: it reads a value derived
// from the shape of an input with a symbolic dimension, which onnxruntime's
// constant folding leaves to run time (DINOv2's position table, resized to
// sizes computed from the image's height and width). The graph no longer
// holds it; the input as the runtime runs it does (Graph::folded_at_import).
struct FoldedWork {
  Op op = Op::kIdentity;
  Attributes attributes;
  std::vector<ValueType> inputs;
  ValueType output;
  std::string name;                // the value it computed
  std::vector<std::string> reads;  // the values it read, by name
};

// ONNX operator-set imports: (domain, version) pairs.
using Opsets = std::vector<std::pair<std::string, std::int64_t>>;

// The version of the default ONNX domain ("" or "ai.onnx") in `opsets`; 0
// when they name none (a model built in saturn).
inline std::int64_t default_domain_opset(const Opsets& opsets) {
  for (const auto& [domain, version] : opsets)
    if (domain.empty() || domain == "ai.onnx") return version;
  return 0;
}

// The symbolic dimensions (ONNX dim_param) of a model's interface. Shapes in
// the IR are concrete: each symbol stands at the size it was given for shape
// inference and costing. Exporters write the symbols back, and write
// size-dependent constants so that the model holds for any size.
struct Symbols {
  std::map<std::string, std::int64_t> sizes;
  // The axes of a graph input or output, by its name: each axis's symbol,
  // "" for a fixed axis.
  std::map<std::string, std::vector<std::string>> axes;

  bool empty() const { return sizes.empty(); }
  bool operator==(const Symbols&) const = default;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<GraphOutput> outputs;
  // Keyed by the weight node's `name` attribute.
  absl::flat_hash_map<std::string, WeightInit> weights;
  // Default values of graph inputs, keyed by the input's `name` (ONNX, IR 4
  // and later: an initializer named like a graph input). The input stays an
  // input, since a caller may override it; exporters write the default back.
  absl::flat_hash_map<std::string, std::shared_ptr<const Tensor>> input_defaults;
  // The operator sets the model was written for, as ONNX opset imports
  // ({"", 13} is the default domain at version 13); empty for models built
  // in saturn. Exporters write the model back for the same opsets.
  Opsets opsets;
  // The ONNX IR version of the file the graph was read from (0: built in
  // saturn); exporters write the model at it, or at the one their opset
  // needs where that is later.
  std::int64_t ir_version = 0;
  Symbols symbols;
  // Whether onnxruntime fuses a residual sum with the normalization after
  // it (its SkipLayerNormFusion) in the model it runs for this graph as it
  // came. For a graph read from ONNX that model is the file, and the fusion
  // needs onnxruntime to type the sum's operands at load: the file has no
  // symbolic dimensions, or declares its intermediate values' shapes
  // (value_info, as the dynamo exporter writes and saturn's exports do). A
  // file with symbolic sizes computed by shape arithmetic and no value_info
  // (torch.onnx's TorchScript exports) loads untyped there. Seen on the
  // corpus: BERT-base loads with LayerNorm and Add apart; the same model
  // with its dimensions fixed, and ALBERT-base with value_info, load with
  // SkipLayerNormalization. A graph built in saturn (GraphBuilder, the zoo,
  // a JSON model) runs as saturn writes it, with such a LayerNorm spelled
  // out so that onnxruntime fuses neither (onnx/export_fused.cc): false,
  // the default (one spelled in primitives would fuse there; its input is
  // then priced low, never a result's gain high). The importer sets it.
  bool skip_normalizations_at_load = false;
  // The ONNX file the graph was read from (load_onnx_model), "" otherwise:
  // a graph with symbolic dimensions is read from it again at other sizes
  // to check that a rewrite holds at any size, and a graph kept as it came
  // is written as a copy of it.
  std::string source;
  // Why the importer kept each opaque node opaque ("no IR operator", "input
  // 0 has no static shape", ...), by the node's name.
  std::map<std::string, std::string> opaque_reasons;
  // The values the graph's shape arithmetic takes at the given sizes of its
  // symbolic dimensions where they change with the sizes (a sequence
  // length, a Range's limit), by node name (or a region's input name): the
  // self-check feeds them, not random numbers, to the inputs of a region
  // that reads them.
  absl::flat_hash_map<std::string, std::shared_ptr<const Tensor>> size_values;
  // What the importer folded that the source's runtime computes on every
  // run, in the order folded: the input's price includes it (a graph the
  // importer read; a search's result holds none).
  std::vector<FoldedWork> folded_at_import;

  int size() const { return static_cast<int>(nodes.size()); }
};

// Types every node; the error names the first node that does not type-check
// (or an input that is not earlier in the list).
absl::StatusOr<std::vector<ValueType>> infer_types(const Graph& graph);

// Whether each node depends only on weights and constants, so it can be
// computed once when the model loads.
std::vector<bool> weight_only_nodes(const Graph& graph);
// Whether node `x` is a DequantizeLinear of weights only (`weight_only`,
// from weight_only_nodes): a quantized weight. Quantization is never
// computed ahead, so weight_only_nodes does not hold it.
bool is_quantized_weight(const Graph& graph, const std::vector<bool>& weight_only, int x);

// The matrix product a product of an activation by a weight runs as:
// [rows, depth] x [depth, columns], a convolution in its im2col form.
struct MatrixProduct {
  std::int64_t rows = 0, depth = 0, columns = 0;
  double macs() const {
    return static_cast<double>(rows) * static_cast<double>(depth) * static_cast<double>(columns);
  }
  auto operator<=>(const MatrixProduct&) const = default;
};
// The matrix product of `op` (a MatMul or Gemm of a 2-D weight, or an
// ungrouped Conv) reading a weight of type `weight` into `output`: each
// output element sums over the weight's elements of one output channel.
// Nothing for another op, a grouped convolution or a shape that does not
// fit; symbolic dimensions count as 1.
std::optional<MatrixProduct> matrix_product(Op op, const Attributes& attributes,
                                            const ValueType& weight, const ValueType& output);

// Whether a weight-only `op` reading `in` widens an 8-bit integer weight of
// at least kWidenedWeightElements to float (`out`): such a Cast is computed
// ahead (free to the extraction) but neither import nor export folds it.
// The model keeps the integer tensor and the runtime widens it once, at
// load (onnxruntime's constant folding), rather than the file holding it at
// four times its size. The import spells a quantized weight's
// DequantizeLinear so where onnxruntime would compute it on every run
// (onnx/import_at_load.cc).
inline constexpr std::int64_t kWidenedWeightElements = 1024;
bool widens_integer_weight(Op op, const TensorType& in, const TensorType& out);

// The values of a weight node's tensor.
absl::StatusOr<Tensor> materialize_weight(const Graph& graph, const Node& weight);

// Whether each node matters: the graph outputs depend on it, or it is a graph
// input (inputs are the model's interface, used or not).
std::vector<bool> live_nodes(const Graph& graph);

// The bytes of weights a runtime holds while the model runs: the live
// weight-only values that a computed node or a graph output reads (each
// weight-only subgraph is computed once at load time and only its results
// stay). `types` from infer_types.
std::int64_t resident_weight_bytes(const Graph& graph, std::span<const ValueType> types);

// The attributes of an Input or Weight node.
Attributes leaf_attributes(std::string name, Dims dims, DType dtype);

// Counts of the operators that do work: every node but inputs, weights,
// constants, tuple plumbing and identities.
std::map<Op, int> op_counts(const Graph& graph);
int total_ops(const Graph& graph);
// How many operators of `graph` are opaque, by ONNX op type ("domain::Type"
// outside the default domain).
std::map<std::string, int> opaque_op_types(const Graph& graph);
// The same, by op type and then by the importer's reason (Graph::opaque_reasons).
std::map<std::string, std::map<std::string, int>> opaque_op_reasons(const Graph& graph);

// The operators of Graph::folded_at_import by type, in the order first
// folded: "Resize x1, Transpose x2"; "" when there are none.
std::string folded_work_summary(const Graph& graph);

// A node's display name: its own name, or "%<index>".
std::string node_label(const Graph& graph, int index);

// The graph in Graphviz DOT: one box per operator (with its output shape),
// inputs and outputs as ellipses; weights are left out to keep it readable.
std::string to_dot(const Graph& graph);

}  // namespace saturn::tensor

// Shapes as an e-class analysis: every e-class of tensor operators carries
// its value type, and whether it depends on weights only (then it can be
// computed once at load time and costs nothing at run time).
//
//   TensorLanguage lang;
//   TensorAnalysis shapes;
//   EGraph egraph(lang, &shapes);
//   std::vector<Id> ids = add_graph(egraph, graph);   // one id per graph node
//   shapes.info(egraph.find(ids.back())).type;
//
// A node whose inputs' types do not fit is refused by `make`, so a rewrite
// whose result would not type-check is simply not applied; neither is one
// whose result type differs from the matched class's (`contradict`). For a
// graph with symbolic dimensions, a node is typed at the probe sizes too,
// and a new node that does not type-check there is refused: a rewrite that
// holds at the given sizes only (a broadcast over a batch of 1 taken for
// equal shapes) is not applied.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "saturn/egraph/analysis.h"
#include "saturn/egraph/egraph.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/probe.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor {

struct TensorInfo {
  ValueType type;
  bool weight_only = false;
  // The type at the probe sizes of the graph's symbolic dimensions
  // (tensor/probe.h); nullopt when the graph has none or it is not known.
  // Two members that disagree there leave it unknown.
  std::optional<ValueType> probe;
};

class TensorAnalysis final : public TypedAnalysis<TensorInfo> {
 public:
  const TensorInfo& info(Id canonical) const { return data(canonical); }
  // Nodes refused because they did not type-check.
  std::size_t refused() const { return refused_; }

  // Where conditions that read weight values find them: the weights of the
  // graph the e-graph was built from (add_graph sets it; the map must
  // outlive the analysis' use).
  void set_weights(const absl::flat_hash_map<std::string, WeightInit>* weights) {
    weights_ = weights;
  }
  // The graph's symbolic dimensions: nodes are typed at their probe sizes
  // too (add_graph sets them). While `lenient`, a node that does not
  // type-check at the probe sizes is kept with its probe type unknown (the
  // input graph's own nodes); after, it is refused. `opset` is the
  // graph's default-domain opset (what the export writes: probe_node_type).
  void set_symbols(const Symbols& symbols, std::int64_t opset);
  void set_lenient(bool lenient) { lenient_ = lenient; }
  // New nodes refused because they type-check at the given sizes only.
  std::size_t refused_at_other_sizes() const { return refused_at_probe_; }
  // The values of class `id` when it holds a weight whose values are given
  // (not drawn from a seed); null otherwise.
  const Tensor* weight_values(const EGraph& egraph, Id id) const;
  // Whether e-node `node` is a DequantizeLinear of weights only: a
  // quantized weight (the e-graph's is_quantized_weight, tensor/graph.h).
  bool is_quantized_weight(const EGraph& egraph, const ENode& node) const;

 protected:
  std::optional<TensorInfo> make_data(const EGraph& egraph, const ENode& node) override;
  JoinResult join(TensorInfo& into, const TensorInfo& from) override;
  // Values of different types are never equal: a rewrite claiming so is
  // unsound and the e-graph refuses it.
  bool contradict(const TensorInfo& a, const TensorInfo& b) const override {
    return !(a.type == b.type);
  }
  bool is_top(const TensorInfo& info) const override { return info.weight_only; }
  std::size_t data_bytes(const TensorInfo& info) const override;

 private:
  // The node's probe type; `refuse` is set when it holds at the base sizes only.
  std::optional<ValueType> probe_type(const EGraph& egraph, const ENode& node, Op op,
                                      const Attributes& attributes,
                                      std::span<const ValueType> inputs, const ValueType& base,
                                      bool& refuse) const;

  std::size_t refused_ = 0, refused_at_probe_ = 0;
  const absl::flat_hash_map<std::string, WeightInit>* weights_ = nullptr;
  Symbols symbols_;
  std::int64_t opset_ = 0;
  std::map<std::string, std::int64_t> probe_sizes_;
  std::vector<SymbolSize> symbol_sizes_;  // ordered_symbol_sizes
  bool lenient_ = true;
};

// Adds every node of `graph` to `egraph` (whose language must be a
// TensorLanguage) and returns each node's class. Fails if a node does not
// fit the e-graph's budget or is refused by its analysis.
absl::StatusOr<std::vector<Id>> add_graph(EGraph& egraph, const Graph& graph);

// A graph output as an e-class.
struct ClassOutput {
  Id eclass;
  std::string name;
};

// The graph an extraction picked: starting from `outputs` (class, name),
// each class becomes the node `chosen(class)` returns (one of its e-nodes).
// Weights keep their contents from `source` (the graph the e-graph was
// built from). Fails on a missing choice or a cycle.
absl::StatusOr<Graph> graph_from_egraph(const EGraph& egraph, const Graph& source,
                                        std::span<const ClassOutput> outputs,
                                        const std::function<const ENode*(Id)>& chosen);

}  // namespace saturn::tensor

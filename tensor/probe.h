// Types at other sizes of the symbolic dimensions. The IR's shapes are
// concrete: each symbol stands at the size it was given (its base). To see
// what holds at any size, a graph is typed a second time with each symbol at
// its probe size (the base plus a prime of its own, so that no two symbols
// nor their products are mistaken for each other). The exporter does it to
// write a model for any size (onnx/export_symbolic.cc); the shape
// analysis does it so that a rewrite that holds at the base sizes only (a
// broadcast over a batch of 1 taken for equal shapes) is refused.
//
// An axis of a graph input (Symbols::axes) is "" (fixed), a symbol's name,
// a product of symbols ("batch*heads", a region's input), or "?" (follows
// the symbols in a way no product says: unknown at the probe sizes).
#pragma once

#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor {

using ProbeSizes = std::map<std::string, std::int64_t>;
using Ints = std::vector<std::int64_t>;

// Each symbol's probe size: its base plus a prime of its own.
ProbeSizes probe_sizes(const Symbols& symbols);

// The size of an axis ("", "seq", "batch*seq") at `sizes`; nullopt for "?"
// or a symbol `sizes` lacks. "" is nullopt too: a fixed axis keeps its size.
std::optional<std::int64_t> axis_size(std::string_view axis, const ProbeSizes& sizes);

// The axis naming an axis of `base` size that is `probe` at the probe
// sizes: "" when they are equal, a symbol or a product of two, else "?".
std::string axis_expression(std::int64_t base, std::int64_t probe, const Symbols& symbols,
                            const ProbeSizes& probe_sizes);

// An opaque node's output shapes at the probe sizes, as the importer found
// them with ONNX's shape inference (the layout of "out_shapes"); a node
// sized by values (tensor/ops.h) carries its output's the same way.
inline constexpr std::string_view kProbeShapes = "probe_shapes";
// The probe type of an opaque node or of one sized by values
// (kProbeShapes, its base type's dtypes);
// nullopt when the importer did not find it.
std::optional<ValueType> opaque_probe_type(const Attributes& attributes, const ValueType& base);

// Every node's type at the probe sizes, nullopt where it is not known (an
// opaque node the importer could not type there, what reads one, and what
// holds at the given sizes only). `types` are the base types.
std::vector<std::optional<ValueType>> probe_types(const Graph& graph,
                                                  const std::vector<ValueType>& types);

// Graph input `name`'s type at the probe sizes (its axes in `symbols`);
// nullopt when an axis is unknown there.
std::optional<ValueType> probe_input_type(const Symbols& symbols, const ProbeSizes& probe_sizes,
                                          const std::string& name, const ValueType& base);

// A symbol's size at the base and at the probe sizes.
struct SymbolSize {
  std::int64_t base = 0, probe = 0;
};
// The symbols' sizes in the order the graph's inputs first name them (a
// batch before its tokens, as models lay them out): the order in which a
// reshape splits an axis that holds several of them.
std::vector<SymbolSize> ordered_symbol_sizes(const Symbols& symbols, const ProbeSizes& sizes);

// An axis of a written reshape's shape whose size is read at run time from
// a value with an axis of that size at the base and the probe sizes (the
// exporter finds one): where an axis holding several symbols is split, 0
// and a single -1 cannot say every part.
inline constexpr std::int64_t kAxisAtRunTime = INT64_MIN;

// A reshape written for any size of the symbolic dimensions.
struct GenericReshape {
  Ints shape;  // to write: 0 copies the input's axis, -1 takes the rest, or kAxisAtRunTime
  Dims probe;  // the output shape at the probe sizes
};
// The shape that reshapes `in_base` to `out_base` and gives a consistent
// shape for `in_probe` (the input at other sizes of its symbols), or nullopt.
// `symbols` (ordered_symbol_sizes) lets it split an axis that merged
// several symbols into axes of their own.
std::optional<GenericReshape> generic_reshape(const Dims& in_base, const Dims& in_probe,
                                              const Dims& out_base,
                                              std::span<const SymbolSize> symbols = {});

// A node at the probe sizes: its type there, and the attributes that hold at
// any size (a Reshape's shape with 0 and -1, a Slice running to the end of a
// following axis with an open end).
struct ProbedNode {
  ValueType type;
  Attributes attributes;
};
// Types a (non-opaque) node at the probe sizes from its inputs' base and
// probe types and its base type; an error says why it holds at the base
// sizes only.
// `opset` is the model's default-domain opset, which decides how the export
// writes a node (GroupQueryAttention with its sequence lengths as constants
// before opset 23, as the standard Attention from it on).
absl::StatusOr<ProbedNode> probe_node_type(Op op, const Attributes& attributes,
                                           std::span<const ValueType> base_inputs,
                                           std::span<const ValueType> probe_inputs,
                                           const ValueType& base, std::int64_t opset,
                                           std::span<const SymbolSize> symbols);

}  // namespace saturn::tensor

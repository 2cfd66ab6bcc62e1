// Internal to the ONNX exporter (export.cc, export_ops.cc): the Exporter,
// which writes an IR graph as an ONNX model.
//
//   export.cc      the entry points, liveness and folded weights, value names,
//                  the graph's interface (inputs, outputs, value_info)
//   export_ops.cc  each IR operator written as ONNX nodes
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "onnx/onnx_pb.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/probe.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/tensor.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor::onnx_io {

using Ints = std::vector<std::int64_t>;

inline constexpr std::int64_t kDefaultOpset = 17;

// A model the exporter wrote (at libonnx's newest opset, max_onnx_opset(),
// or older), respelled for the newer default-domain opset `opset` its source
// was written for: the reductions' axes attribute becomes their input
// (opset 18), a Split without sizes names its num_outputs (18), GridSample's
// modes take their opset-20 names, and the IR version rises to the one that
// introduced `opset`. Nothing of that happens when the model is at `opset`
// already. The IR version then rises to `ir_version` where that is later
// (the source file's: a model is written back at its own). The inverse of
// lower_to_opset (importer.h), run after libonnx's checks, which know no
// opset or IR version past their own.
void raise_to_versions(onnx::ModelProto& model, std::int64_t opset, std::int64_t ir_version);

// Writes `model` to `fd` as its serialization would read, each initializer
// named in `weights` with that tensor's bytes as its raw_data (the proto
// holds it empty): the weights go from the graph's tensors (or the mapped
// input file) to the file without another copy. False when writing fails.
bool write_model(const onnx::ModelProto& model, const std::map<std::string, Tensor>& weights,
                 int fd);
// `model` as the ONNX checker can read it: each initializer named in
// `weights` (its bytes not in the proto, which the checker refuses) a graph
// input of its type instead.
onnx::ModelProto checkable(const onnx::ModelProto& model,
                           const std::map<std::string, Tensor>& weights);
// The size of what write_model writes.
std::size_t written_size(const onnx::ModelProto& model,
                         const std::map<std::string, Tensor>& weights);
// Writes the initializers of at least kLargeInitializerBytes (from
// `weights` where deferred, else from the proto) to `data_path`, each at an
// aligned offset, and makes them external data of `model` there.
absl::Status write_external_data(onnx::ModelProto& model,
                                 const std::map<std::string, Tensor>& weights,
                                 const std::filesystem::path& data_path);

// Initializers of at least this many bytes are what a file writer takes
// from their tensors instead of the proto (Exporter::deferred_weights), and
// what goes to an external data file past protobuf's limit.
inline constexpr std::size_t kLargeInitializerBytes = 1024;

class Exporter {
 public:
  // With `defer_weights`, the large initializers are written without their
  // bytes (an empty raw_data) and deferred_weights() holds their tensors,
  // for write_model to stream into the file: the weights are not copied
  // into the proto.
  explicit Exporter(const Graph& graph, bool defer_weights = false)
      : g_(graph), defer_weights_(defer_weights) {}

  // The model, not yet checked (see check_exported).
  absl::StatusOr<onnx::ModelProto> run();
  // The initializers run() left without their bytes, by name.
  const std::map<std::string, Tensor>& deferred_weights() const { return deferred_; }

 private:
  const TensorType& type(int node) const { return types_[node].parts[0]; }

  // The graph (export.cc).

  // Live: what an output depends on (and every graph input). Folded: live
  // weight-only nodes the interpreter can compute; those that feed the rest
  // of the graph are written as initializers.
  void mark_live_and_foldable();
  std::string fresh(std::string_view base);
  // Takes `wanted` when free (reserved names only for their owner), else a
  // fresh name.
  std::string claim(const std::string& wanted, bool owner);
  void assign_names();
  // The enclosing-graph values an opaque node's subgraphs read, in the
  // order the importer appended them as inputs.
  static std::vector<std::string> subgraph_reads(const Node& node);
  // Computes the folded nodes that feed the graph and writes them (and the
  // weights among them) as initializers.
  absl::Status write_folded();
  // The ONNX type of part `p` of node `i`.
  absl::Status value_type(int i, std::size_t p, onnx::TypeProto* type) const;
  // Graph inputs, outputs and value_info.
  absl::Status write_interface();

  // Symbolic dimensions (export_symbolic.cc): every value's type at the
  // probe sizes, and the attributes written for any size.

  bool symbolic() const { return !g_.symbols.empty(); }
  // The probe sizes, and the probe types of the inputs (the rest start as
  // their base types).
  void start_probe();
  // Node `i`'s probe type, before it is written; a Reshape or Slice gets the
  // attributes to write in written_. An error when the node holds at the
  // base sizes only.
  // Whether node `i` is typed at the probe sizes by ONNX's inference of
  // the nodes written for it (probe_opaque): an opaque node, or one sized by
  // values without the importer's probe type.
  bool by_inference(int i) const {
    const Node& n = g_.nodes[i];
    return n.op == Op::kOpaque || (sized_by_values(n.op, n.inputs.size()) &&
                                   !opaque_probe_type(n.attributes, types_[i]));
  }
  absl::Status probe_node(int i);
  // An opaque node's probe types, by ONNX shape inference on the protos it
  // was written as (from `first_proto` on).
  absl::Status probe_opaque(int i, int first_proto);
  // The small values (shape arithmetic) the protos written from
  // `first_proto` on compute, at the base and at the probe sizes
  // (shape_values.h), so that an opaque node reading one is typed at the
  // probe sizes with its value there.
  void track_shape_values(int first_proto);
  // A value by name at the base or the probe sizes, when known.
  const Tensor* shape_value(const std::string& name, bool probe);
  // The symbols whose axes `inputs` carry, for messages.
  std::string following_symbols(std::span<const int> inputs) const;
  // Names the axes of `type` (part `p` of node `i`) that follow one symbol,
  // and clears those that follow several.
  void name_axes(int i, std::size_t p, onnx::TypeProto* type) const;
  // A graph input's or output's axes as the model named them.
  absl::Status name_interface_axes(const std::string& name, int i, std::size_t p,
                                   onnx::TypeProto* type) const;

  // Writes `value` as initializer `name` of `graph` (out_ when null), its
  // bytes deferred when the exporter defers weights and `graph` is out_.
  void add_initializer(const Tensor& value, const std::string& name,
                       onnx::GraphProto* graph = nullptr);
  // Initializer `index` of out_ as a tensor, its bytes read where they are
  // (deferred or in the proto).
  absl::StatusOr<Tensor> initializer_value(int index) const;

  // The operators (export_ops.cc).

  std::string constant(const Tensor& value);
  std::string ints_constant(const Ints& values);
  // In the float type of the node being written (float_type_).
  std::string scalar_constant(double value);
  onnx::NodeProto* node(std::string_view op_type, std::vector<std::string> inputs,
                        std::vector<std::string> outputs);
  // A node of one of onnxruntime's fused operators, in its domain (imported
  // at version 1 when the model does not import it yet).
  onnx::NodeProto* runtime_node(Op op, std::vector<std::string> inputs,
                                std::vector<std::string> outputs);
  // A node of `domain`, whose opset the model then imports (version 1).
  onnx::NodeProto* domain_node(const std::string& domain, std::string_view op_type,
                               std::vector<std::string> inputs, std::vector<std::string> outputs);
  // `x` transformed by a chain of unary ONNX operators into `out`.
  std::string unary(std::string_view op_type, const std::string& x, std::string out = {});
  std::string binary(std::string_view op_type, const std::string& a, const std::string& b,
                     std::string out = {});
  // A node's `axis` attribute as a non-negative axis of input `k` (negative
  // axes are valid ONNX only from opset 11).
  std::int64_t axis_of(const Node& n, std::size_t k) const;

  // Writes node `i`: dispatches to the functions below, by operator.
  absl::Status emit(int i);
  // Matrix products, convolution and pooling.
  absl::Status emit_gemm(const Attributes& a, const std::vector<std::string>& in,
                         const std::string& out);
  absl::Status emit_conv(Op op, const Attributes& a, const std::vector<std::string>& in,
                         const std::string& out);
  absl::Status emit_pool(Op op, const Attributes& a, const std::vector<std::string>& in,
                         const std::string& out);
  // Elementwise operators.
  absl::Status emit_gelu(const std::vector<std::string>& in, const std::string& out);
  absl::Status emit_shape_or_cast(Op op, const Attributes& a, const std::vector<std::string>& in,
                                  const std::string& out);
  absl::Status emit_clip(const Attributes& a, const std::vector<std::string>& in,
                         const std::string& out);
  // Normalizations and reductions.
  absl::Status emit_softmax(const Attributes& a, const std::vector<std::string>& in,
                            const std::string& out, std::size_t rank);
  absl::Status emit_layer_norm(int i, const std::vector<std::string>& in, const std::string& out,
                               std::size_t rank);
  absl::Status emit_simplified_layer_norm(const Attributes& a, const std::vector<std::string>& in,
                                          const std::string& out, std::size_t rank);
  absl::Status emit_reduce(Op op, const Attributes& a, const std::vector<std::string>& in,
                           const std::string& out);
  // onnxruntime's fused operators, in its domain.
  absl::Status emit_skip_layer_norm(int i, const Attributes& a, const std::vector<std::string>& in);
  absl::Status emit_group_query_attention(int i, const Attributes& a,
                                          const std::vector<std::string>& in,
                                          const std::string& out);
  // onnxruntime's quantized operators (com.microsoft), with their
  // attributes; QGemm's c goes back before y's scale.
  absl::Status emit_quantized_runtime(Op op, const Attributes& a, std::vector<std::string> in,
                                      const std::string& out);
  absl::Status emit_rotary_embedding(const Attributes& a, const std::vector<std::string>& in,
                                     const std::string& out);
  // Shape operators.
  absl::Status emit_transpose(const Attributes& a, const std::vector<std::string>& in,
                              const std::string& out);
  absl::Status emit_reshape(int i, const Attributes& a, const std::vector<std::string>& in,
                            const std::string& out);
  // A 1-D int64 value holding, at run time, the size of an axis that is
  // `base` at the base sizes and `probe` at the probe sizes: read from the
  // shape of a value written before node `before` that has such an axis
  // (its input first); nullopt when none has.
  std::optional<std::string> axis_size_value(int before, std::int64_t base, std::int64_t probe);
  absl::Status emit_split(int i, const std::vector<std::string>& in);
  absl::Status emit_slice(const Attributes& a, const std::vector<std::string>& in,
                          const std::string& out);
  absl::Status emit_pad(const Attributes& a, const std::vector<std::string>& in,
                        const std::string& out);
  // The value operators with attributes (export_values.cc): Expand, Tile,
  // ConstantOfShape, CumSum, GatherElements, GatherND, ScatterND and
  // ScatterElements.
  absl::Status emit_value_op(const Node& n, const Attributes& a,
                             const std::vector<std::string>& in, const std::string& out);
  absl::Status emit_top_k(int i, const std::vector<std::string>& in);
  absl::Status emit_resize(const Node& n, const Attributes& a, const std::vector<std::string>& in,
                           const std::string& out);
  // Opaque operators: the ONNX node they came from.
  absl::Status emit_opaque(int i, std::vector<std::string> in);

  const Graph& g_;
  const bool defer_weights_;
  std::map<std::string, Tensor> deferred_;
  std::vector<ValueType> types_;
  std::int64_t opset_ = kDefaultOpset;
  onnx::ModelProto model_;
  onnx::GraphProto* out_ = nullptr;
  std::vector<bool> live_, folded_, frontier_;
  std::vector<std::vector<std::string>> names_;
  std::set<std::string> taken_, reserved_;
  std::map<std::string, std::string> aliases_;
  int counter_ = 0;
  ProbeSizes probe_sizes_;
  std::vector<SymbolSize> symbol_sizes_;  // ordered_symbol_sizes
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> axis_size_values_;
  std::vector<ValueType> probe_;
  std::map<int, Attributes> written_;
  // The initializers write_folded() wrote, by name (opaque nodes' constant
  // inputs, for their shape inference at the probe sizes).
  std::map<std::string, int> folded_initializers_;
  // Shape values by name at the base and the probe sizes, the node and part
  // each written value name is, and the initializers read into them so far.
  std::map<std::string, Tensor> base_values_, probe_values_;
  std::map<std::string, std::pair<int, std::size_t>> value_of_name_;
  int initializers_read_ = 0;
  DType float_type_ = DType::kFloat32;
};

}  // namespace saturn::tensor::onnx_io

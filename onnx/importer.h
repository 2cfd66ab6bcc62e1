// Internal to the ONNX importer (import.cc, import_tensors.cc, import_ops.cc):
// the Importer, which builds the IR graph of one ONNX model, and what its
// files share.
//
//   model_files.cc     the entry points: files read, checked, copied,
//                      staged, and the copy onnxruntime runs
//   import.cc          the graph walk: inputs, nodes (mapped, folded or
//                      opaque), outputs
//   import_prepare.cc  before the walk: opset, symbols, checker, shape
//                      inference and the values folded to constants
//   import_tensors.cc  external data, seeded weights, initializers and
//                      constants
//   import_ops.cc      the mapping of known ONNX operators onto IR operators
//   opset_lowering.cc  models at a newer opset than libonnx knows, read
//                      through the newest it knows
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/egraph/attributes.h"
#include "fmt/format.h"
#include "onnx/onnx_pb.h"
#include "saturn/tensor/graph.h"
#include "saturn/onnx/onnx.h"
#include "saturn/onnx/proto.h"
#include "saturn/onnx/shape_values.h"
#include "saturn/tensor/ops.h"
#include "saturn/tensor/tensor.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor::onnx_io {

using Ints = std::vector<std::int64_t>;

// Reads every external initializer of `model` (relative to `dir`) into it.
absl::Status inline_external_data(onnx::ModelProto& model, const std::filesystem::path& dir);
// The external initializers of more than `inline_up_to` elements as tensors
// that read their files in place (mapped, not copied), by name; they stay
// external in `model`. The smaller ones are read into `model`.
absl::StatusOr<std::map<std::string, Tensor>> map_external_data(onnx::ModelProto& model,
                                                                const std::filesystem::path& dir,
                                                                std::int64_t inline_up_to);
// The initializers of a serialized ModelProto with their names, data
// locations and external data only: read without copying their data (a
// model's external data files, found without parsing its weights).
absl::StatusOr<onnx::ModelProto> initializer_stubs(std::string_view bytes);
// Parses a serialized ModelProto, the whole of the file `location` names in
// the model's folder, leaving in the file the raw data of each graph
// initializer of at least `min_bytes`: that initializer reads as external
// data of the file itself at the data's offset, which map_external_data
// maps rather than copies. An error when the bytes do not parse.
absl::StatusOr<onnx::ModelProto> parse_leaving_weights(std::string_view bytes,
                                                       const std::string& location,
                                                       std::uint32_t min_bytes);
// The external data files `model`'s initializers read, relative to the
// model's folder, each once.
absl::StatusOr<std::vector<std::filesystem::path>> external_data_files(
    const onnx::ModelProto& model);

// The IR version of ONNX 1.12, the newest libonnx's checker knows (it
// refuses a model that states a later one). A later model is checked at it:
// IR 9 to 11 added element types (float8, int4, float4) and function
// overloads, and nothing a graph of IR 8's features means otherwise. The
// 4-bit integers are read (checked as their 8-bit kin, disguise_4bit); the
// others are refused by name where a model uses them.
inline constexpr std::int64_t kCheckedIrVersion = 8;

// The newest default-domain opset the import reads. Opsets newer than
// libonnx's (max_onnx_opset()) are lowered to it by lower_to_opset.
inline constexpr std::int64_t kNewestReadOpset = 23;

// Rewrites a model written for default-domain opset `from` into the
// spelling of the older opset `to` (and the IR version libonnx knows): the
// attributes that became inputs (the reductions' axes) are attributes
// again, attributes at their defaults that `to` lacks are dropped, and Gelu
// (opset 20), Mish (18) and RMSNormalization (23) are spelled in older
// operators. The exported model is then written at opset `from`.
// `expanded`, when given, receives each node spelled in older operators
// (Gelu, RMSNormalization) by its output's name, so the importer can map it
// whole.
using ExpandedNodes = std::map<std::string, onnx::NodeProto>;
// A node with no spelling at `to` (an operator newer than it, an attribute
// or input it lacks, such as Resize's antialias) stays as the file writes
// it, moved into the domain kKeptDomain so that the checker and inference
// at `to` pass it by; `kept`, when given, receives why, by the node's first
// output. The importer reads such a node as an opaque operator of its own
// domain (typed by the file's value_info) and the export writes it back.
using KeptNodes = std::map<std::string, std::string>;
absl::Status lower_to_opset(onnx::ModelProto& model, std::int64_t from, std::int64_t to,
                            ExpandedNodes* expanded = nullptr, KeptNodes* kept = nullptr);

// The outputs of the DequantizeLinear nodes of `graph` that dequantize an
// 8-bit integer initializer (not one of the `four_bit` ones) for
// convolutions only, each of which onnxruntime runs in float (no
// DequantizeLinear before its input, or no lone QuantizeLinear after its
// output), and an int32 bias at a scale that keeps a convolution from
// fusing: onnxruntime computes each on every run (import_at_load.cc).
std::set<std::string> dequantized_at_load(const onnx::GraphProto& graph,
                                          const std::map<std::string, DType>& four_bit);

// The weights a model names under `saturn.seeded_weights`: name -> [low, high).
using SeededWeights = absl::flat_hash_map<std::string, std::pair<float, float>>;

absl::StatusOr<SeededWeights> seeded_weights(const onnx::ModelProto& model);

// Gives the symbolic dimensions of `model`'s graph inputs their sizes
// (`options.dims`, else kDefaultSymbolSize) and says which axes of its inputs
// and outputs are symbolic.
absl::StatusOr<Symbols> resolve_input_dims(onnx::ModelProto& model,
                                           const OnnxImportOptions& options);

// Reads a node's attributes and remembers which were read, so a node with an
// attribute the mapping does not understand stays opaque.
class AttrReader {
 public:
  explicit AttrReader(const onnx::NodeProto& node) : node_(node) {}

  const onnx::AttributeProto* find(std::string_view name) {
    for (const onnx::AttributeProto& a : node_.attribute()) {
      if (a.name() == name) {
        read_.insert(a.name());
        return &a;
      }
    }
    return nullptr;
  }
  std::optional<std::int64_t> i(std::string_view name) {
    const auto* a = find(name);
    if (a == nullptr || a->type() != onnx::AttributeProto::INT) return std::nullopt;
    return a->i();
  }
  std::optional<double> f(std::string_view name) {
    const auto* a = find(name);
    if (a == nullptr || a->type() != onnx::AttributeProto::FLOAT) return std::nullopt;
    return a->f();
  }
  std::optional<std::string> s(std::string_view name) {
    const auto* a = find(name);
    if (a == nullptr || a->type() != onnx::AttributeProto::STRING) return std::nullopt;
    return a->s();
  }
  std::optional<Ints> ints(std::string_view name) {
    const auto* a = find(name);
    if (a == nullptr || a->type() != onnx::AttributeProto::INTS) return std::nullopt;
    return Ints(a->ints().begin(), a->ints().end());
  }
  // Whether every attribute of the node was read.
  bool all_read() const { return static_cast<int>(read_.size()) == node_.attribute_size(); }
  // The first attribute no mapping read ("" when all were).
  std::string first_unread() const {
    for (const onnx::AttributeProto& a : node_.attribute())
      if (!read_.contains(a.name())) return a.name();
    return "";
  }

 private:
  const onnx::NodeProto& node_;
  std::set<std::string> read_;
};

// What a known ONNX node becomes: one IR operator over IR values.
struct Mapped {
  Op op;
  Attributes attributes;
  std::vector<int> inputs;
  // For a tuple: the ONNX output each part is (empty: part i is output i).
  std::vector<int> outputs;
};

// Makes `m` an Identity of its first input.
void make_identity(Mapped& m, Attributes& attributes);

// A default-domain node being mapped: the node, a reader of its attributes
// and its inputs as IR values (-1 where an optional input is omitted).
struct KnownNode {
  const onnx::NodeProto& proto;
  AttrReader attrs;
  std::vector<int> in;
  const std::vector<ValueType>& types;  // the importer's, by IR value

  // The dimensions and element type of input `i`.
  const Dims& dims(int i) const { return types[in[i]].parts[0].dims; }
  DType dtype(int i) const { return types[in[i]].parts[0].dtype; }
  // Whether input `i` is given.
  bool present(int i) const { return i < static_cast<int>(in.size()) && in[i] >= 0; }
  // Whether the first `count` inputs are all given.
  bool all_present(int count) const {
    for (int i = 0; i < count; ++i) {
      if (!present(i)) return false;
    }
    return true;
  }
  // The first `count` inputs.
  std::vector<int> first(int count) const {
    return std::vector<int>(in.begin(), in.begin() + count);
  }
  // The name of input `i`; empty when the node has fewer inputs.
  std::string input(int i) const { return i < proto.input_size() ? proto.input(i) : std::string(); }
};

class Importer {
 public:
  Importer(std::string file, const OnnxImportOptions& options)
      : file_(std::move(file)), options_(options) {}

  // Reads `model`; its initializers' raw data is kept in place (the graph's
  // weights share `model`, which nothing may change afterwards).
  absl::StatusOr<Graph> run(std::shared_ptr<onnx::ModelProto> model);
  // The symbolic dimensions that no OnnxImportOptions::dims sized (known
  // once run() has resolved the inputs).
  std::vector<std::string> unsized_symbols() const;

 private:
  template <typename... Args>
  absl::Status error(fmt::format_string<Args...> format, Args&&... args) const {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", file_, fmt::format(format, std::forward<Args>(args)...)));
  }
  template <typename... Args>
  static absl::Status plain(fmt::format_string<Args...> format, Args&&... args) {
    return absl::InvalidArgumentError(fmt::format(format, std::forward<Args>(args)...));
  }

  // Before the walk (import_prepare.cc): checks the opset, reads external
  // data and seeded-weight metadata, fixes symbolic input dimensions, runs
  // the ONNX checker and shape inference, and finds the values to fold.
  absl::Status prepare(onnx::ModelProto& model);

  // The graph walk (import.cc).

  // An opaque node's output shapes at the probe sizes (kProbeShapes,
  // tensor/probe.h), when probe_dims_ has them all (import_ops.cc).
  void set_probe_shapes(const onnx::NodeProto& n, std::span<const TensorType> outputs,
                        Attributes& a) const;
  absl::StatusOr<TensorType> tensor_type(const onnx::TypeProto& type, const std::string& name,
                                         bool need_static) const;
  // The ONNX type of a value: a tensor (dimensions that depend on the data
  // are kUnknownDim), or kOther for sequences, maps and tensors of unknown
  // rank.
  absl::StatusOr<TensorType> value_type(const std::string& name) const;
  absl::StatusOr<int> append(Op op, Attributes attributes, std::vector<int> inputs,
                             std::string name);
  absl::Status add_input(const onnx::ValueInfoProto& v);
  absl::Status define(const std::string& name, absl::StatusOr<int> id);
  std::string where(const onnx::NodeProto& n, int k) const;
  absl::Status add_node(const onnx::NodeProto& n, int k);
  // Adds a known operator; false when it stays opaque (not mappable, or the
  // IR's type for it differs from ONNX's).
  // A node the opset lowering spelled in older operators (expanded_), as
  // the IR operator it is (an exact Gelu, RMSNormalization, a causal
  // Attention), when the IR types it; the operators of its spelling, read by
  // it only, are dropped (import_fused.cc).
  std::optional<int> add_expanded(const onnx::NodeProto& original);
  // A quantized weight's DequantizeLinear that only convolutions onnxruntime
  // runs in float read (dequantized_at_load_), as the weight-only
  // Mul(Sub(Cast(w), z), s) onnxruntime folds at load, its per-run work
  // kept in the input's price; false where its scale or zero point is not a
  // constant (import_at_load.cc).
  absl::StatusOr<bool> add_dequantized_at_load(const onnx::NodeProto& n);
  std::optional<int> add_attention(const onnx::NodeProto& original);
  std::optional<int> add_rotary(const onnx::NodeProto& original);
  // The first `count` inputs of `n` when each is a float32 tensor: their
  // nodes and dimensions.
  struct FloatInputs {
    std::vector<int> ids;
    std::vector<Dims> dims;
  };
  std::optional<FloatInputs> float_inputs(const onnx::NodeProto& n, int count) const;
  absl::StatusOr<bool> add_known(const onnx::NodeProto& n);
  // For x + 0, x - 0, x * 1 and x / 1 by a float constant of zeros or ones
  // that does not broadcast x (randomly initialized exports carry zero
  // biases): x's node, which the node is then an Identity of.
  std::optional<int> neutral_operand_other(Op op, const std::vector<int>& inputs,
                                           const ValueType& type) const;
  // Names ONNX output outputs[p] (output p when `outputs` is empty) part p
  // of `tuple`.
  absl::Status add_tuple_gets(const onnx::NodeProto& n, int tuple, const std::vector<int>& outputs);
  // Whether the IR's type for a value agrees with what ONNX inferred for it
  // (dimensions ONNX left unknown agree with anything).
  bool agrees(const TensorType& ir, const std::string& name) const;
  absl::Status add_opaque(const onnx::NodeProto& n, int k);
  // Drops nodes no output depends on (graph inputs stay: they are the
  // model's interface).
  void prune();

  // Initializers and constants (import_tensors.cc).

  // The default of graph input `name` (ONNX's shape inference has checked
  // that its type fits).
  absl::Status add_input_default(const std::string& name, const Tensor& value);
  void add_weight(const std::string& name, const Tensor& value);
  // The integer values of a constant input (int64 or int32), if known.
  std::optional<Ints> constant_ints(const std::string& name) const;
  std::optional<double> constant_scalar(const std::string& name) const;

  // Known operators (import_ops.cc).

  // Maps a default-domain (or com.microsoft) node onto an IR operator when the IR computes the
  // same thing; nullopt keeps it opaque, with the reason in why_opaque_.
  std::optional<Mapped> map_known(const onnx::NodeProto& n);
  // The mapping of `node` by its operator type, before the checks that
  // every attribute was read and every input it keeps is given.
  std::optional<Mapped> map_op(KnownNode& node);
  std::optional<Mapped> map_gemm(KnownNode& node);
  // Conv, ConvInteger or QLinearConv (`op`).
  std::optional<Mapped> map_conv(KnownNode& node, Op op);
  std::optional<Mapped> map_pool(KnownNode& node);
  std::optional<Mapped> map_clip(KnownNode& node);
  std::optional<Mapped> map_softmax(KnownNode& node);
  std::optional<Mapped> map_reshape(KnownNode& node);
  std::optional<Mapped> map_as_reshape(KnownNode& node);
  // One canonical form for chains of layout changes: a Reshape of a Reshape
  // or a Transpose of a Transpose reads the first one's input (the
  // inner one stays while something else reads it), a Transpose back to
  // the input's order and a Concat of one input are Identities, and a
  // Concat reads the inputs of a Concat it reads along the same axis.
  void compose_layout(Mapped& m, Attributes& attributes) const;
  // The value of an IR operator of type `type` whose inputs are all weights
  // or constants, computed now (a Transpose or a Cast of a weight, a
  // product of constants); nullopt when it is not folded: an opaque node, a
  // graph output, an output larger than its inputs, or a value the
  // interpreter does not compute. An error when the node cannot be computed
  // on these values (a Gather index past its axis): the runtime would fail
  // on it too, and the node is kept as the file has it.
  absl::StatusOr<std::optional<Tensor>> fold_weights_only(Op op, const Attributes& attributes,
                                          const std::vector<int>& inputs, const ValueType& type,
                                          const std::string& output) const;
  // Whether onnxruntime computes `n`'s outputs on every run: an input of
  // the node is computed so, and it is not a Shape of a value whose
  // dimensions (those it reads) are the same at every size of the symbolic
  // ones, which the runtime's constant folding folds.
  bool at_run_time(const onnx::NodeProto& n) const;
  std::optional<Mapped> map_einsum(KnownNode& node);
  std::optional<Mapped> map_split(KnownNode& node);
  std::optional<Mapped> map_reduce(KnownNode& node, Op op);
  std::optional<Mapped> map_quantization(KnownNode& node);
  std::optional<Mapped> map_slice(KnownNode& node);
  std::optional<Mapped> map_pad(KnownNode& node);
  std::optional<Mapped> map_dropout(KnownNode& node);
  // The value operators that move or make values (import_values.cc):
  // Expand, Tile, Range, ConstantOfShape, Min, Max, CumSum, GatherElements,
  // GatherND, ScatterND, ScatterElements, Resize, GridSample, EyeLike, Trilu
  // and TopK.
  std::optional<Mapped> map_expand(KnownNode& node);
  std::optional<Mapped> map_resize(KnownNode& node);
  std::optional<Mapped> map_value_op(KnownNode& node);
  // Sets the attributes of a node whose output size depends on its inputs'
  // values (sized_by_values, tensor/ops.h): its output's dimensions at the
  // given sizes (`key`, or the repeats that give them) and at the probe
  // sizes; false when its output has no static type.
  bool set_sized_by_values(KnownNode& node, Mapped& m, std::string_view key);
  // A value known at import at the given sizes (a constant, or a size value
  // computed there) or at the probe sizes; null where it is not known.
  const Tensor* known_value(const std::string& name, bool at_probe) const;
  // onnxruntime's fused operators, in the forms saturn writes them.
  std::optional<Mapped> map_runtime(KnownNode& node);

  std::string file_;
  const OnnxImportOptions& options_;
  std::int64_t opset_ = 0;         // the default-domain opset read (after lowering)
  std::int64_t source_opset_ = 0;  // the one the model was written at
  std::int64_t source_ir_version_ = 0;  // the file's, before the checker's
  Graph graph_;
  std::vector<ValueType> types_;
  absl::flat_hash_map<std::string, int> values_;
  absl::flat_hash_map<std::string, Tensor> constants_;
  absl::flat_hash_map<std::string, onnx::TypeProto> types_by_name_;
  std::map<std::string, Dims> probe_dims_;  // at the probe sizes (shape_values.h)
  // The node values folded to constants: computed from constants, weights
  // and shapes (shape_values.h), the same at the given and the probe sizes
  // of the symbolic dimensions, and not graph outputs.
  ShapeValues folded_;
  // The values that change with the sizes, at the probe sizes (their
  // values at the given sizes are graph_.size_values).
  ShapeValues probe_values_;
  std::set<std::string> output_names_;  // the graph's outputs
  // Every value a node reads (in the graph or a subgraph of it) or the graph
  // outputs: an ONNX output outside it is never read.
  std::set<std::string> read_names_;
  // The nodes the opset lowering expanded (Gelu), by their output's name.
  ExpandedNodes expanded_;
  // The nodes the opset lowering kept as written (kKeptDomain), and why.
  KeptNodes kept_;
  // The large external initializers, reading their mapped files in place,
  // and the 4-bit initializers (unpacked).
  std::map<std::string, Tensor> external_;
  // The 4-bit values, typed as 8-bit ones for libonnx (disguise_4bit).
  std::map<std::string, DType> four_bit_types_;
  // Why the latest node add_known refused stays opaque (Graph::opaque_reasons).
  std::string why_opaque_;
  // The values the source's runtime computes on every run (what reads a
  // graph input, but not a Shape that its static dimensions fold), and
  // whether the node being added reads one (at_run_time).
  std::set<std::string> at_run_time_;
  bool node_at_run_time_ = false;
  // The DequantizeLinear outputs add_dequantized_at_load reads (by
  // dequantized_at_load).
  std::set<std::string> dequantized_at_load_;
  SeededWeights seeded_;
};

}  // namespace saturn::tensor::onnx_io

// Internal to the ONNX importer and exporter: conversions between ONNX
// protobuf messages and the IR's types and tensors, and the attribute keys
// that carry ONNX-only information through Opaque nodes.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "saturn/tensor/tensor.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor::onnx_io {

// The private domain of the nodes the opset lowering keeps as the file
// writes them (KeptNodes, importer.h): the graph's opsets import it, so
// the export declares it while it writes opset 17's spelling (a subgraph
// of an opaque node may hold such nodes too), and raise_to_versions puts
// them back in the default domain and drops the import.
inline constexpr std::string_view kKeptDomain = "saturn.newer_opset";

// Opaque-node attributes (besides op_type, domain, out_shapes, out_dtypes):
// the node's ONNX attributes, base64 of a NodeProto holding only them;
inline constexpr std::string_view kAttrBlob = "onnx_attributes";
// positions of omitted optional inputs and outputs ("" in ONNX);
inline constexpr std::string_view kAbsentInputs = "absent_inputs";
inline constexpr std::string_view kAbsentOutputs = "absent_outputs";
// how many IR inputs are the node's own; the rest are values its subgraphs
// (If, Loop, Scan bodies) read from the enclosing graph;
inline constexpr std::string_view kExplicitInputs = "explicit_inputs";
// for random operators, the node's identity, so two draws never merge;
inline constexpr std::string_view kInstance = "instance";
// for an output that is not a tensor: "out_type_<i>", its TypeProto (base64).
inline constexpr std::string_view kOutTypePrefix = "out_type_";

// The metadata key naming stripped weights (tensor/fixtures/README.md).
inline constexpr std::string_view kSeededWeights = "saturn.seeded_weights";

// The default ONNX domain ("" or "ai.onnx").
inline bool is_default_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

std::optional<DType> dtype_from_onnx(int elem_type);
int dtype_to_onnx(DType dtype);

// The type a TensorProto declares, checked (a known element type, no
// negative dimension, within the size limit).
absl::StatusOr<TensorType> tensor_proto_type(const onnx::TensorProto& proto);
// The tensor a TensorProto holds (raw or typed fields). External data must
// have been loaded into raw_data already. With an `owner` that keeps
// `proto` alive and unchanged, raw data is read in place (Tensor::borrowing)
// rather than copied.
absl::StatusOr<Tensor> tensor_from_proto(const onnx::TensorProto& proto,
                                         std::shared_ptr<const void> owner = nullptr);
// The bytes a tensor of `type` takes in an ONNX file's raw data: its
// num_bytes, but half a byte per element for the 4-bit integers (two to a
// byte, the first in the low half; an odd count pads the last byte).
std::int64_t stored_bytes(const TensorType& type);
// The tensor `bytes` (stored_bytes(type) of them) hold: read in place while
// `owner` keeps them alive, or unpacked (the 4-bit integers).
Tensor tensor_from_stored(const TensorType& type, std::span<const std::byte> bytes,
                          std::shared_ptr<const void> owner);
// libonnx 1.12, which this build checks and infers shapes with, predates
// the 4-bit integers (IR 10). Retypes `model`'s 4-bit values as their 8-bit
// kin for it: each 4-bit initializer becomes the 8-bit one of its values
// (an external one keeps its file and is only retyped) and each declared
// type (graph inputs, outputs and value_info, subgraphs' too) names the
// 8-bit type. Returns the 4-bit tensors of the initializers it retyped
// (external ones from `external`) and the 4-bit type of every name.
struct FourBitValues {
  std::map<std::string, Tensor> initializers;
  std::map<std::string, DType> types;
};
absl::StatusOr<FourBitValues> disguise_4bit(onnx::ModelProto& model,
                                            const std::map<std::string, Tensor>& external = {});

// A Constant node's value (its value, value_float(s), value_int(s) or
// value_string(s)); nullopt for a sparse value or a malformed node.
std::optional<Tensor> constant_node_value(const onnx::NodeProto& n);
void tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

std::string serialize_base64(const google::protobuf::MessageLite& message);
bool parse_base64(std::string_view text, google::protobuf::MessageLite* message);

// Names a subgraph (and its nested subgraphs) reads without defining them:
// the values it takes from enclosing graphs, sorted.
std::set<std::string> outer_names(const onnx::GraphProto& graph);
// The same for all of a node's graph attributes (If's branches, Loop's body).
std::set<std::string> node_outer_names(const onnx::NodeProto& node);

// An Einsum equation's terms, spaces dropped: {"bhid", "bhjd", "bhij"};
// nullopt for an ellipsis, an implicit output or a repeated letter in a term.
std::optional<std::vector<std::string>> einsum_terms(std::string equation);
// Each letter's size, from the operands' dimensions (`dims[k]` those of the
// operand of terms[k]); nullopt where a rank or a letter's sizes disagree
// or an output letter is in no operand.
std::optional<std::map<char, std::int64_t>> einsum_sizes(const std::vector<std::string>& terms,
                                                         std::span<const Dims> dims);

// Adds attribute `key` of one integer, one float, a list of integers or a
// string to `n`.
void set_int(onnx::NodeProto* n, const char* key, std::int64_t v);
void set_float(onnx::NodeProto* n, const char* key, double v);
void set_ints(onnx::NodeProto* n, const char* key, const std::vector<std::int64_t>& v);
void set_string(onnx::NodeProto* n, const char* key, const std::string& v);

}  // namespace saturn::tensor::onnx_io

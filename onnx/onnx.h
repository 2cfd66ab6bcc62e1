// ONNX models in and out of saturn's tensor IR.
//
//   absl::StatusOr<Graph> g = load_onnx_model("resnet50.onnx");
//   ... optimize ...
//   absl::Status s = save_onnx_model(*g, "resnet50.opt.onnx");
//
// Import checks the model with the ONNX checker, runs ONNX shape inference,
// maps the operators the IR knows (when the IR computes exactly what ONNX
// does for that opset and those attributes) and keeps every other operator as
// an Opaque node: its type, domain, attributes, inputs, outputs and shapes
// are carried through unchanged. Initializers and Constant nodes become
// weights; external data files are read. Graph inputs, outputs and their
// names are kept.
//
// Export writes the graph for the model's original opsets (opset 17 for
// models built in saturn): weight-only subgraphs that rewrites created (a
// concatenated kernel, batch norm folded into a convolution) are computed by
// the interpreter and written as initializers; intermediate shapes go into
// value_info; the result passes the ONNX checker (which, in ONNX 1.12, does
// not type-check operators).
//
// Models whose large weights were stripped (tensor/fixtures/README.md) name
// them in the metadata entry `saturn.seeded_weights`; import turns those
// graph inputs into weights filled with seeded random values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "saturn/base/file.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/tensor.h"

namespace saturn::tensor {

// The size of a symbolic dimension that OnnxImportOptions::dims does not name.
inline constexpr std::int64_t kDefaultSymbolSize = 1;

struct OnnxImportOptions {
  // Sizes for symbolic dimensions (ONNX dim_param), e.g. {"batch", 8}, for
  // shape inference and costing. The graph keeps them as symbols
  // (Graph::symbols) and the exporter writes them back as symbols. An unnamed
  // dynamic axis of input X is named "unk__X_AXIS".
  absl::flat_hash_map<std::string, std::int64_t> dims;
};

// `file` names the model in error messages; external data files are read
// relative to its directory.
absl::StatusOr<Graph> parse_onnx_model(std::string_view bytes, const std::string& file,
                                       const OnnxImportOptions& options = {});
absl::StatusOr<Graph> load_onnx_model(const std::string& path,
                                      const OnnxImportOptions& options = {});

// The serialized ONNX model (checked with the ONNX checker); an error for a
// model past protobuf's 2 GB limit.
absl::StatusOr<std::string> to_onnx_model(const Graph& graph);
// Writes the model to `path`. A model past 2 GB keeps its weights in the
// external data file external_data_file(path) beside it.
absl::Status save_onnx_model(const Graph& graph, const std::string& path);
std::string external_data_file(const std::string& path);
// Copies the model file `from` to `to` byte for byte, and the external data
// files it reads beside `to` (where `to` is in another folder): what a run
// that keeps its input writes.
absl::Status copy_onnx_model(const std::string& from, const std::string& to);
// The same copy, staged: nothing is in place until it is committed, and
// it may be made in the background meanwhile (StagedCopy::start).
absl::StatusOr<StagedCopy> stage_onnx_copy(const std::string& from, const std::string& to);

// The model as another runtime should run it from anywhere: the file's
// model with external data inline, symbolic input dimensions sized as
// `options` says, and weights stripped under `saturn.seeded_weights` turned
// into initializers holding exactly the values saturn's importer gives them.
// A ResourceExhausted error when that model is past protobuf's 2 GB limit.
// kSymbolic leaves the symbolic input dimensions as they are, for a runtime
// that is fed inputs of some size (optimize's timing: the model as the user
// runs it, shape arithmetic included).
enum class InputSizes : std::uint8_t { kFixed, kSymbolic };
absl::StatusOr<std::string> runtime_onnx_model(const std::string& path,
                                               const OnnxImportOptions& options = {},
                                               InputSizes sizes = InputSizes::kFixed);
// Whether the file at `path` is already that model with kSymbolic (no
// external data, no seeded weights): another runtime can read the file
// itself, and no copy of it need be made (or held in memory).
absl::StatusOr<bool> runs_as_written(const std::string& path);

// Runs the ONNX checker on a serialized model.
absl::Status check_onnx_model(std::string_view bytes, const std::string& file);

// A serialized ONNX TensorProto (the reference data files of ONNX's tests).
absl::StatusOr<Tensor> load_onnx_tensor(const std::string& path);

// The highest default-domain opset this build of ONNX knows.
std::int64_t max_onnx_opset();

// A graph attribute of an opaque node (If's branches, Loop's and Scan's
// bodies) as a model of its own: its formal inputs, then the values it
// reads from the enclosing graph as inputs of their own, typed as the
// enclosing graph types them (an axis that is a symbolic dimension's size
// named after it, to be read with the enclosing graph's symbol sizes), at
// the enclosing model's opsets (in the spelling the import holds: opset
// 17's where the model is newer).
struct Subgraph {
  int node = 0;                    // the opaque node in the enclosing graph
  std::string attribute;           // its graph attribute's name
  std::vector<std::string> outer;  // the enclosing values it reads, by name
  std::string model;               // the model's bytes; empty when `why` is set
  // Why it is not a model of its own: it reads a value that is not a
  // tensor, whose shape is unknown, or an axis of which follows the
  // symbolic dimensions other than as one of them (a product, say).
  std::string why;
};
// Every graph attribute of `graph`'s opaque nodes (none where the graph
// does not type).
std::vector<Subgraph> subgraphs_of(const Graph& graph);
// Puts `optimized`, the graph read from `sub.model` and optimized, back as
// the subgraph: the values it reads from the enclosing graph are read by
// name again (the node's inputs shrink to those it still reads). An error
// leaves `graph` unchanged where the subgraph's interface would change or
// its new names would hide an enclosing value.
absl::Status replace_subgraph(Graph& graph, const Subgraph& sub, const Graph& optimized);

}  // namespace saturn::tensor

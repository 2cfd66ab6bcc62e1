// Internal to the ONNX importer and exporter: the small values of a model's
// shape arithmetic (Shape, Gather, Concat, Unsqueeze, Slice, Transpose, Cast, Range,
// ConstantOfShape, Equal, Where, ...) computed from what is known, so that
// the operators that read them (a Slice's ends, a Reshape's or an Expand's
// shape, a Range's limit) get static types at the given sizes of the
// symbolic dimensions.
//
// ONNX's shape inference reads only initializers there, and its data
// propagation covers a few operators: one Slice of a position-id buffer by
// the input's length (as Hugging Face's BERT exports write it) leaves every
// later value shapeless. The computed values only type the graph: the
// operators that compute them stay in it, so the model still works at any
// size.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/tensor.h"

namespace saturn::tensor::onnx_io {

// Values with more elements are not computed. Shapes are short; the masks
// built from them (a shifted window's region ids by ScatterND, say) need a
// few thousand elements.
inline constexpr std::int64_t kMaxShapeValueElements = 16384;

// The element count of `dims`, or INT64_MAX when a dimension is negative or
// the product overflows (a malformed model's dimensions are anything).
std::int64_t shape_value_count(std::span<const std::int64_t> dims);

// A value's tensor by name, or null when it is not known.
using ValueLookup = std::function<const Tensor*(const std::string&)>;
// A value's static dimensions by name, when known (Shape and Size read them).
using DimsLookup = std::function<std::optional<Dims>(const std::string&)>;

// The axes [start, end) a Shape node reads of a value of rank `rank`:
// opset 15's start and end, a negative one counted from the end, both
// clamped to the rank.
std::pair<std::int64_t, std::int64_t> shape_axes(const onnx::NodeProto& shape, std::int64_t rank);

// The outputs of `node` (default domain, at opset 17's spelling) computed
// from its inputs; nullopt when it is not an operator computed here, an
// input it needs is unknown, or an output would pass kMaxShapeValueElements.
std::optional<std::vector<Tensor>> evaluate_shape_node(const onnx::NodeProto& node,
                                                       const ValueLookup& values,
                                                       const DimsLookup& dims);

// A copy of `model` for shape inference: its nodes, inputs, outputs (their
// symbolic shapes cleared, for inference to fill) and small initializers;
// a large initializer becomes a typed input (its values matter to no
// shape), and no value_info.
onnx::ModelProto inference_copy(const onnx::ModelProto& model);

// The values of a model's nodes that evaluate_shape_node computed, by name.
using ShapeValues = std::map<std::string, Tensor>;

// Runs ONNX shape inference on `model`, then feeds it the values
// evaluate_shape_node computes (as initializers of a copy without the large
// ones) and runs it again, until no more values are known; the types found
// replace the model's value_info. `values`, when given, receives the values
// of the nodes' outputs computed. `data_prop` turns on ONNX's own data
// propagation. An error is ONNX's inference failing.
absl::Status infer_with_shape_values(onnx::ModelProto& model, ShapeValues* values = nullptr,
                                     bool data_prop = true);

// The static dimensions of `model`'s values (read with its symbols at their
// base sizes) at the probe sizes of `symbols` (tensor/probe.h), by name;
// empty when inference fails there. `values`, when given, receives the
// node values computed at the probe sizes.
std::map<std::string, Dims> probe_dims(const onnx::ModelProto& model, const Symbols& symbols,
                                       ShapeValues* values = nullptr);

// Whether two computed values are the same: type and every element.
bool same_values(const Tensor& a, const Tensor& b);

}  // namespace saturn::tensor::onnx_io

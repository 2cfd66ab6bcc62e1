// Internal to the opset lowering (opsets.cc): operators of later opsets
// spelled in opset 17's operators, so that libonnx checks and infers them
// and the importer reads their parts (or, for Gelu and RMSNormalization,
// the whole, importer.h's ExpandedNodes).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace saturn::tensor::onnx_io {

// The type a model declares for a value (graph inputs and outputs,
// value_info, initializers), or null.
using DeclaredType = std::function<const onnx::TypeProto*(const std::string&)>;

// What a spelling reads of the model around its node.
struct Source {
  DeclaredType declared;
  std::int64_t opset;  // the model's default-domain opset
};

// Whether `op_type` (default domain) has a spelling here.
bool has_expansion(std::string_view op_type);

// Appends the spelling of `n` to `out`: its last node computes `n`'s first
// output under its name. An error says why `n` has no spelling, the caller
// naming the node: InvalidArgument where its operator's own definition
// refuses it (an input or a required attribute missing, a value out of its
// range), Unimplemented where a valid node has none here.
absl::Status expand_node(const onnx::NodeProto& n, const Source& source,
                         std::vector<onnx::NodeProto>& out);

}  // namespace saturn::tensor::onnx_io

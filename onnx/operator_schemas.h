// Internal to the import: the schemas of the operators libonnx's checker
// does not check here (the default domain past the opset it knows, and
// onnxruntime's own domains), from tools/gen-operator-schemas.py's table.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace saturn::tensor::onnx_io {

// Checks node `n` of `domain` against its operator's schema at `opset`, as
// libonnx's checker (and onnxruntime at load) does: the number of inputs and
// outputs, no single (not optional, not variadic) one left empty, every
// required attribute given. InvalidArgument says what `n` lacks, the caller
// naming the node; OK where the table has no schema for the operator (an
// operator of a later onnxruntime, a custom domain).
absl::Status check_operator_schema(const onnx::NodeProto& n, std::string_view domain,
                                   std::int64_t opset);

}  // namespace saturn::tensor::onnx_io

// Internal to the ONNX importer and exporter: the output types of onnxruntime's
// quantized contrib operators (com.microsoft: QLinearAdd, QLinearMul,
// QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearConcat,
// QLinearGlobalAveragePool, QGemm, DynamicQuantizeMatMul, MatMulNBits,
// MatMulIntegerToFloat), which ONNX's shape inference does not know and
// onnxruntime's quantizer writes without annotating, and of opset 21's
// blocked QuantizeLinear and DequantizeLinear, which libonnx 1.12 reads in
// kKeptDomain (KeptNodes, importer.h). Without them every value after the
// first such node would be untyped and the model unread (and a model
// written with one after a symbolic dimension could not be checked at
// other sizes: export_symbolic.cc).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "onnx/onnx_pb.h"
#include "saturn/tensor/types.h"

namespace saturn::tensor::onnx_io {

// A value's ONNX element type and static dimensions, where known.
using ValueTypeLookup = std::function<std::optional<std::pair<int, Dims>>(const std::string&)>;

// The type of `n`'s first output if `n` is one of the operators above and
// its inputs' types are known; nullopt otherwise.
std::optional<onnx::TypeProto> runtime_operator_type(const onnx::NodeProto& n,
                                                      const ValueTypeLookup& input);

}  // namespace saturn::tensor::onnx_io

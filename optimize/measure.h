// The measured keep-or-replace decision: a candidate the prediction takes
// is timed against its input in onnxruntime, and replaces it only where it
// runs measurably faster with the same outputs (OptimizeOptions::measure).
#pragma once

#include "saturn/optimize/optimize.h"
#include "saturn/tensor/graph.h"

namespace saturn {

// Sets result.measured and, where the candidate is not measurably faster
// (or its outputs differ in onnxruntime, or onnxruntime cannot run it),
// puts the input back as the result. Only a graph read from an ONNX file is
// timed (the file is what the runtime runs); where onnxruntime is not
// installed, the prediction's decision stands and the note says so.
void measure_result(const tensor::Graph& input, const OptimizeOptions& options,
                    OptimizeResult& result);

}  // namespace saturn

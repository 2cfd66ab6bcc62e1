// The measured keep-or-replace decision: a candidate the prediction takes
// is timed against its input in onnxruntime, and replaces it only where it
// runs measurably faster with the same outputs (OptimizeOptions::measure).
#pragma once

#include <string>
#include <vector>

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

// A result found under another assumption about the runtime (its
// quantized weights' type, OptimizeOptions::integer_weights); `how` says
// which.
struct Candidate {
  std::string how;
  OptimizeResult found;
};
// The measured gate over several candidates: `result` (found as `how`) and
// `others`, each taken by its own prediction, timed against the input one
// after another as measure_result times one; the one measured fastest of
// those measurably faster becomes the result, with its own decision, and
// the result's measurement says what the others' timings found. A
// candidate whose graph is the result's is not timed again. The others'
// phase times add to the result's.
void measure_candidates(const tensor::Graph& input, const OptimizeOptions& options,
                        std::string how, OptimizeResult& result, std::vector<Candidate> others);

}  // namespace saturn

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
// The measured gate over several candidates: `result` (found as `how`,
// the pricing of this CPU) and `others`, each taken by its own prediction,
// timed against the input one after another as measure_result times one.
// Of those measurably faster, the result stays unless another outruns it
// (outruns); the one taken becomes the result, with its own decision, and
// the result's measurement says what the others' timings found. A
// candidate whose graph is the result's is not timed again. The others'
// phase times add to the result's.
void measure_candidates(const tensor::Graph& input, const OptimizeOptions& options,
                        std::string how, OptimizeResult& result, std::vector<Candidate> others);

// Whether a candidate timed as `other` replaces the one timed as `taken`,
// both measurably faster than their input: where the lower end of its
// interval is above the other's speedup. Each was timed against the input
// on its own, so a difference within their intervals is the machine's:
// the candidate the pricing of this CPU prefers stays (on the quantized
// DistilBERT, the mixed weights' candidate measured 1.430x and the all-uint8
// one 1.438x, each interval about 0.1 wide, while the kernels say the
// mixed one is the faster by a few percent).
bool outruns(const Measurement& other, const Measurement& taken);

}  // namespace saturn

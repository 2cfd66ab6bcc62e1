// The keep-or-replace decision: whether saturn's result is the graph its
// search found (the candidate) or the input as it came. A candidate passes
// gates in a fixed order, each recording a typed verdict with its evidence;
// the first gate that refuses puts the input back and ends the decision.
// The stage's functions (optimize_internal.h, decide.cc) are the only code
// that sets the decision.
//
//   searched       the graph, or a part of it, fit the search budget
//   predicted gain the cost model predicts the candidate min_gain cheaper
//   other sizes    it holds at other sizes of the symbolic dimensions
//   measured       onnxruntime runs it measurably faster (at least
//                  min_speedup where that is set), with the same outputs
//
// The self-check in the interpreter is not a gate: an output that differs
// is an error naming the rules applied, not a reason to keep the input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace saturn {

enum class Gate : std::uint8_t { kSearched, kPredictedGain, kOtherSizes, kMeasured };
std::string_view to_string(Gate gate);
// The gate of that name (to_string's), or none.
std::optional<Gate> gate_named(std::string_view name);

struct Verdict {
  Gate gate = Gate::kPredictedGain;
  bool passed = false;
  std::string evidence;  // what the gate found: figures, or the reason
};

struct Decision {
  bool taken = false;  // the candidate is the result; else the input is
  // Every verdict given, in order; the last one decided (the gate that
  // refused, or the last one passed). A result that kept its input can
  // become a candidate again (its subgraphs optimized): the log goes on.
  std::vector<Verdict> verdicts;

  const Verdict* deciding() const { return verdicts.empty() ? nullptr : &verdicts.back(); }
  // "taken (measured: 1.042x ...)" or "kept the input (other sizes: ...)".
  std::string summary() const;
};

}  // namespace saturn

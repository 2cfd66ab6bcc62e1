// The self-check before optimize() returns a result: the optimized graph and
// its input run in saturn's interpreter on seeded random inputs, and every
// output must match (within onnxruntime verify's tolerances, rtol 1e-3 and
// atol 1e-4; rtol and atol 1e-2 for a float16 output). It catches a rewrite that is wrong for the shapes at hand,
// whatever the rule verifier said of its rule.
//
//   absl::StatusOr<SelfCheck> c = self_check(input, result.graph, result.rules_applied);
//   if (!c.ok()) ...        // an output differs: the error names it and the rules
//   else if (!c->ran) ...   // not checked: c->note says why
#pragma once

#include <optional>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "saturn/optimize/optimize.h"
#include "saturn/tensor/graph.h"
#include "saturn/onnx/onnx.h"

namespace saturn {

// Graphs whose evaluation takes more floating-point operations than this
// are not interpreted (seconds on a 2-core machine); regions keep most
// checks below it.
inline constexpr double kSelfCheckMaxFlops = 8e9;

struct SelfCheck {
  bool ran = false;  // false: the interpreter cannot run a graph, or it is too large
  std::string note;  // what was checked, or why not
};

// An InternalError when an output differs (its name, the error and the
// rules applied); otherwise what was checked.
absl::StatusOr<SelfCheck> self_check(const tensor::Graph& input, const tensor::Graph& output,
                                     std::span<const RuleApplication> rules_applied);

// Why `output`, optimized from `input` with symbolic dimensions, does not
// hold at other sizes; empty when it does. The ONNX export must write it
// for any size (onnx/export_symbolic.cc), and the input and the
// export, both read with every symbol 2 larger than it was, must compute
// the same in the interpreter. The input is read again from its source
// file, or from its own export when it has none.
std::string fails_at_other_sizes(const tensor::Graph& input, const tensor::Graph& output,
                                 std::span<const RuleApplication> rules_applied);

// fails_at_other_sizes for several outputs of one input, which is read at
// the other sizes once.
class OtherSizesCheck {
 public:
  explicit OtherSizesCheck(const tensor::Graph& input);
  std::string fails(const tensor::Graph& output, std::span<const RuleApplication> rules_applied);

 private:
  const tensor::Graph& input_;
  tensor::OnnxImportOptions other_;
  std::optional<absl::StatusOr<tensor::Graph>> resized_input_;  // read on first use
};

}  // namespace saturn

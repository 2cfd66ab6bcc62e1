// Translation of TENSAT/TASO rule files into saturn's rule language.
//
// TENSAT (Yang et al., MLSys 2021) ships TASO's generated substitutions as
// one rewrite per line, `LHS=>RHS`, in its own operator language
// (`converted.txt`), and its multi-pattern rules as pairs of consecutive
// lines (`converted_multi.txt`). Their operators and what they become:
//
//   (ewadd a b), (ewmul a b)          Add, Mul: TASO's element-wise operators
//                                     take equal shapes, saturn's broadcast,
//                                     so a left side's operand variables get
//                                     a same-shape condition
//   (matmul act a b)                  MatMul, under Relu/Sigmoid/Tanh for act 2/1/3
//   (conv2d sh sw pad act x w)        Conv{strides=[sh,sw], activation=...}; pad 0
//                                     (SAME): a padding variable per kernel size,
//                                     checked by same-padding (stride 1) or
//                                     computed by same-pads; pad 1 (VALID) no
//                                     padding; TASO infers the group count from
//                                     the shapes: a left side binds it, a right
//                                     side takes it from the left convolution
//                                     with a kernel of the same variables, or
//                                     computes it (conv-group)
//   (merge w 2), (enlarge w v)        MergeGroups{count=2} (group (half ?g)),
//                                     Enlarge{kernel_shape=(kernel-size v)}
//   (relu x), (tanh x), (sigmoid x)   Relu, Tanh, Sigmoid
//   (concat axis ndim a b)            Concat{axis}; ndim becomes rank-N conditions
//   (split_i (split axis t))          TupleGet{index=i} of a Split whose sizes are
//                                     the extents of the parts concatenated in t
//
// A rule that uses anything else is not translated; the result says why.
//
//   absl::StatusOr<TensatImport> out = import_tensat({{"converted.txt", text}}, {});
//   write_text_file("tensat.rules", out->text());
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace saturn {

struct TensatSource {
  std::string name;  // a file name, for comments and errors
  std::string text;
};

// One source rule and its translation.
struct ImportedRule {
  std::string name;    // tensat-FILE-LINE
  std::string source;  // "# FILE:LINE: LHS=>RHS" lines
  std::string reason;  // why it was not translated ("" when it was)
  std::string rule;    // `rule NAME: ...` in saturn's language
  // The same with the left side's convolutions ungrouped (group 1), where
  // the rule has grouped ones: TASO verified its substitutions on ungrouped
  // convolutions, and some hold only for those. "" when there is none.
  std::string ungrouped;
  std::string note;            // comment lines written above the rule
  bool commented_out = false;  // written as a comment (it failed verification)
};

struct TensatImport {
  std::vector<std::string> files;
  std::vector<ImportedRule> rules;
  int translated = 0;
  // "converted.txt:12: reason" for each rule not translated.
  std::vector<std::string> skipped;

  // The rule file: a header, then each source rule with its translation.
  std::string text() const;
};

// Translates single-pattern files (one rule per line) and multi-pattern
// files (two consecutive lines per rule). A line that is not `LHS=>RHS`
// S-expressions is an error naming the file and line.
absl::StatusOr<TensatImport> import_tensat(const std::vector<TensatSource>& single,
                                           const std::vector<TensatSource>& multi);

}  // namespace saturn

// The options of an optimize run by name, one table for every way in: the
// command line's `saturn optimize --NAME VALUE`, the Python module's
// `saturn.optimize(model, NAME=VALUE)` (dashes as underscores) and the
// benchmarks. Each name sets fields of OptimizeOptions, whose initializers
// are the one set of defaults; `--help` and the Python docstring are made
// from this table.
//
//   OptimizeOptions options;
//   absl::Status s = set_option(options, "budget-nodes", "4000");
//   s.Update(set_option(options, "cost", "measured:my-table.json"));
//   // the cost model is read by optimize(), which fails on a bad one
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "saturn/optimize/optimize.h"

namespace saturn {

struct OptionInfo {
  enum class Kind { kValue, kFlag, kList };
  std::string_view name;  // "budget-nodes"
  Kind kind = Kind::kValue;
  std::string_view value;  // what the value is, for --help: "N", "SPEC"
  std::string_view help;   // what it sets
};

std::span<const OptionInfo> optimize_options();
const OptionInfo* find_option(std::string_view name);

// Sets option `name` from its text: a flag from "true" or "false", a list
// option adds one item. The error names the option and the value.
absl::Status set_option(OptimizeOptions& options, std::string_view name, std::string_view value);

// The option's value in `options` as text ("" for a value not set, a list
// joined by commas): with OptimizeOptions{}, its default.
std::string option_value(const OptimizeOptions& options, std::string_view name);

// The option's help followed by its default, as --help and the docstring say it.
std::string option_help(const OptionInfo& option);

}  // namespace saturn

#include "saturn/optimize/options.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>

#include "absl/strings/numbers.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "saturn/ort/runtime.h"

namespace saturn {

namespace {

using Kind = OptionInfo::Kind;

constexpr std::array<OptionInfo, 20> kOptions = {{
    {"search", Kind::kValue, "NAME", "the search strategy: mcts, greedy, default or taso"},
    {"budget-nodes", Kind::kValue, "N", "e-node budget (per region)"},
    {"budget-mem", Kind::kValue, "BYTES", "byte budget for the e-graphs searched at once"},
    {"time-limit", Kind::kValue, "SECONDS", "search time limit"},
    {"time-per-op", Kind::kValue, "SECONDS",
     "search time per operator of each graph or region searched, up to the time limit; 0: the "
     "time limit alone"},
    {"cost", Kind::kValue, "SPEC",
     "onnxruntime (measured: this machine's table from saturn calibrate, else the shipped one) | "
     "opcount | roofline | roofline:PROFILE | measured:FILE"},
    {"rules", Kind::kList, "FILE",
     "a rule file (repeatable; default: the shipped tensor rules); its rules are verified first "
     "and a file with an unsound rule is refused"},
    {"unverified-rules", Kind::kFlag, "", "use the rule files without verifying their rules"},
    {"target", Kind::kValue, "NAME",
     "onnxruntime: onnxruntime's fused operators (com.microsoft domain) may be chosen; onnx: "
     "standard ONNX operators only"},
    {"threads", Kind::kValue, "N", "search threads"},
    {"seed", Kind::kValue, "N", "search seed"},
    {"region-ops", Kind::kValue, "N",
     "cut a larger graph into regions of about N operators, each searched on its own (budgets "
     "are per region); 0: search it whole"},
    {"ilp-seconds", Kind::kValue, "SECONDS", "exact extraction time limit; 0: greedy only"},
    {"min-gain", Kind::kValue, "PERCENT",
     "keep the input unless the result is predicted this many percent cheaper (unset: 0.5 under "
     "a latency cost, 0 under opcount)"},
    {"no-check", Kind::kFlag, "",
     "do not run the result beside the input in the interpreter before taking it"},
    {"no-measure", Kind::kFlag, "",
     "take the predicted result without timing it against the input in onnxruntime (by "
     "default an ONNX model is kept unless the result runs measurably faster there)"},
    {"runtime-threads", Kind::kValue, "N",
     "the onnxruntime intra-op threads the model runs with: the onnxruntime cost prices at them, "
     "and a result faster on one thread is timed again with them and kept out where slower; 0: "
     "onnxruntime's default, one per core"},
    {"integer-weights", Kind::kValue, "TYPE",
     "the quantized weights' type the integer kernels of the CPU the model runs on multiply "
     "exactly: int8 (VNNI, Arm) or uint8, or mixed (x86 without VNNI: uint8, int8 where a "
     "product's activations are non-negative); unset: this CPU's, and a model with quantized "
     "weights is timed with every weight in either type too"},
    {"min-speedup", Kind::kValue, "X",
     "keep the input unless onnxruntime runs the result at least X times as fast (and "
     "measurably faster); a result that cannot be timed keeps the input"},
    {"float-model", Kind::kValue, "FILE",
     "the float ONNX model a quantized input quantizes: onnxruntime's check takes the result "
     "only as close to its outputs as the input (relative L2 distance, within 10%); unset: the "
     "input with its activation Quantize/Dequantize pairs taken out stands for it"},
}};

absl::Status bad_value(std::string_view name, std::string_view value, std::string_view wanted) {
  return absl::InvalidArgumentError(
      fmt::format("option {}: '{}' is not {}", name, value, wanted));
}

// A number in [low, high], finite.
absl::StatusOr<double> number(std::string_view name, std::string_view value, double low,
                              double high, std::string_view wanted) {
  double x = 0;
  if (!absl::SimpleAtod(absl::string_view(value.data(), value.size()), &x) || !std::isfinite(x) || x < low || x > high)
    return bad_value(name, value, wanted);
  return x;
}

template <typename Int>
absl::StatusOr<Int> integer(std::string_view name, std::string_view value, Int low, Int high,
                            std::string_view wanted) {
  Int x = 0;
  if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &x) || x < low || x > high) return bad_value(name, value, wanted);
  return x;
}

absl::StatusOr<bool> boolean(std::string_view name, std::string_view value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  return bad_value(name, value, "true or false");
}

// Sets a field from a parsed value, or passes the parse's error on.
template <typename T, typename Field>
absl::Status assign(absl::StatusOr<T> parsed, Field& field) {
  if (!parsed.ok()) return parsed.status();
  field = *parsed;
  return absl::OkStatus();
}

absl::Status set_search_option(OptimizeOptions& o, std::string_view name, std::string_view value) {
  if (name == "search") {
    std::optional<Strategy> strategy = parse_strategy(value);
    if (!strategy) return bad_value(name, value, "mcts, greedy, default or taso");
    o.search.strategy = *strategy;
    return absl::OkStatus();
  }
  if (name == "threads")
    return assign(integer<int>(name, value, 1, kMaxThreads, "a thread count from 1 to 256"),
                  o.search.threads);
  if (name == "seed")
    return assign(integer<std::uint64_t>(name, value, 0, UINT64_MAX, "a seed"), o.search.seed);
  if (name == "budget-nodes")
    return assign(integer<std::size_t>(name, value, 1, SIZE_MAX, "an e-node count of at least 1"),
                  o.budget.max_nodes);
  if (name == "budget-mem")
    return assign(integer<std::size_t>(name, value, 1, SIZE_MAX, "a byte count of at least 1"),
                  o.budget.max_bytes);
  if (name == "time-limit")
    return assign(number(name, value, 1e-9, 1e12, "a positive number of seconds"),
                  o.budget.time_limit_seconds);
  if (name == "time-per-op")
    return assign(number(name, value, 0, 1e6, "a number of seconds, 0 or more"),
                  o.seconds_per_op);
  if (name == "region-ops") {
    absl::StatusOr<int> ops = integer<int>(name, value, 0, 1000000, "a count from 0 to 1000000");
    if (!ops.ok()) return ops.status();
    o.regions = {.target_ops = *ops, .max_ops = *ops * 5 / 2};
    return absl::OkStatus();
  }
  return absl::NotFoundError(std::string(name));
}

absl::Status set_pipeline_option(OptimizeOptions& o, std::string_view name,
                                 std::string_view value) {
  if (name == "cost") {
    if (value.empty()) return bad_value(name, value, "a cost model's name");
    // Resolved by optimize() (cost_model_by_name), whose error names the file.
    o.cost = std::string(value);
    o.cost_model = nullptr;
    return absl::OkStatus();
  }
  if (name == "rules") {
    o.rule_files.emplace_back(value);
    return absl::OkStatus();
  }
  if (name == "unverified-rules") return assign(boolean(name, value), o.unverified_rules);
  if (name == "target") {
    if (value != "onnxruntime" && value != "onnx") return bad_value(name, value, "onnxruntime or onnx");
    o.target = value == "onnx" ? Target::kOnnx : Target::kOnnxRuntime;
    return absl::OkStatus();
  }
  if (name == "ilp-seconds")
    return assign(number(name, value, 0, 1e12, "a number of seconds, 0 or more"), o.ilp_seconds);
  if (name == "min-gain") {
    absl::StatusOr<double> percent = number(name, value, 0, 99.999999, "a percentage below 100");
    if (!percent.ok()) return percent.status();
    o.min_gain = *percent / 100;
    return absl::OkStatus();
  }
  if (name == "no-check") {
    absl::StatusOr<bool> off = boolean(name, value);
    if (!off.ok()) return off.status();
    o.self_check = !*off;
    return absl::OkStatus();
  }
  if (name == "no-measure") {
    absl::StatusOr<bool> off = boolean(name, value);
    if (!off.ok()) return off.status();
    o.measure = !*off;
    return absl::OkStatus();
  }
  if (name == "runtime-threads") {
    absl::StatusOr<int> n = integer<int>(name, value, 0, ort::kMaxRuntimeThreads,
                                         fmt::format("a thread count from 0 to {}", ort::kMaxRuntimeThreads));
    if (!n.ok()) return n.status();
    o.runtime_threads = *n;
    return absl::OkStatus();
  }
  if (name == "integer-weights") {
    o.mixed_integer_weights = value == "mixed";
    if (value.empty()) {
      o.integer_weights.reset();
      return absl::OkStatus();
    }
    if (value != "int8" && value != "uint8" && value != "mixed")
      return bad_value(name, value, "int8, uint8 or mixed");
    o.integer_weights = value == "int8" ? tensor::DType::kInt8 : tensor::DType::kUInt8;
    return absl::OkStatus();
  }
  if (name == "float-model") {
    // Read by onnxruntime's harness at the timing; optimize() refuses a
    // path that is not a file before any search.
    o.float_model = std::string(value);
    return absl::OkStatus();
  }
  if (name == "min-speedup") {
    absl::StatusOr<double> x = number(name, value, 1e-9, 1e9, "a speedup above 0");
    if (!x.ok()) return x.status();
    o.min_speedup = *x;
    return absl::OkStatus();
  }
  return absl::NotFoundError(std::string(name));
}

std::string names() {
  std::string out;
  for (const OptionInfo& o : kOptions) out += fmt::format("{}{}", out.empty() ? "" : ", ", o.name);
  return out;
}

}  // namespace

std::span<const OptionInfo> optimize_options() { return kOptions; }

const OptionInfo* find_option(std::string_view name) {
  for (const OptionInfo& o : kOptions)
    if (o.name == name) return &o;
  return nullptr;
}

absl::Status set_option(OptimizeOptions& options, std::string_view name, std::string_view value) {
  if (find_option(name) == nullptr)
    return absl::InvalidArgumentError(
        fmt::format("unknown option '{}' (the options: {})", name, names()));
  absl::Status s = set_search_option(options, name, value);
  if (absl::IsNotFound(s)) s = set_pipeline_option(options, name, value);
  return s;
}

std::string option_value(const OptimizeOptions& o, std::string_view name) {
  auto flag = [](bool on) { return std::string(on ? "true" : "false"); };
  if (name == "search") return std::string(to_string(o.search.strategy));
  if (name == "budget-nodes") return std::to_string(o.budget.max_nodes);
  if (name == "budget-mem")
    return o.budget.max_bytes == Budget::kUnlimited ? "" : std::to_string(o.budget.max_bytes);
  if (name == "time-limit") return fmt::format("{}", o.budget.time_limit_seconds);
  if (name == "time-per-op") return fmt::format("{}", o.seconds_per_op);
  if (name == "cost") return o.cost;
  if (name == "rules") return fmt::format("{}", fmt::join(o.rule_files, ","));
  if (name == "unverified-rules") return flag(o.unverified_rules);
  if (name == "target") return o.target == Target::kOnnx ? "onnx" : "onnxruntime";
  if (name == "threads") return std::to_string(o.search.threads);
  if (name == "seed") return std::to_string(o.search.seed);
  if (name == "region-ops") return std::to_string(o.regions.target_ops);
  if (name == "ilp-seconds") return fmt::format("{}", o.ilp_seconds);
  if (name == "min-gain") return o.min_gain ? fmt::format("{}", *o.min_gain * 100) : "";
  if (name == "no-check") return flag(!o.self_check);
  if (name == "no-measure") return flag(!o.measure);
  if (name == "min-speedup") return o.min_speedup ? fmt::format("{}", *o.min_speedup) : "";
  if (name == "float-model") return o.float_model;
  if (name == "runtime-threads") return std::to_string(o.runtime_threads);
  if (name == "integer-weights")
    return !o.integer_weights        ? ""
           : o.mixed_integer_weights ? "mixed"
                                     : std::string(tensor::dtype_name(*o.integer_weights));
  return "";
}

std::string option_help(const OptionInfo& option) {
  if (option.kind == Kind::kFlag) return std::string(option.help);
  const std::string value = option_value(OptimizeOptions{}, option.name);
  if (value.empty()) return std::string(option.help);
  return fmt::format("{} (default {})", option.help, value);
}

}  // namespace saturn

// Verification: the ONNX files onnxruntime runs, their comparison and timing
// by the harness, and the report's lines. See runtime.h.
#include <string>
#include <utility>

#include "saturn/base/file.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/ort/harness_internal.h"
#include "saturn/ort/runtime.h"
#include "saturn/onnx/onnx.h"

namespace saturn::ort {

using tensor::Graph;

absl::StatusOr<std::string> runtime_file(const std::string& model, const Graph& graph,
                                         const TempDir& dir, const std::string& stem,
                                         const tensor::OnnxImportOptions& onnx) {
  if (absl::Status s = dir.status(); !s.ok()) return s;
  const std::string path = (dir.path() / (stem + ".onnx")).string();
  if (model.ends_with(".onnx")) {
    absl::StatusOr<std::string> bytes = tensor::runtime_onnx_model(model, onnx);
    if (!bytes.ok()) return bytes.status();
    if (absl::Status s = write_text_file(path, *bytes); !s.ok()) return s;
    return path;
  }
  if (absl::Status s = tensor::save_onnx_model(graph, path); !s.ok()) return s;
  return path;
}

absl::StatusOr<VerifyReport> verify_models(const std::string& original,
                                           const std::string& optimized,
                                           const RuntimeOptions& options) {
  absl::StatusOr<nlohmann::json> j = run_harness({"verify", original, optimized}, options);
  if (!j.ok()) return j.status();
  VerifyReport r;
  const bool checked = j->contains("checker") && (*j)["checker"].value("ok", false);
  r.ok = j->value("ok", false) && checked;
  r.speedup = j->value("speedup", 0.0);
  r.json = std::move(*j);
  return r;
}

absl::StatusOr<Decision> decide_faster(const std::string& input, const std::string& candidate,
                                       const std::map<std::string, std::int64_t>& sizes,
                                       const DecideOptions& options) {
  std::vector<std::string> args = {
      "decide",       input,
      candidate,      "--seconds",
      fmt::format("{}", options.seconds), "--max-seconds",
      fmt::format("{}", options.max_seconds), "--min-rounds",
      std::to_string(options.min_rounds), "--max-rounds",
      std::to_string(options.max_rounds), "--min-gain",
      fmt::format("{}", options.min_gain), "--check-threads",
      std::to_string(options.check_threads)};
  for (const auto& [name, size] : sizes) {
    args.push_back("--dim");
    args.push_back(fmt::format("{}={}", name, size));
  }
  if (!options.float_model.empty()) {
    args.push_back("--float-model");
    args.push_back(options.float_model);
  }
  absl::StatusOr<nlohmann::json> j = run_harness(args, options.runtime);
  if (!j.ok()) return j.status();
  Decision d;
  const bool checked = j->contains("checker") && (*j)["checker"].value("ok", false);
  d.outputs_match = j->value("outputs_match", false) && checked;
  d.faster = d.outputs_match && j->value("faster", false);
  d.speedup = j->value("speedup", 0.0);
  d.speedup_low = j->value("speedup_low", 0.0);
  d.speedup_high = j->value("speedup_high", 0.0);
  d.noise = j->value("noise", 0.0);
  d.threshold = j->value("threshold", 0.0);
  d.rounds = j->value("rounds", 0);
  auto count_sessions = [](const nlohmann::json& j) {
    int n = 0;
    if (const auto s = j.find("sessions"); s != j.end() && s->is_array())
      for (const nlohmann::json& k : *s) n += k.is_number_integer() ? k.get<int>() : 0;
    return n;
  };
  d.sessions = count_sessions(*j);
  if (const auto c = j->find("at_threads"); c != j->end() && c->is_object()) {
    d.check_threads = c->value("threads", 0);
    d.check_speedup = c->value("speedup", 0.0);
    d.check_low = c->value("speedup_low", 0.0);
    d.check_high = c->value("speedup_high", 0.0);
    d.slower_at_check = c->value("slower", false);
    d.sessions += count_sessions(*c);
  }
  d.clock = j->value("clock", "");
  d.seconds = j->value("seconds", 0.0);
  d.json = std::move(*j);
  return d;
}

std::string describe(const VerifyReport& r) {
  std::string out;
  for (const nlohmann::json& o : r.json["outputs"]) {
    const bool ok = o.value("ok", false);
    out += fmt::format("  output {:<20} {}", o.value("name", "?"), ok ? "match" : "MISMATCH");
    if (o.contains("max_abs_diff") && o["max_abs_diff"].is_number() && o.contains("error_ratio") &&
        o["error_ratio"].is_number())
      out += fmt::format(" (max |diff| {:.3g}, error ratio {:.3g})",
                         o["max_abs_diff"].get<double>(), o["error_ratio"].get<double>());
    if (o.contains("detail")) out += ": " + o["detail"].get<std::string>();
    out += "\n";
  }
  if (const auto checker = r.json.find("checker"); checker != r.json.end()) {
    const std::string verdict = checker->value("ok", false)
                                    ? "passes"
                                    : "FAILS: " + checker->value("message", std::string("?"));
    out += fmt::format("  ONNX checker (onnx {}, full check): {}\n", checker->value("onnx", "?"),
                       verdict);
  }
  const nlohmann::json& a = r.json["latency"]["original"];
  const nlohmann::json& b = r.json["latency"]["optimized"];
  auto ms = [](const nlohmann::json& s, const char* key) { return s[key].get<double>() / 1000.0; };
  out += fmt::format(
      "  onnxruntime CPU latency, median of {} runs [p10, p90]: original {:.3f} ms [{:.3f}, "
      "{:.3f}], optimized {:.3f} ms [{:.3f}, {:.3f}]\n",
      a["runs"].get<int>(), ms(a, "median_us"), ms(a, "p10_us"), ms(a, "p90_us"),
      ms(b, "median_us"), ms(b, "p10_us"), ms(b, "p90_us"));
  out += fmt::format(
      "  speedup {:.3f}x (median over run pairs) [p10 {:.3f}, p90 {:.3f}]; outputs {}\n", r.speedup,
      r.json["speedup_p10"].get<double>(), r.json["speedup_p90"].get<double>(),
      r.ok ? "match" : "DIFFER or fail the checker");
  return out;
}

}  // namespace saturn::ort

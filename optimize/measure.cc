#include "saturn/optimize/measure.h"

#include <algorithm>
#include <string>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "saturn/base/stopwatch.h"
#include "saturn/optimize/optimize_internal.h"
#include "saturn/ort/runtime.h"
#include "saturn/onnx/onnx.h"

namespace saturn {

namespace {

// Why the harness found the candidate's outputs wrong (its `decide` JSON):
// the checker's refusal, a quantized model less accurate than its input
// against the float model it quantizes, or outputs that differ.
std::string mismatch(const nlohmann::json& j) {
  if (const auto c = j.find("checker"); c != j.end() && !c->value("ok", false))
    return fmt::format("PyPI's ONNX checker refuses it ({})", c->value("message", std::string("?")));
  if (const auto o = j.find("outputs"); j.value("compared_by", "") != "" && o != j.end()) {
    for (const nlohmann::json& out : *o) {
      if (out.value("ok", true) || !out.contains("candidate_distance")) continue;
      return fmt::format(
          "its output '{}' is less accurate than the input's in onnxruntime (relative L2 "
          "distance to the float model it quantizes {:.4f}, the input's {:.4f}, means over {} "
          "seeded inputs)",
          out.value("name", "?"), out.value("candidate_distance", 0.0),
          out.value("input_distance", 0.0), out.value("inputs", 0));
    }
  }
  return "its outputs differ from the input's in onnxruntime";
}

// The two ONNX files onnxruntime times, as the user runs them: the input
// file (itself where it is self-contained, else a self-contained copy, its
// symbolic dimensions kept) and the
// candidate as it is written, both fed inputs at the sizes the search used.
// Timed with the dimensions fixed instead, onnxruntime folds the shape
// arithmetic a symbolic model computes at run time, and a candidate that
// adds some looks faster than it runs: the corpus's BERT-base, RoBERTa and
// DistilBERT measured 1.04-1.05x that way and 0.98-0.99x as written.
absl::StatusOr<ort::Decision> time_candidate(const tensor::Graph& input,
                                             const tensor::Graph& candidate,
                                             const ort::DecideOptions& options,
                                             const ort::TempDir& dir) {
  if (absl::Status s = dir.status(); !s.ok()) return s;
  absl::StatusOr<bool> as_written = tensor::runs_as_written(input.source);
  if (!as_written.ok()) return as_written.status();
  std::string a = input.source;
  if (!*as_written) {
    absl::StatusOr<std::string> bytes =
        tensor::runtime_onnx_model(input.source, {}, tensor::InputSizes::kSymbolic);
    if (!bytes.ok()) return bytes.status();
    a = (dir.path() / "input.onnx").string();
    if (absl::Status s = write_text_file(a, *bytes); !s.ok()) return s;
  }
  const std::string b = (dir.path() / "candidate.onnx").string();
  if (absl::Status s = tensor::save_onnx_model(candidate, b); !s.ok()) return s;
  return ort::decide_faster(a, b, input.symbols.sizes, options);
}

}  // namespace

void measure_result(const tensor::Graph& input, const OptimizeOptions& options,
                    OptimizeResult& result) {
  if (!options.measure && !options.min_speedup) return;
  Measurement& m = result.measured.emplace();
  if (result.kept_input()) {
    m.note = "the input was kept: nothing to time";
    return;
  }
  // Without a timing the prediction decides, unless a speedup was asked for.
  auto untimed = [&](std::string why) {
    if (!options.min_speedup) {
      m.note = fmt::format("{}: the prediction decided", why);
      return;
    }
    m.note = fmt::format("{}: the input was kept (--min-speedup needs a timing)", why);
    refuse(input, result, Gate::kMeasured, m.note);
  };
  if (input.source.empty()) {
    untimed("not read from an ONNX file");
    return;
  }
  if (options.before_timing) options.before_timing();
  const Stopwatch clock;
  ort::TempDir dir;
  // One thread decides, timed by the thread's CPU time, which other load
  // cannot inflate; a gain found there is checked at the threads the model
  // will run with.
  ort::DecideOptions timing;
  timing.check_threads = options.runtime_threads > 0 ? options.runtime_threads
                                                     : ort::default_runtime_threads();
  // The timing takes at most the search's time limit.
  timing.seconds = std::min(timing.seconds, options.budget.time_limit_seconds);
  timing.max_seconds = std::min(timing.max_seconds, options.budget.time_limit_seconds);
  timing.float_model = options.float_model;
  absl::StatusOr<ort::Decision> d = time_candidate(input, result.graph, timing, dir);
  result.times.measure = clock.seconds();
  // No onnxruntime, or a model onnxruntime cannot take in one piece: the
  // prediction decides.
  if (!d.ok() && (absl::IsFailedPrecondition(d.status()) || absl::IsResourceExhausted(d.status()))) {
    untimed(fmt::format("not timed: {}", message(d.status())));
    return;
  }
  if (!d.ok()) {
    m.note = fmt::format("onnxruntime could not time the candidate ({}): the input was kept",
                         message(d.status()));
    refuse(input, result, Gate::kMeasured, m.note);
    return;
  }
  const double predicted = result.predicted_speedup();
  m.timed = true;
  m.outputs_match = d->outputs_match;
  m.faster = d->faster;
  m.speedup = d->speedup;
  m.speedup_low = d->speedup_low;
  m.speedup_high = d->speedup_high;
  m.noise = d->noise;
  m.threshold = d->threshold;
  m.rounds = d->rounds;
  m.sessions = d->sessions;
  m.check_threads = d->check_threads;
  m.check_speedup = d->check_speedup;
  m.check_low = d->check_low;
  m.check_high = d->check_high;
  const int threads = d->json.value("threads", 1);
  m.runtime = fmt::format("onnxruntime {}, {} thread{}", d->json.value("onnxruntime", "?"), threads,
                          threads == 1 ? "" : "s");
  m.clock = d->clock;
  // What the check at the model's threads found, where it ran.
  const std::string checked =
      m.check_threads > 1
          ? fmt::format("; on {} threads {:.3f}x, 90% interval [{:.3f}, {:.3f}], wall clock",
                        m.check_threads, m.check_speedup, m.check_low, m.check_high)
          : "";
  if (m.check_threads > 1) m.runtime += fmt::format(", checked on {} threads", m.check_threads);
  if (!d->outputs_match) {
    m.note = fmt::format("{}: the input was kept", mismatch(d->json));
  } else if (d->slower_at_check) {
    m.note = fmt::format(
        "predicted {:.3f}x, faster on one thread ({:.3f}x, 90% interval [{:.3f}, {:.3f}]) but "
        "measurably slower at the threads the model runs with{}: the input was kept",
        predicted, m.speedup, m.speedup_low, m.speedup_high, checked);
  } else if (!d->faster) {
    m.note = fmt::format(
        "predicted {:.3f}x, not measurably faster ({:.3f}x, 90% interval [{:.3f}, {:.3f}], needed "
        "above {:.3f}): the input was kept",
        predicted, m.speedup, m.speedup_low, m.speedup_high, m.threshold);
  } else if (options.min_speedup && m.speedup < *options.min_speedup) {
    m.faster = false;
    m.note = fmt::format(
        "predicted {:.3f}x, measured {:.3f}x (90% interval [{:.3f}, {:.3f}]), below the {:.3f}x "
        "asked for: the input was kept",
        predicted, m.speedup, m.speedup_low, m.speedup_high, *options.min_speedup);
  } else {
    m.note = fmt::format("predicted {:.3f}x, measurably faster ({:.3f}x, 90% interval [{:.3f}, "
                         "{:.3f}]{}): taken",
                         predicted, m.speedup, m.speedup_low, m.speedup_high, checked);
    pass(result, Gate::kMeasured, m.note);
    return;
  }
  refuse(input, result, Gate::kMeasured, m.note);
}

namespace {

bool same_nodes(const tensor::Graph& a, const tensor::Graph& b) {
  if (a.nodes.size() != b.nodes.size() || a.outputs.size() != b.outputs.size()) return false;
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const tensor::Node &x = a.nodes[i], &y = b.nodes[i];
    if (x.op != y.op || x.inputs != y.inputs || !(x.attributes == y.attributes)) return false;
  }
  for (std::size_t i = 0; i < a.outputs.size(); ++i)
    if (a.outputs[i].node != b.outputs[i].node) return false;
  return true;
}

void add_times(PhaseTimes& to, const PhaseTimes& from) {
  to.search += from.search;
  to.extract += from.extract;
  to.check += from.check;
  to.measure += from.measure;
}

// What a candidate's timing found, in a line: "how: note".
std::string timing_line(const std::string& how, const OptimizeResult& r) {
  return fmt::format("{}: {}", how, r.measured ? r.measured->note : r.decision.summary());
}

}  // namespace

bool outruns(const Measurement& other, const Measurement& taken) {
  return other.speedup_low > taken.speedup;
}

void measure_candidates(const tensor::Graph& input, const OptimizeOptions& options,
                        std::string how, OptimizeResult& result, std::vector<Candidate> others) {
  measure_result(input, options, result);
  if (!result.measured) return;  // no timing asked for: the prediction decided
  for (Candidate& other : others) {
    OptimizeResult& found = other.found;
    if (found.kept_input() || (!result.kept_input() && same_nodes(found.graph, result.graph))) {
      add_times(result.times, found.times);
      continue;
    }
    // Both are timed from here on (measure_result sets `measured`).
    measure_result(input, options, found);
    const bool better = !found.kept_input() &&
                        (result.kept_input() || outruns(*found.measured, *result.measured));
    std::vector<std::string> lines = std::move(result.measured->other_candidates);
    if (better) {
      lines.push_back(timing_line(how, result));
      add_times(found.times, result.times);
      result = std::move(found);
      how = std::move(other.how);
    } else {
      lines.push_back(timing_line(other.how, found));
      add_times(result.times, found.times);
    }
    result.measured->candidate = how;
    result.measured->other_candidates = std::move(lines);
  }
}

}  // namespace saturn

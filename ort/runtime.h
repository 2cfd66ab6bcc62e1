// saturn's bridge to onnxruntime: it runs the harness ort/harness/ort_run.py
// (onnxruntime from PyPI in the project's virtual environment, CPU, graph
// optimization level "all") and reads the JSON it prints.
//
//   RuntimeOptions o;                       // 20 timed runs, rtol 1e-3, atol 1e-4
//   absl::StatusOr<VerifyReport> r = verify_models("a.onnx", "b.onnx", o);
//   r->ok;  r->speedup;  r->json;
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "saturn/tensor/graph.h"
#include "saturn/onnx/onnx.h"

namespace saturn::ort {

struct RuntimeOptions {
  int runs = 20;  // timed runs per model
  int warmup = 3;
  double rtol = 1e-3, atol = 1e-4;
  std::uint64_t seed = 1;
  int threads = 2;  // onnxruntime intra-op threads
  // Timing single models (calibrate): whether onnxruntime's profiler times
  // their kernels, and what each kernel's time is corrected by (see
  // ProfilerCorrection).
  bool profile = true;
  double kernel_offset_us = 0, kernel_floor_us = 0;
};

// The intra-op threads onnxruntime runs a session with by default on this
// machine: one per physical core. A run asks for kMaxRuntimeThreads at most.
int default_runtime_threads();
inline constexpr int kMaxRuntimeThreads = 256;

// A directory removed (with its files) when this object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // An error when the directory could not be created.
  absl::Status status() const;

 private:
  std::filesystem::path path_;
};

// `text` in single quotes for the shell.
std::string shell_quote(const std::string& text);

// An ONNX file in `dir` that onnxruntime can run for `graph` as loaded from
// `model`: the ONNX file's model made self-contained (runtime_onnx_model,
// with the import's `onnx` options), or the graph exported.
absl::StatusOr<std::string> runtime_file(const std::string& model, const tensor::Graph& graph,
                                         const TempDir& dir, const std::string& stem,
                                         const tensor::OnnxImportOptions& onnx = {});

struct VerifyReport {
  bool ok = false;      // every output within tolerance, and PyPI's ONNX checker passes
  double speedup = 0;   // median over the A/B run pairs of their latency ratio
  nlohmann::json json;  // everything the harness measured
};

// Compares and times two ONNX files (see ort_run.py).
absl::StatusOr<VerifyReport> verify_models(const std::string& original,
                                           const std::string& optimized,
                                           const RuntimeOptions& options);

// The human-readable lines for a report.
std::string describe(const VerifyReport& report);

// Whether a candidate runs measurably faster than its input (ort_run.py's
// decide). With one intra-op thread, pairs of sessions: the input's and the
// candidate's held together (each pair released before the next loads) and
// run in alternating rounds, a short burst of each, so that the machine's
// changing speed weighs on both alike; a run is timed by the session
// thread's CPU time, so that other load on the machine does not count. A
// pair's speedup is one sample: two sessions of one model differ by a few
// percent for their whole life (on this machine up to 7% on a 30 ms decoder
// step). The speedup is the pairs' geometric mean with a 90% interval; the
// candidate is faster when the interval's low end clears 1 + min_gain, and
// blocks of three pairs are added, up to three, while it straddles that and
// the next fits in `seconds`. With more threads, by the wall clock, one
// session at a time (two live thread pools spin against each other: on 2
// cores SqueezeNet's paired ratios spread p10-p90 0.83-1.86 with two
// threads, 0.96-1.07 with one), in blocks of four whose order reverses.
struct DecideOptions {
  RuntimeOptions runtime{.warmup = 2, .threads = 1};
  // 30 s: beside load on the other core a session loads slower, and at 20 s
  // BART-base's first block left no room for a second (its interval ended
  // at 1.007 of the 1.010 sought, where quietly it cleared it).
  double seconds = 30;
  // An undecided first block (three pairs: an interval 2.92 times their
  // spread over the root of three, Student's t at 2 degrees of freedom) is
  // followed by a second where that ends within this, though past
  // `seconds`: a model of 0.4 s a run fits one block in 30 s.
  double max_seconds = 60;
  int min_rounds = 5, max_rounds = 41;
  double min_gain = 0.01;
  // More than 1: a candidate found faster is timed again with this many
  // intra-op threads by the wall clock, and kept out where measurably
  // slower there.
  int check_threads = 0;
  // The float model a quantized input quantizes (OptimizeOptions::
  // float_model); empty: the harness makes its stand-in.
  std::string float_model;
};
struct Decision {
  bool outputs_match = false;  // and PyPI's ONNX checker passes the candidate
  bool faster = false;
  // The input's time over the candidate's: the ratio of the geometric
  // means of their sessions' medians, and its 90% interval (each end a
  // one-sided 95% bound; Student's t from the spread of one model's
  // sessions).
  double speedup = 0;
  double speedup_low = 0, speedup_high = 0;
  double noise = 0;      // the spread of one model's sessions (a fraction)
  double threshold = 0;  // what speedup_low had to beat: 1 + min_gain
  int sessions = 0;      // sessions timed, both models together
  int rounds = 0;  // runs timed, over all sessions
  // The check at DecideOptions::check_threads, where it ran: the speedup
  // and its interval by the wall clock, and whether it was measurably
  // slower there.
  int check_threads = 0;
  double check_speedup = 0, check_low = 0, check_high = 0;
  bool slower_at_check = false;
  std::string clock;  // what timed a run: "thread CPU time" or "wall clock"
  double seconds = 0;
  nlohmann::json json;  // everything the harness measured
};
// `sizes` gives the symbolic input dimensions' sizes (an unnamed axis as
// "unk__INPUT_AXIS"): both models are fed inputs of those sizes and run as
// they are, their shape arithmetic included.
absl::StatusOr<Decision> decide_faster(const std::string& input, const std::string& candidate,
                                       const std::map<std::string, std::int64_t>& sizes = {},
                                       const DecideOptions& options = {});

// Onnxruntime's profiler makes each kernel it times take longer: on this
// machine a Relu of 512 values shows 6.5 us in the profile and costs 0.9 us
// in a run without the profiler (the excess measured 3.4-9 us, following
// the machine's speed). Left in, that excess prices every small operator
// several times over, and a search buys with it rewrites that only save
// nodes (on a model of small products, predicted gains of 2-7% that ran
// 3-5% slower). For a Relu of 200,000 values (190 us) the profile shows
// about 6 us less than a plain run per operator instead, so the correction,
// measured on tiny operators, prices that one about 6% low.
// Calibration measures it on a chain of tiny operators, timed with and
// without the profiler, and takes it off every kernel's time; no kernel
// costs less than a chain node does in a plain run (the floor).
struct ProfilerCorrection {
  double excess_us = 0;  // what the profiler adds to a kernel's time
  double floor_us = 0;   // a tiny operator's time per node in a run without it
};
// The line calibrate prints for it.
std::string describe(const ProfilerCorrection& correction);

struct CalibrationStats {
  std::size_t signatures = 0;  // distinct operator signatures in the models
  std::size_t cached = 0;      // already in the table
  // Entries measured another way, dropped and measured again: a whole table
  // without this method (an older saturn's) or timed at other intra-op
  // threads, or an entry timed alone whose operator now reads a convolution.
  std::size_t stale = 0;
  std::size_t measured = 0;
  // Operators a single-operator model cannot show (non-tensor inputs,
  // subgraphs reading enclosing values, an export that fails, or a model
  // onnxruntime cannot run).
  std::size_t skipped = 0;
  ProfilerCorrection correction;  // taken off the kernels measured now
  // The correction is the table's own (timed on this machine before), so
  // that every entry of a table is corrected alike; --refresh measures it anew.
  bool correction_kept = false;
  // Entries kept from a table timed on another machine (or one that does
  // not say), and that machine ("" when unknown).
  std::size_t foreign = 0;
  std::string foreign_machine;
  // Products of quantized weights timed with uint8 and with int8 weights,
  // and what a uint8 weight took beyond an int8 one per multiply-add (in
  // us), when they were timed now.
  std::size_t weight_products = 0;
  std::optional<double> unsigned_weight_us_per_mac;
};
// "N entries measured on MACHINE, not on this machine (THIS)", for
// stats.foreign > 0.
std::string describe_foreign(const CalibrationStats& stats);

// Times every distinct operator signature of `graphs` as a single-operator
// ONNX model in onnxruntime (the kernel time its profiler reports) and
// writes (or extends) the measured cost table at `table_path`; signatures
// already in the table are not measured again. A table measured another way
// (an older saturn timed whole runs) is measured anew. With
// `explore_nodes`, the signatures of the operators the rules can produce are
// measured too, so that a search under the table prices its candidates from
// measurements rather than from the roofline fallback. An operator that
// reads a convolution's 4-D output is also timed between two convolutions,
// and its entry is that time with the layout reorders it makes onnxruntime
// insert (a channel Split costs 2.5-4x its time alone), or nothing when
// onnxruntime fused it into the convolution (a Relu); its time alone is kept
// beside it, for where it does not read a convolution (see OpContext).
// Where the models hold products of quantized weights and the table has no
// figure for them yet (or --refresh), their largest distinct shapes are
// timed as QLinearMatMul with uint8 and with int8 weights, and the table
// records what a uint8 weight takes beyond an int8 one per multiply-add
// (MeasuredCostModel::unsigned_weight_us_per_mac).
struct CalibrationOptions {
  RuntimeOptions runtime{.runs = 10};
  // Also time the operators the shipped rules can rewrite each model into:
  // its e-graph grown (greedily) to this many e-nodes. 0: the model's own
  // operators only.
  std::size_t explore_nodes = 2000;
  // Every model is timed this many times, in passes over all of them, and
  // its fastest pass is kept. The machine's speed drifts, at times by 1.5x
  // for seconds to minutes: in one pass over Inception-v3's 1x1
  // convolutions, four of nineteen took 1.5x their neighbours' time per
  // channel, and a search exploits exactly such entries (three convolutions
  // priced high and their merge low make a merge that runs slower).
  int passes = 3;
  // Time every signature of the models again, also those in the table, so
  // that the entries a search compares come from one sitting.
  bool refresh = false;
};

absl::StatusOr<CalibrationStats> calibrate(const std::vector<const tensor::Graph*>& graphs,
                                           const std::string& table_path,
                                           const CalibrationOptions& options);

// The model calibrate() times for one operator: fresh inputs (weights stay
// weights, so that the runtime prepares them as it would in the model), or
// nothing when a single operator cannot stand alone; written for `opsets`
// (those of the model the operator comes from).
//
// Between convolutions (`kBetweenConvolutions`), each 4-D float input that
// is not a weight comes from a 1x1 convolution of a 4-channel input, and
// each 4-D float output goes into a 1x1 convolution to 8 channels strided
// down to one pixel. Onnxruntime then runs the operator as in a
// convolutional network, inside a chain of convolutions in its blocked
// layout, and its profile shows the reorders out of and back into that
// layout that the operator forces (an operator the blocked layout does not
// cover, such as a channel Split). The context's own nodes are
// convolutions, and the edges of the chain are tiny: a 4-channel input is
// read as it is, and the last reorders move 8 values.
//
// Mixed (`kMixed`, for an operator with two 4-D float activation inputs or
// more): the first of them is a plain input and the others come from
// convolutions, as when a Concat gathers a convolution and a Split's part.
// Onnxruntime then runs the operator in the plain layout and reorders the
// convolutions' outputs into it. Nothing when the operator has fewer such
// inputs.
//
// Over masked scores (`kMaskedScores`, for a Softmax): its input is the sum
// of an input and a causal mask (0 on and below the diagonal of its last two
// axes, -1e4 above; see OpContext::masked).
enum class Placement : std::uint8_t { kAlone, kBetweenConvolutions, kMixed, kMaskedScores };
std::optional<tensor::Graph> timing_model(tensor::Op op, const Attributes& attributes,
                                          std::span<const tensor::ValueType> in,
                                          const std::vector<bool>& in_weight,
                                          const tensor::ValueType& out, std::string name,
                                          const tensor::Opsets& opsets, Placement placement);

// An operator's cost from the harness's kernels for its model between
// convolutions (see timing_model; each kernel: "op", "input" and "output"
// shapes, "us"): its own kernels, and the reorders whose plain-layout side
// has the shape of one of its 4-D inputs (`in`) or outputs (`out`); the
// reorders at the chain's edges have other shapes. Zero when the operator
// ran inside a convolution (onnxruntime fused it into the one before);
// nothing when the context's convolutions are not among the kernels.
std::optional<double> cost_between_convolutions(const nlohmann::json& kernels,
                                                const std::vector<tensor::Dims>& in,
                                                const std::vector<tensor::Dims>& out);

}  // namespace saturn::ort

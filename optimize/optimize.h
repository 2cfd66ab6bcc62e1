// saturn::optimize: the whole pipeline in one call. The graph goes into an
// e-graph, a search strategy grows it under the budget, an extractor picks
// the cheapest equivalent graph, and the result reports what happened.
//
//   tensor::Graph g = *tensor::build_zoo_model("squeezenet");
//   OptimizeOptions options;
//   options.search.strategy = Strategy::kMcts;
//   options.budget.max_nodes = 2000;
//   absl::StatusOr<OptimizeResult> r = optimize(g, options);
//   fmt::print("{:.1f}% cheaper\n", r->improvement_percent());
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/base/memory.h"
#include "saturn/costmodel/cost_model.h"
#include "saturn/extract/extractor.h"
#include "saturn/search/search.h"
#include "saturn/rules/tensor/rule_check.h"
#include "saturn/tensor/graph.h"
#include "saturn/optimize/decide.h"
#include "saturn/optimize/regions.h"

namespace saturn {

// The MCTS trees of one region structure's search, whatever the thread
// count: the threads share the trees of all the structures, and a fixed
// count keeps the result independent of the thread count.
inline constexpr int kRegionTrees = 2;

// What the optimized graph may contain: onnxruntime's fused operators
// (com.microsoft domain) too, or standard ONNX operators only.
enum class Target { kOnnxRuntime, kOnnx };

// The options of a run, whose initializers are the defaults of every way in
// (the command line, the Python module, the library); optimize/options.h
// sets them by name.
struct OptimizeOptions {
  // Strategy, seed, threads and per-strategy settings: MCTS on 2 threads.
  SearchOptions search{.threads = kDefaultThreads};
  // A graph with more operators than regions.max_ops is cut into regions
  // (optimize/regions.h), each searched on its own: the budget's e-nodes are
  // then per region, its bytes for all the regions searched at once
  // (search.threads of them, kRegionTrees e-graphs each), and its time
  // limit for the whole search (each round of search.threads regions gets
  // an equal share). Regions with one structure are searched once.
  // target_ops 0: never cut.
  tensor::RegionOptions regions;
  SearchBudget budget;  // search/defaults.h
  // The search of a graph (or of a region) ends after this many seconds per
  // operator, or at the time limit if that comes first, and after
  // kMinSearchSeconds at the least: search time follows the size of what is
  // searched. Greedy saturation runs first and ends the search where it
  // reaches a fixpoint, and MCTS falls back on its state wherever the search
  // finds nothing cheaper, so a short search never ends worse than greedy.
  // The exact extraction's time (ilp_seconds) is capped by the same
  // allowance. 0: the time limit alone. 2.5 ms: on the seven tuning models
  // of the corpus under 300 operators that took over 2 s at 5 ms (search
  // and extraction each at the cap), 2.5 ms found graphs of the same
  // predicted cost.
  double seconds_per_op = 0.0025;
  // The cost model by name (cost_model_by_name), used unless cost_model is
  // set: "onnxruntime" is onnxruntime's CPU provider as measured at
  // runtime_threads, from the table `saturn calibrate` made on this machine
  // at those threads where there is one, else from the shipped table timed
  // nearest to them (cost_spec). On the corpus's BERT-base and DistilBERT (tuning
  // part) the roofline's best graphs ran 1.011x and 1.007x in onnxruntime,
  // within the noise, and were kept; the shipped table's ran 1.040x and
  // 1.048x, and were taken.
  std::string cost = std::string(kDefaultCost);
  std::shared_ptr<const CostModel> cost_model;
  EGraphCostOptions cost_options;
  // Rule files; empty means the shipped tensor rules. Every rule of these
  // files is verified first (rules/tensor/rule_check.h): a file with an
  // unsound rule is refused. Verdicts are cached by file content in
  // rule_cache_dir ("" caches nothing).
  std::vector<std::string> rule_files;
  bool unverified_rules = false;  // true: use rule_files without verifying them
  // kOnnx leaves out the rules that build runtime operators.
  Target target = Target::kOnnxRuntime;
  std::string rule_cache_dir = default_rule_cache_dir();
  // Seconds for the exact ILP extraction; 0 uses the greedy DAG extraction only.
  double ilp_seconds = 10;
  // The result replaces the input only when it is predicted at least this
  // fraction cheaper (0.005: half a percent); 0 takes any strict gain. A
  // latency model's per-kernel figures are good to a few percent at best,
  // so a predicted gain below that is noise that a runtime may well turn
  // into a loss. Unset: kDefaultMinGain, or 0 under the opcount model (as
  // `saturn optimize`; see min_gain_of).
  std::optional<double> min_gain;
  // Before a changed graph is returned, it runs beside its input in saturn's
  // interpreter on seeded random inputs (optimize/self_check.h): an output that
  // differs is an error naming the rules applied. A graph cut into regions
  // is checked region by region (each structure's result against the
  // region). false: no check.
  bool self_check = true;
  // Never slower: a graph read from an ONNX file (tensor::Graph::source)
  // whose candidate the prediction takes is timed against it in
  // onnxruntime (optimize/measure.h), and the input is kept unless the
  // candidate is measurably faster and its outputs match there. Without
  // onnxruntime the prediction decides, and the result says so. false: the
  // prediction alone decides.
  bool measure = true;
  // Where set, the timing in onnxruntime must find the candidate at least
  // this many times as fast as the input (its median speedup) besides
  // measurably faster, and a candidate that cannot be timed keeps the
  // input. 1: measurably faster, and timed (the command line's
  // --keep-faster).
  std::optional<double> min_speedup;
  // The intra-op threads the model will run with in onnxruntime. The
  // candidate is timed on one thread by the session thread's CPU time,
  // which the machine's other load cannot inflate, and must be measurably
  // faster there; with more threads here it is timed again with them by the
  // wall clock and kept out where measurably slower (a gain on one thread
  // need not hold on two: the corpus's 1.46x, 1.10x and 1.11x on one ran
  // 1.31x, 1.06x and 1.01x on two). The onnxruntime cost prices at these
  // threads too. 0: onnxruntime's default here (one per core:
  // ort::default_runtime_threads()).
  int runtime_threads = kDefaultRuntimeThreads;
  // The quantized weights' element type that the integer kernels of the
  // CPU the model will run on multiply exactly (exact_weight_type): int8
  // with VNNI or on Arm, uint8 on x86 without VNNI, whose uint8 x int8
  // kernels saturate. Unset: this CPU's type prices the search (without
  // VNNI mixed: mixed_integer_weights), and where the model has quantized
  // weights and is timed, the results with every weight in either type are
  // candidates too: the uint8 x int8
  // kernels are the faster ones, and their saturation costs accuracy on some
  // models only (the corpus's quantized ResNet-18 ran 1.35x faster in int8
  // weights here, as accurate; BERT-base lost its accuracy).
  std::optional<tensor::DType> integer_weights;
  // With integer_weights uint8: int8 where a product's activations are
  // mostly non-negative (OpContext::small_activations), as this CPU prices
  // them unset where it has no VNNI (CostModel::mixes_weight_types);
  // `--integer-weights mixed`.
  bool mixed_integer_weights = false;
  // The float ONNX model a quantized input quantizes, where the user has
  // it: the timing's output check judges a candidate by the distance of
  // its outputs to this model's (ort/harness/quantized.py) instead of to
  // the input with its activation pairs taken out, which keeps the weights'
  // quantization and the saturation of the pairs standing for a Relu.
  std::string float_model;
  // Called after every search step (from several threads with MCTS).
  std::function<void(const SearchProgress&)> on_progress;
  // Called once before the candidate is timed in onnxruntime: the command
  // line halts its background copy of the input there, so that the timing
  // runs alone.
  std::function<void()> before_timing;
};

// The least search time seconds_per_op gives a graph.
inline constexpr double kMinSearchSeconds = 0.25;
// The time limit of a search of `ops` operators (see seconds_per_op).
double search_seconds(const OptimizeOptions& options, int ops);

// The default minimum gain under a latency model: half a percent.
inline constexpr double kDefaultMinGain = 0.005;
// The minimum gain `options` asks for: min_gain, else kDefaultMinGain (0
// under the opcount model, whose counts are exact).
double min_gain_of(const OptimizeOptions& options);
// The cost model's name with the threads it prices at: "onnxruntime:N" for
// "onnxruntime" with runtime_threads N set, else `cost` itself.
std::string cost_spec(const OptimizeOptions& options);

struct RuleApplication {
  std::string name;
  std::size_t count = 0;  // matches applied
};

// One structure of region and what its search found (see OptimizeOptions::regions).
struct RegionSummary {
  int first = 0;   // the first region of this structure, in the graph's order
  int copies = 0;  // regions of this structure (searched once)
  int ops = 0;     // operators of one copy
  double cost_before = 0, cost_after = 0;  // one copy's, as its own search priced it
  StopReason stop_reason = StopReason::kSaturated;
  bool saturation_taken = false;  // SearchStats::saturation_taken
  std::size_t peak_nodes = 0;
  double seconds = 0;
};

// A subgraph of a control-flow node (If's branch, Loop's body), optimized
// as a model of its own (optimize_subgraphs).
struct SubgraphSummary {
  std::string node;       // the If's or Loop's first output
  std::string attribute;  // "then_branch", "else_branch", "body"
  int ops_before = 0, ops_after = 0;
  double cost_before = 0, cost_after = 0;  // as its own run priced it
  bool replaced = false;  // whether the optimized subgraph took its place
  std::string note;       // why not, or what its self-check found
};

// One kind of transformer block (tensor/blocks.h: attention,
// normalization, rotary) in the input and in the result.
struct BlockSummary {
  std::string kind;
  int present = 0;        // in the input, spelled out or fused
  int fused_before = 0;   // fused in the input
  int fused_after = 0;    // fused in the result
  int spelled_after = 0;  // still spelled out in the result
  // Fused once onnxruntime loads the result (its own fusions:
  // runtime_view.h); nullopt where that view cannot be made.
  std::optional<int> fused_at_load;
};

struct PhaseTimes {
  double rules = 0;    // loading the rules
  double search = 0;   // growing the e-graph
  double extract = 0;  // final extraction and graph rebuilding
  // The result checked: the self-check in the interpreter and, for a graph
  // with symbolic dimensions, the check at other sizes.
  double check = 0;
  double measure = 0;  // timing the candidate in onnxruntime (in total too)
  double total = 0;
};

// What timing the candidate against the input in onnxruntime found
// (OptimizeOptions::measure).
struct Measurement {
  // Why there was no timing, or what the timing decided.
  std::string note;
  bool timed = false;  // the figures below are set
  bool outputs_match = false;
  bool faster = false;  // measurably faster: the candidate was taken
  // The input's time over the candidate's and its 90% interval (each end a
  // one-sided 95% bound; ort::Decision).
  double speedup = 0, speedup_low = 0, speedup_high = 0;
  double noise = 0;      // the spread of one model's sessions (a fraction)
  double threshold = 0;  // what speedup_low had to beat: 1 + the gain sought
  int sessions = 0;      // onnxruntime sessions timed, both models together
  int rounds = 0;
  // The check at the threads the model runs with (more than one), where it
  // ran: the speedup by the wall clock and its 90% interval.
  int check_threads = 0;
  double check_speedup = 0, check_low = 0, check_high = 0;
  std::string runtime;  // e.g. "onnxruntime 1.30.0, 1 thread"
  std::string clock;    // what timed a run: "thread CPU time" or "wall clock"
  // How the timed candidate was found, where several were timed
  // (OptimizeOptions::integer_weights), and what timing each other
  // candidate found ("how: note"); empty where one was.
  std::string candidate;
  std::vector<std::string> other_candidates;
};

struct OptimizeResult {
  // A process other than the root of search.processes: it searched
  // for the root, and the rest of this result is empty.
  bool worker = false;
  tensor::Graph graph;  // the best graph found, or the input where the decision kept it
  // Whether `graph` is the candidate or the input, and every gate's verdict
  // (decide.h).
  Decision decision;
  bool kept_input() const { return !decision.taken; }
  // Why the graph, or a region of it, was not searched (it does not fit
  // the search budget: a budget limits the work, it never refuses a
  // model); empty when every part was searched. Such a part is kept as it
  // came.
  std::string not_searched;
  // Why the best graph found was not taken although it is cheaper: it
  // holds only at the given sizes of the input's symbolic dimensions (the
  // ONNX it exports to is written for any size); empty otherwise.
  std::string holds_only_at_given_sizes;
  // The regions whose search result holds only at the given sizes of the
  // symbolic dimensions, kept as they came while the other regions' results
  // were taken ("region N: why"); empty when every result holds.
  std::vector<std::string> regions_kept_for_sizes;
  // Whether `graph` was already checked at other sizes of the symbolic
  // dimensions (a graph cut into regions is, while its regions' results
  // are chosen), so the other-sizes gate need not run it again.
  bool checked_at_other_sizes = false;
  double cost_before = 0;
  double cost_after = 0;  // weight_spill included
  // The best extracted graph's cost, spill included: cost_after when it was
  // taken; below cost_after when its gain fell short of min_gain.
  double cost_found = 0;
  // Weights the runtime holds (tensor::resident_weight_bytes), and what
  // cost_after charges for those beyond the cache and the input's weights.
  std::int64_t weight_bytes_before = 0;
  std::int64_t weight_bytes_after = 0;
  double weight_spill = 0;
  std::string cost_model;
  std::string cost_source;  // where its figures come from (cost_model_source)
  ExtractionStatus extraction = ExtractionStatus::kHeuristic;
  std::vector<RuleApplication> rules_applied;  // most applied first; only rules applied
  // Rules some of whose matches were refused because the result's type
  // (shape, dtype) differed from the matched value's: each such rule is
  // unsound. `count` is the refusals over the whole search (a match refused
  // in several simulated states counts each time). Most first.
  std::vector<RuleApplication> rules_conflicting;
  std::size_t num_rules = 0;                   // rules the search could use
  // What the check of OptimizeOptions::rule_files found (empty for the
  // shipped rules). With unverified_rules, every rule of the files is
  // listed as unverified.
  RuleFileCheck rule_check;
  // What the self-check checked, or why it did not (OptimizeOptions::self_check).
  std::string self_check;
  // Set where OptimizeOptions::measure is: the timing in onnxruntime, or
  // why there was none.
  std::optional<Measurement> measured;
  SearchStats stats;  // summed over the regions searched (peaks: the largest)
  PhaseTimes times;
  // The memory high-water marks when the result was made: saturn's whole
  // process, and onnxruntime's harness (a child process) where it ran.
  PeakMemory peak_memory;
  // The regions the graph was cut into (1: searched whole), and one summary
  // per structure, in the order of each structure's first region.
  std::size_t regions = 1;
  std::vector<RegionSummary> region_summaries;
  // Why each search ended: the region structures' reasons counted (one
  // search, whole: its reason once). stats.stop_reason is the most counted.
  std::map<StopReason, int> stop_counts;
  // Each kind of block, counted once the result is final.
  std::vector<BlockSummary> blocks;
  // The subgraphs of the graph's control-flow nodes, each optimized as a
  // model of its own, in the graph's order.
  std::vector<SubgraphSummary> subgraphs;
  // Regions whose search was another region's: regions less structures.
  std::size_t region_cache_hits() const {
    return region_summaries.empty() ? 0 : regions - region_summaries.size();
  }

  // Cost reduction in percent of the input's cost (comparable_costs).
  double improvement_percent() const { return percent_lower(cost_before, cost_after); }
  // The same for the best graph found, taken or not.
  double found_percent() const { return percent_lower(cost_before, cost_found); }
  // Whether the search found a graph cheaper than the input (beyond
  // rounding), taken or not (see OptimizeOptions::min_gain).
  bool found_cheaper() const { return predicted_speedup() > 1 + 1e-9; }
  // cost_before / cost_after (the predicted speedup under a latency model),
  // unmeasured fused kernels both hold left out (comparable_costs).
  double speedup() const { return ratio(cost_before, cost_after); }
  // cost_before / cost_found: the speedup the best graph found was predicted,
  // taken or not.
  double predicted_speedup() const { return ratio(cost_before, cost_found); }

 private:
  static double ratio(double before, double after) {
    const auto [b, a] = comparable_costs(before, after);
    return a > 0 ? b / a : 1.0;
  }
  static double percent_lower(double before, double after) {
    const auto [b, a] = comparable_costs(before, after);
    return b > 0 ? 100.0 * (b - a) / b : 0.0;
  }
};

// Optimizes `graph`. Fails with a clear message on rules that do not load, a
// model that does not type-check or does not fit the budget.
absl::StatusOr<OptimizeResult> optimize(const tensor::Graph& graph, const OptimizeOptions& options);

// Writes the result's graph to `path` (.onnx or .json): an input kept as it
// came (kept_input()) from an ONNX file to an ONNX file is written as a copy
// of that file, byte for byte.
absl::Status save_result(const OptimizeResult& result, const std::string& path);
// Whether save_result writes `path` as a copy of the input file.
bool saves_a_copy(const OptimizeResult& result, const std::string& path);

}  // namespace saturn

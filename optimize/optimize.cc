#include "saturn/optimize/optimize.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "saturn/base/status.h"
#include "saturn/base/stopwatch.h"
#include "fmt/format.h"
#include "saturn/optimize/measure.h"
#include "saturn/optimize/optimize_internal.h"
#include "saturn/optimize/report.h"
#include "saturn/optimize/runtime_view.h"
#include "saturn/optimize/self_check.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/onnx/models.h"
#include "saturn/onnx/onnx.h"

namespace saturn {

namespace {

// An extraction, the graph it picks and what that graph costs: its
// operators (under the search's cost options) and the weights it holds.
struct PricedExtraction {
  ExtractionResult extraction;
  tensor::Graph graph;
  double ops_cost = 0;
  std::int64_t weight_bytes = 0;
  double spill = 0;  // weight_spill beyond the input's weights
  double total() const { return ops_cost + spill; }
};

// Prices `extraction`, made on `extracted` (a problem of the same e-graph),
// under `problem`'s costs.
absl::StatusOr<PricedExtraction> price(const Environment& env, const ExtractionProblem& problem,
                                       const ExtractionProblem& extracted,
                                       ExtractionResult extraction, const CostModel& model,
                                       std::int64_t input_weight_bytes) {
  PricedExtraction c;
  absl::StatusOr<tensor::Graph> g = env.graph_of(extracted, extraction);
  if (!g.ok()) return g.status();
  absl::StatusOr<double> ops = check_selection(problem, extraction.selection);
  if (!ops.ok()) return ops.status();
  absl::StatusOr<HeldWeights> held =
      held_weights(model, *g, static_cast<double>(input_weight_bytes));
  if (!held.ok()) return held.status();
  c.ops_cost = *ops;
  c.weight_bytes = held->bytes;
  c.spill = held->spill;
  c.graph = std::move(*g);
  c.extraction = std::move(extraction);
  return c;
}

// The graph's own price (input_price without the folded work).
absl::StatusOr<double> graph_price(const tensor::Graph& graph, const CostModel& model,
                                   const EGraphCostOptions& options,
                                   std::optional<double> search_price) {
  auto plain = [&]() -> absl::StatusOr<double> {
    if (search_price) return *search_price;
    return graph_cost(model, graph, options);
  };
  if (model.name() != "measured") return plain();
  // The table times onnxruntime's kernels: the input is run as onnxruntime
  // loads it. (A result is written so that onnxruntime fuses nothing that
  // extraction did not choose: see the exporter's LayerNorm.)
  for (const bool skip : {true, false}) {
    absl::StatusOr<tensor::Graph> view = as_onnxruntime_loads(graph, skip);
    if (!view.ok()) return view.status();
    absl::StatusOr<double> price = graph_cost(model, *view, options);
    if (!price.ok()) return price.status();
    // A fused kernel the table has not timed: priced without that fusion.
    if (*price < MeasuredCostModel::kUnmeasuredRuntimeOperator) return price;
  }
  return plain();
}

}  // namespace

absl::StatusOr<double> input_price(const tensor::Graph& graph, const CostModel& model,
                                   const EGraphCostOptions& options,
                                   std::optional<double> search_price) {
  absl::StatusOr<double> price = graph_price(graph, model, options, search_price);
  if (!price.ok()) return price;
  return *price + folded_work_cost(model, graph);
}

double search_seconds(const OptimizeOptions& options, int ops) {
  const double limit = options.budget.time_limit_seconds;
  if (options.seconds_per_op <= 0) return limit;
  return std::min(limit, std::max(kMinSearchSeconds, options.seconds_per_op * ops));
}

double min_gain_of(const OptimizeOptions& options) {
  if (options.min_gain) return *options.min_gain;
  const std::string_view cost =
      options.cost_model != nullptr ? options.cost_model->name() : std::string_view(options.cost);
  return cost == "opcount" ? 0.0 : kDefaultMinGain;
}

std::string cost_spec(const OptimizeOptions& options) {
  if (options.cost == "onnxruntime" && options.runtime_threads > 0)
    return fmt::format("onnxruntime:{}", options.runtime_threads);
  return options.cost;
}

double min_gain_for(const tensor::Graph& input, const OptimizeOptions& options) {
  const bool timed = options.measure || options.min_speedup;
  const bool removes_float_work =
      std::ranges::any_of(input.folded_at_import, [](const tensor::FoldedWork& w) {
        const tensor::TensorType& t = w.output.tensor();
        return tensor::is_float(t.dtype) && t.num_elements() >= kTimedFoldElements;
      });
  return timed && removes_float_work ? 0.0 : min_gain_of(options);
}

absl::StatusOr<std::unique_ptr<const Prepared>> prepare(const OptimizeOptions& options,
                                                        std::int64_t opset) {
  auto prepared = std::make_unique<Prepared>();
  prepared->cost_model = options.cost_model;
  if (prepared->cost_model == nullptr) {
    absl::StatusOr<std::shared_ptr<const CostModel>> named = cost_model_by_name(cost_spec(options));
    if (!named.ok()) return named.status();
    prepared->cost_model = *std::move(named);
  }
  if (options.integer_weights) {
    if (std::shared_ptr<const CostModel> m =
            prepared->cost_model->with_integer_weights(*options.integer_weights,
                                                       options.mixed_integer_weights))
      prepared->cost_model = std::move(m);
  }
  if (!options.rule_files.empty() && !options.unverified_rules) {
    absl::StatusOr<RuleFileCheck> check = check_rule_files(
        options.rule_files, prepared->language, prepared->conditions, options.rule_cache_dir);
    if (!check.ok()) return check.status();
    prepared->rule_check = *std::move(check);
  }
  absl::StatusOr<RuleSet> rules =
      options.rule_files.empty()
          ? load_tensor_rules(prepared->language, prepared->conditions)
          : load_tensor_rule_files(options.rule_files, prepared->language, prepared->conditions);
  if (!rules.ok()) return rules.status();
  if (options.unverified_rules && !options.rule_files.empty()) {
    for (const Rule& rule : rules->rules())
      prepared->rule_check.unverified.push_back(fmt::format(
          "{}:{}: {}: not checked (unverified rules allowed)", rule.file, rule.loc.line, rule.name));
  }
  prepared->rules =
      options.target == Target::kOnnx ? standard_onnx_rules(*rules, opset) : *std::move(rules);
  return prepared;
}

namespace {

// The graph searched whole or by regions, gated at other sizes, its
// subgraphs optimized: a candidate for the measured gate.
absl::StatusOr<OptimizeResult> find_candidate(const tensor::Graph& graph,
                                              std::vector<tensor::Region> regions,
                                              const OptimizeOptions& options,
                                              const Prepared& prepared) {
  // A graph searched whole: MCTS spreads its trees over the processes, the
  // other strategies run on the root alone.
  const Processes* processes = options.search.processes;
  if (regions.size() <= 1 && options.search.strategy != Strategy::kMcts &&
      processes != nullptr && processes->rank() != 0)
    return OptimizeResult{.worker = true};
  absl::StatusOr<OptimizeResult> result =
      regions.size() > 1 ? optimize_regions(graph, std::move(regions), options, prepared)
                         : search_or_cut(graph, options, prepared);
  if (!result.ok() || result->worker) return result;
  const Stopwatch checking;
  gate_other_sizes(graph, *result);
  result->times.check += checking.seconds();
  optimize_subgraphs(options, *result);
  return result;
}

// Whether the graph dequantizes a quantized weight, so that the type the
// runtime's integer kernels multiply exactly decides its spelling.
bool has_quantized_weights(const tensor::Graph& graph) {
  const std::vector<bool> weight_only = tensor::weight_only_nodes(graph);
  for (const tensor::Node& n : graph.nodes)
    if (n.op == tensor::Op::kDequantizeLinear && !n.inputs.empty() && weight_only[n.inputs[0]]) return true;
  return false;
}

std::string weights_in(tensor::DType type) {
  return fmt::format("quantized weights in {}", tensor::dtype_name(type));
}

// How `model` prices the quantized weights, for a candidate's name.
std::string weights_priced_by(const CostModel& model) {
  const std::string in = weights_in(*model.integer_weights());
  return model.mixes_weight_types() ? in + ", int8 where a product's activations are non-negative"
                                    : in;
}

// The candidates found with every quantized weight in one type, where the
// cost model priced them otherwise (OptimizeOptions::integer_weights): the
// other type than this CPU's, and this CPU's alone where the model mixes
// the two (CostModel::mixes_weight_types); only where the model has such
// weights, is timed, the type was not given and one process searches.
absl::StatusOr<std::vector<Candidate>> weight_type_candidates(
    const tensor::Graph& graph, const std::vector<tensor::Region>& regions,
    const OptimizeOptions& options, const Prepared& prepared) {
  std::vector<Candidate> others;
  const bool timed = options.measure || options.min_speedup;
  const std::optional<tensor::DType> priced = prepared.cost_model->integer_weights();
  if (!timed || options.integer_weights || !priced || graph.source.empty() ||
      (options.search.processes != nullptr && options.search.processes->size() > 1) ||
      !has_quantized_weights(graph))
    return others;
  std::vector<tensor::DType> types = {
      *priced == tensor::DType::kInt8 ? tensor::DType::kUInt8 : tensor::DType::kInt8};
  if (prepared.cost_model->mixes_weight_types()) types.push_back(*priced);
  for (tensor::DType type : types) {
    OptimizeOptions alternative = options;
    alternative.cost_model = prepared.cost_model;
    alternative.integer_weights = type;
    alternative.mixed_integer_weights = false;
    absl::StatusOr<std::unique_ptr<const Prepared>> again =
        prepare(alternative, tensor::default_domain_opset(graph.opsets));
    if (!again.ok()) return again.status();
    absl::StatusOr<OptimizeResult> found = find_candidate(graph, regions, alternative, **again);
    if (!found.ok()) return found.status();
    others.push_back({weights_in(type), *std::move(found)});
  }
  return others;
}

}  // namespace

absl::StatusOr<OptimizeResult> optimize(const tensor::Graph& graph,
                                        const OptimizeOptions& options) {
  if (const double gain = min_gain_of(options); !(gain >= 0 && gain < 1))
    return absl::InvalidArgumentError(
        fmt::format("the minimum gain must be a fraction in [0, 1), got {}", gain));
  if (!(options.ilp_seconds >= 0))
    return absl::InvalidArgumentError(fmt::format(
        "the exact extraction's time limit must be at least 0 s, got {}", options.ilp_seconds));
  if (std::error_code error; !options.float_model.empty() &&
                             !std::filesystem::is_regular_file(options.float_model, error))
    return absl::NotFoundError(
        fmt::format("the float model '{}' is not a file", options.float_model));
  const Stopwatch total;
  absl::StatusOr<std::unique_ptr<const Prepared>> prepared =
      prepare(options, tensor::default_domain_opset(graph.opsets));
  if (!prepared.ok()) return prepared.status();
  const double preparing = total.seconds();
  absl::StatusOr<std::vector<tensor::Region>> regions =
      tensor::split_into_regions(graph, options.regions);
  if (!regions.ok()) return regions.status();
  absl::StatusOr<OptimizeResult> result = find_candidate(graph, *regions, options, **prepared);
  if (!result.ok() || result->worker) return result;
  absl::StatusOr<std::vector<Candidate>> others =
      weight_type_candidates(graph, *regions, options, **prepared);
  if (!others.ok()) return others.status();
  // Another candidate exists only where the cost model prices a weight type.
  std::string how = others->empty() ? "" : weights_priced_by(*(*prepared)->cost_model);
  measure_candidates(graph, options, std::move(how), *result, *std::move(others));
  result->blocks = count_block_kinds(graph, result->graph);
  result->cost_source = cost_model_source(*(*prepared)->cost_model);
  result->rule_check = (*prepared)->rule_check;
  result->times.rules = preparing;
  result->times.total = total.seconds();
  result->peak_memory = peak_memory();
  return result;
}

namespace {

// The cheapest graph `extractor` finds in the environment's final state,
// spill included. The extraction takes weight-only values as free, so it
// may merge weights into new tensors while the originals stay in use
// elsewhere. When the weights then outgrow the cache, a second extraction
// that pays for every weight it keeps may do better; the cheaper one wins.
absl::StatusOr<PricedExtraction> extract_final(const Environment& env, const Extractor& extractor,
                                               const OptimizeOptions& options,
                                               const CostModel& cost_model,
                                               std::int64_t input_weight_bytes) {
  const ExtractionProblem problem = env.problem();
  absl::StatusOr<PricedExtraction> best =
      price(env, problem, problem, extractor.extract(problem), cost_model, input_weight_bytes);
  if (!best.ok() || best->spill <= 0) return best;
  EGraphCostOptions frugal = options.cost_options;
  frugal.weight_us_per_byte = weight_us_per_byte(cost_model);
  const ExtractionProblem priced = env.problem(frugal);
  absl::StatusOr<PricedExtraction> other =
      price(env, problem, priced, extractor.extract(priced), cost_model, input_weight_bytes);
  if (!other.ok()) return other.status();
  if (other->total() < best->total()) best = std::move(other);
  return best;
}

// A graph that does not fit the search budget, kept as it came and priced;
// `why` says so in the result.
absl::StatusOr<OptimizeResult> kept_unsearched(const tensor::Graph& graph,
                                               const OptimizeOptions& options,
                                               const Prepared& prepared, std::string why) {
  const Stopwatch total;
  if (options.search.processes != nullptr && options.search.processes->rank() != 0)
    return OptimizeResult{.worker = true};
  const CostModel& cost_model = *prepared.cost_model;
  OptimizeResult result;
  result.cost_model = std::string(cost_model.name());
  result.num_rules = prepared.rules.size();
  absl::StatusOr<double> before = input_price(graph, cost_model, options.cost_options);
  if (!before.ok()) return before.status();
  absl::StatusOr<HeldWeights> weights = held_weights(cost_model, graph, 0);
  if (!weights.ok()) return weights.status();
  result.cost_before = result.cost_found = *before;
  result.weight_bytes_before = weights->bytes;
  refuse(graph, result, Gate::kSearched, why);
  result.stats.strategy = std::string(to_string(options.search.strategy));
  result.stats.stop_reason = StopReason::kNotSearched;
  result.stop_counts = {{StopReason::kNotSearched, 1}};
  result.not_searched = std::move(why);
  result.times.total = total.seconds();
  return result;
}

// A graph too large for its search, cut into regions of about half its
// operators (at the narrowest places, optimize/regions.h); one region where
// no cut can be made (a single operator, or values no region can take as
// inputs crossing every place).
absl::StatusOr<std::vector<tensor::Region>> cut_in_two(const tensor::Graph& graph) {
  const int ops = tensor::total_ops(graph);
  if (ops <= 1) return std::vector<tensor::Region>(1);
  const int half = (ops + 1) / 2;
  return tensor::split_into_regions(graph, {.target_ops = std::max(1, half / 2), .max_ops = half});
}

}  // namespace

absl::StatusOr<OptimizeResult> search_or_cut(const tensor::Graph& graph,
                                             const OptimizeOptions& options,
                                             const Prepared& prepared) {
  absl::StatusOr<OptimizeResult> whole = optimize_whole(graph, options, prepared);
  if (whole.ok() || !absl::IsResourceExhausted(whole.status())) return whole;
  absl::StatusOr<std::vector<tensor::Region>> smaller = cut_in_two(graph);
  if (!smaller.ok()) return smaller.status();
  if (smaller->size() > 1)
    return optimize_regions(graph, *std::move(smaller), options, prepared,
                            RegionBudget::kPerSearch);
  return kept_unsearched(graph, options, prepared, std::string(message(whole.status())));
}

absl::StatusOr<OptimizeResult> optimize_whole(const tensor::Graph& graph,
                                              const OptimizeOptions& options,
                                              const Prepared& prepared) {
  const Stopwatch total;
  const std::shared_ptr<const CostModel>& cost_model = prepared.cost_model;
  const RuleSet* rules = &prepared.rules;
  OptimizeResult result;
  result.cost_model = std::string(cost_model->name());
  result.num_rules = rules->size();

  Stopwatch phase;
  SearchBudget budget = options.budget;
  budget.time_limit_seconds = search_seconds(options, tensor::total_ops(graph));
  EnvironmentConfig config{.graph = &graph,
                           .rules = rules,
                           .cost_model = cost_model.get(),
                           .budget = budget,
                           .filter_cycles = true,
                           .cost_options = options.cost_options,
                           .on_progress = options.on_progress};
  absl::StatusOr<SearchOutcome> outcome = run_search(config, options.search);
  if (!outcome.ok()) return outcome.status();  // ResourceExhausted: search_or_cut cuts it
  if (options.search.processes != nullptr && options.search.processes->rank() != 0)
    return OptimizeResult{.worker = true};  // the root extracts and checks
  result.times.search = phase.seconds();
  result.stats = std::move(outcome->stats);
  Environment& env = *outcome->env;
  absl::StatusOr<double> before =
      input_price(graph, *cost_model, options.cost_options, outcome->input_cost);
  if (!before.ok()) return before.status();
  result.cost_before = *before;

  phase.restart();
  absl::StatusOr<HeldWeights> input_weights = held_weights(*cost_model, graph, 0);
  if (!input_weights.ok()) return input_weights.status();
  result.weight_bytes_before = input_weights->bytes;
  // The exact extraction gets the search's time at most, shared between the
  // states it extracts from (MCTS's and greedy saturation's): where the
  // greedy DAG extraction is already optimal, CBC spends its time proving so.
  const double states = outcome->saturated ? 2 : 1;
  const IlpExtractor ilp(IlpOptions{
      .time_limit_seconds = std::min(options.ilp_seconds, budget.time_limit_seconds / states)});
  const DagGreedyExtractor greedy;
  const Extractor& extractor =
      options.ilp_seconds > 0 ? static_cast<const Extractor&>(ilp) : greedy;
  absl::StatusOr<PricedExtraction> best =
      extract_final(env, extractor, options, *cost_model, result.weight_bytes_before);
  if (!best.ok()) return best.status();
  // MCTS: greedy saturation's state, seen by the final extraction, which may
  // price it below the search's state where the reward's greedy extraction
  // did not. A tie goes to saturation's graph, the one the greedy strategy
  // returns: a region's graphs of one price can price apart once stitched
  // into the whole graph (its neighbours), and MCTS must end no worse than
  // greedy there too.
  if (outcome->saturated) {
    absl::StatusOr<PricedExtraction> other = extract_final(
        *outcome->saturated, extractor, options, *cost_model, result.weight_bytes_before);
    if (!other.ok()) return other.status();
    if (other->total() <= best->total()) {
      result.stats.saturation_taken = true;
      best = std::move(other);
      record_final_state(*outcome->saturated, result.stats);
    }
  }
  result.times.extract = phase.seconds();
  result.extraction = best->extraction.status;
  result.cost_found = best->total();
  // Only a strictly cheaper graph replaces the input (by min_gain when that
  // is set): an equal-cost one is a rearrangement (operands commuted, sums
  // re-associated) that the cost model cannot tell apart but a runtime's own
  // pattern fusions can. And a heuristic extraction can miss the input graph
  // itself: never return something worse than what came in.
  gate_predicted_gain(graph, std::move(best->graph), best->total(), best->spill,
                      best->weight_bytes, min_gain_for(graph, options), result);

  auto named = [&](const std::vector<std::size_t>& per_rule) {
    std::vector<RuleApplication> counts;
    for (std::size_t r = 0; r < per_rule.size(); ++r) {
      if (per_rule[r] > 0) counts.push_back({(*rules)[r].name, per_rule[r]});
    }
    sort_by_count(counts);
    return counts;
  };
  result.rules_applied = named(result.stats.rule_applications);
  result.rules_conflicting = named(result.stats.rule_conflicts);
  result.stop_counts = {{result.stats.stop_reason, 1}};
  const Stopwatch checking;
  if (absl::Status s = check_result(graph, options, result); !s.ok()) return s;
  result.times.check = checking.seconds();
  result.times.total = total.seconds();
  return result;
}

void sort_by_count(std::vector<RuleApplication>& counts) {
  std::stable_sort(counts.begin(), counts.end(),
                   [](const RuleApplication& a, const RuleApplication& b) { return a.count > b.count; });
}

absl::Status check_result(const tensor::Graph& input, const OptimizeOptions& options,
                          OptimizeResult& result) {
  if (!options.self_check) {
    result.self_check = "off";
    return absl::OkStatus();
  }
  if (result.kept_input()) {
    result.self_check = "the input was kept: nothing to check";
    return absl::OkStatus();
  }
  absl::StatusOr<SelfCheck> check = self_check(input, result.graph, result.rules_applied);
  if (!check.ok()) return check.status();
  result.self_check = check->note;
  return absl::OkStatus();
}

bool saves_a_copy(const OptimizeResult& result, const std::string& path) {
  return result.kept_input() && !result.graph.source.empty() && path.ends_with(".onnx");
}

absl::Status save_result(const OptimizeResult& result, const std::string& path) {
  if (saves_a_copy(result, path)) return tensor::copy_onnx_model(result.graph.source, path);
  return tensor::save_model(result.graph, path);
}

}  // namespace saturn

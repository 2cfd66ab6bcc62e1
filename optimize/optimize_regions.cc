// The search of a graph cut into regions: one search per structure of
// region, searched in parallel on an arena of search.threads (a structure's
// MCTS trees spread over the threads too; their number is fixed, so that the
// result does not depend on the thread count), and the
// regions' graphs stitched back and priced as a whole.
#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "saturn/base/status.h"
#include "saturn/base/stopwatch.h"
#include "fmt/format.h"
#include "saturn/optimize/optimize_internal.h"
#include "saturn/optimize/self_check.h"
#include "tbb/blocked_range.h"
#include "tbb/parallel_for.h"
#include "tbb/partitioner.h"
#include "tbb/task_arena.h"

namespace saturn {

namespace {

// A structure's search seed: the run's seed and the structure, so that
// neither the order nor the threads of the searches change it.
std::uint64_t region_seed(std::uint64_t seed, const std::string& key) {
  return (seed * 0x9E3779B97F4A7C15ull) ^ tensor::stable_hash(key);
}

// How sure the extraction is, surest first: a graph's extraction is as sure
// as its least sure region's.
int doubt(ExtractionStatus s) {
  switch (s) {
    case ExtractionStatus::kOptimal:
      return 0;
    case ExtractionStatus::kFeasible:
      return 1;
    case ExtractionStatus::kTimedOut:
      return 2;
    case ExtractionStatus::kHeuristic:
      return 3;
    case ExtractionStatus::kNoSolution:
      return 4;
  }
  return 4;
}

// The reason most structures' searches ended for (ties: the first in
// StopReason's order).
StopReason most_counted(const std::map<StopReason, int>& counts) {
  auto most = std::max_element(counts.begin(), counts.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  return most == counts.end() ? StopReason::kSaturated : most->first;
}

// Adds a structure's search (found once, used by `copies` regions) to the
// whole graph's statistics.
void add_search(const OptimizeResult& found, int copies, OptimizeResult& result,
                std::map<std::string, std::size_t>& applied,
                std::map<std::string, std::size_t>& conflicting) {
  SearchStats& stats = result.stats;
  const SearchStats& s = found.stats;
  stats.steps += s.steps;
  stats.simulations += s.simulations;
  stats.graphs_explored += s.graphs_explored;
  stats.extractions += s.extractions;
  stats.peak_nodes = std::max(stats.peak_nodes, s.peak_nodes);
  stats.peak_bytes = std::max(stats.peak_bytes, s.peak_bytes);
  stats.seconds += s.seconds;
  stats.rule_applications.resize(
      std::max(stats.rule_applications.size(), s.rule_applications.size()));
  for (std::size_t r = 0; r < s.rule_applications.size(); ++r)
    stats.rule_applications[r] += s.rule_applications[r] * copies;
  stats.rule_conflicts.resize(std::max(stats.rule_conflicts.size(), s.rule_conflicts.size()));
  for (std::size_t r = 0; r < s.rule_conflicts.size(); ++r)
    stats.rule_conflicts[r] += s.rule_conflicts[r];
  for (const RuleApplication& a : found.rules_applied) applied[a.name] += a.count * copies;
  // Refusals happened in the one search, whatever the copies.
  for (const RuleApplication& a : found.rules_conflicting) conflicting[a.name] += a.count;
  result.num_rules = found.num_rules;
  if (doubt(found.extraction) > doubt(result.extraction)) result.extraction = found.extraction;
  result.times.rules += found.times.rules;
  result.times.search += found.times.search;
  result.times.extract += found.times.extract;
  result.times.check += found.times.check;
}

// What the self-checks of the structures' searches (optimize_whole) found.
std::string self_check_summary(const OptimizeOptions& options, const OptimizeResult& result,
                               const std::vector<absl::StatusOr<OptimizeResult>>& found,
                               const std::vector<int>& first) {
  if (!options.self_check) return "off";
  if (result.kept_input()) return "the input was kept: nothing to check";
  std::size_t matched = 0, unchanged = 0;
  std::string unchecked;
  for (std::size_t s = 0; s < found.size(); ++s) {
    if (found[s]->kept_input()) {
      ++unchanged;
    } else if (found[s]->self_check.starts_with("not checked")) {
      unchecked += fmt::format("; region {} {}", first[s], found[s]->self_check);
    } else {
      ++matched;
    }
  }
  return fmt::format(
      "{} of {} searched regions matched their region in the interpreter, {} "
      "unchanged{}",
      matched, found.size(), unchanged, unchecked);
}

}  // namespace

std::vector<char> take_while_holding(
    std::span<const double> gains,
    const std::function<bool(const std::vector<char>&, std::size_t)>& holds) {
  std::vector<std::size_t> order;
  for (std::size_t s = 0; s < gains.size(); ++s)
    if (gains[s] > 0) order.push_back(s);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return gains[a] > gains[b]; });
  std::vector<char> taken(gains.size(), 0);
  for (std::size_t s : order) {
    taken[s] = 1;
    if (!holds(taken, s)) taken[s] = 0;
  }
  return taken;
}

namespace {

// The graph with each region replaced by its structure's search result
// where `taken` says so, and as it came elsewhere.
absl::StatusOr<tensor::Graph> stitch_taken(const tensor::Graph& graph,
                                           const std::vector<tensor::Region>& regions,
                                           const std::vector<int>& structure_of,
                                           const std::vector<absl::StatusOr<OptimizeResult>>& found,
                                           const std::vector<char>& taken) {
  std::vector<const tensor::Graph*> results(regions.size());
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const int s = structure_of[i];
    results[i] = taken[s] ? &found[s]->graph : &regions[i].graph;
  }
  return tensor::stitch_regions(graph, regions, results);
}

// Which structures' results to take where the graph with all of them holds
// only at the given sizes of the input's symbolic dimensions: those that
// hold with the others taken before them, largest predicted gain first
// (take_while_holding); result.regions_kept_for_sizes says why each other
// was left out. All of them where the graph holds at other sizes.
absl::StatusOr<std::vector<char>> take_generic(
    const tensor::Graph& graph, const tensor::Graph& stitched,
    const std::vector<tensor::Region>& regions, const std::vector<int>& structure_of,
    const std::vector<absl::StatusOr<OptimizeResult>>& found, const std::vector<int>& first,
    OptimizeResult& result) {
  std::vector<char> taken(found.size(), 1);
  if (graph.symbols.empty()) return taken;
  OtherSizesCheck check(graph);
  if (check.fails(stitched, result.rules_applied).empty()) return taken;
  std::vector<double> gains(found.size());
  for (std::size_t s = 0; s < found.size(); ++s)
    gains[s] = found[s]->kept_input() ? 0 : found[s]->cost_before - found[s]->cost_after;
  absl::Status error = absl::OkStatus();
  taken = take_while_holding(gains, [&](const std::vector<char>& with, std::size_t s) {
    absl::StatusOr<tensor::Graph> g = stitch_taken(graph, regions, structure_of, found, with);
    if (!g.ok()) {
      error.Update(g.status());
      return false;
    }
    std::string why = check.fails(*g, result.rules_applied);
    if (!why.empty())
      result.regions_kept_for_sizes.push_back(fmt::format("region {}: {}", first[s], why));
    return why.empty();
  });
  if (!error.ok()) return error;
  return taken;
}

// The self-check of each structure whose result the graph took: its search
// result against its first region, in the interpreter (run once the whole
// result is taken, not for results the minimum gain leaves out).
absl::Status check_taken(const OptimizeOptions& options, const std::vector<tensor::Region>& regions,
                         const std::vector<int>& first, const std::vector<char>& taken,
                         std::vector<absl::StatusOr<OptimizeResult>>& found, int threads) {
  std::vector<absl::Status> status(found.size());
  tbb::task_arena arena(threads);
  arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, found.size(), [&](std::size_t s) {
      OptimizeResult& f = *found[s];
      if (!taken[s] && !f.kept_input())
        leave_out(f, Gate::kOtherSizes, "left as it came: the whole graph holds only without it");
      status[s] = check_result(regions[first[s]].graph, options, f);
    });
  });
  for (std::size_t s = 0; s < found.size(); ++s) {
    if (!status[s].ok())
      return absl::Status(status[s].code(),
                          fmt::format("region {} ({} operators): {}", first[s],
                                      regions[first[s]].ops, message(status[s])));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OptimizeResult> optimize_regions(
    const tensor::Graph& graph, std::vector<tensor::Region> regions, const OptimizeOptions& options,
    const Prepared& prepared, RegionBudget budget) {
  const std::shared_ptr<const CostModel>& cost_model = prepared.cost_model;
  const Stopwatch total;
  // The structures, in the order of their first regions.
  std::vector<int> first, structure_of(regions.size());
  std::vector<int> copies;
  absl::flat_hash_map<std::string_view, int> by_key;
  for (std::size_t i = 0; i < regions.size(); ++i) {
    auto [it, added] = by_key.try_emplace(regions[i].key, static_cast<int>(first.size()));
    if (added) {
      first.push_back(static_cast<int>(i));
      copies.push_back(0);
    }
    structure_of[i] = it->second;
    ++copies[it->second];
  }

  const bool shared = budget == RegionBudget::kShared;
  const int threads = shared ? std::clamp(options.search.threads, 1, kMaxThreads) : 1;
  OptimizeOptions per_region = options;
  // Each structure's MCTS runs kRegionTrees trees whatever the thread count;
  // they share the regions' arena with the other structures' searches.
  per_region.search.threads = threads;
  per_region.search.trees = kRegionTrees;
  per_region.min_gain = 0;  // min_gain judges the whole graph's gain
  per_region.self_check = false;  // checked once the whole result is taken (check_taken)
  per_region.search.processes = nullptr;  // the processes take whole structures
  if (shared && options.budget.max_bytes != Budget::kUnlimited)
    per_region.budget.max_bytes = options.budget.max_bytes /
                                  static_cast<std::size_t>(std::min(threads, int(first.size()))) /
                                  kRegionTrees;
  // The time limit is the whole search's: the structures are searched in
  // rounds of `threads`, each round in an equal share of it.
  const std::size_t rounds = (first.size() + threads - 1) / static_cast<std::size_t>(threads);
  per_region.budget.time_limit_seconds =
      options.budget.time_limit_seconds / static_cast<double>(rounds);
  std::vector<absl::StatusOr<OptimizeResult>> found(first.size(),
                                                    absl::UnknownError("not searched"));
  std::vector<double> seconds(first.size(), 0);
  std::atomic<std::size_t> searched{0};
  auto search = [&](std::size_t s) {
    const Stopwatch clock;
    OptimizeOptions o = per_region;
    o.search.seed = region_seed(options.search.seed, regions[first[s]].key);
    if (options.on_progress) {
      o.on_progress = [&](const SearchProgress& p) {
        SearchProgress q = p;
        q.region_structures = first.size();
        q.regions_searched = searched.load();
        options.on_progress(q);
      };
    }
    found[s] = search_or_cut(regions[first[s]].graph, o, prepared);
    seconds[s] = clock.seconds();
    ++searched;
  };
  // Largest first, one structure per task: a large search started last
  // would leave the other threads idle while it ends.
  std::vector<std::size_t> order(first.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return regions[first[a]].ops > regions[first[b]].ops;
  });
  tbb::task_arena arena(threads);
  if (options.search.processes != nullptr && options.search.processes->size() > 1) {
    // One structure at a time on each process, handed out largest first.
    Processes& processes = *options.search.processes;
    std::vector<StructureSearch> mine;
    for (std::size_t t; (t = processes.next_task(order.size())) < order.size();) {
      arena.execute([&] { search(order[t]); });
      mine.push_back({order[t], seconds[order[t]], std::move(found[order[t]])});
    }
    const std::vector<std::string> sent = processes.gather(encode_searches(mine));
    if (processes.rank() != 0) return OptimizeResult{.worker = true};
    for (std::size_t rank = 0; rank < sent.size(); ++rank) {
      if (absl::Status s = decode_searches(sent[rank], static_cast<int>(rank), regions, first,
                                           found, seconds);
          !s.ok())
        return s;
    }
  } else {
    arena.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<std::size_t>(0, order.size(), 1),
          [&](const auto& range) {
            for (std::size_t i = range.begin(); i < range.end(); ++i) search(order[i]);
          },
          tbb::simple_partitioner());
    });
  }

  OptimizeResult result;
  result.cost_model = std::string(cost_model->name());
  result.regions = regions.size();
  result.stats.strategy = std::string(to_string(options.search.strategy));
  result.extraction = ExtractionStatus::kOptimal;
  std::map<std::string, std::size_t> applied, conflicting;
  int unsearched = 0, unsearched_ops = 0;
  for (std::size_t s = 0; s < first.size(); ++s) {
    const tensor::Region& region = regions[first[s]];
    if (!found[s].ok())
      return absl::Status(found[s].status().code(),
                          fmt::format("region {} ({} operators): {}", first[s], region.ops,
                                      message(found[s].status())));
    const OptimizeResult& f = *found[s];
    if (!f.not_searched.empty()) {
      // The first reason in full; the others counted.
      if (unsearched++ == 0)
        result.not_searched =
            fmt::format("region {} ({} operators): {}", first[s], region.ops, f.not_searched);
      unsearched_ops += region.ops * copies[s];
    }
    add_search(f, copies[s], result, applied, conflicting);
    result.region_summaries.push_back({.first = first[s],
                                       .copies = copies[s],
                                       .ops = region.ops,
                                       .cost_before = f.cost_before,
                                       .cost_after = f.cost_after,
                                       .stop_reason = f.stats.stop_reason,
                                       .saturation_taken = f.stats.saturation_taken,
                                       .peak_nodes = f.stats.peak_nodes,
                                       .seconds = seconds[s]});
  }
  if (unsearched > 1)
    result.not_searched = fmt::format("{} of {} region structures ({} operators) were not searched; {}",
                                      unsearched, first.size(), unsearched_ops, result.not_searched);
  for (const RegionSummary& s : result.region_summaries) ++result.stop_counts[s.stop_reason];
  result.stats.stop_reason = most_counted(result.stop_counts);
  for (const auto& [name, count] : applied) result.rules_applied.push_back({name, count});
  for (const auto& [name, count] : conflicting) result.rules_conflicting.push_back({name, count});
  sort_by_count(result.rules_applied);
  sort_by_count(result.rules_conflicting);

  const Stopwatch stitching;
  // The whole graph priced before and after: the regions' own prices do not
  // see their neighbours (a layout a convolution across the cut imposes).
  absl::StatusOr<double> before = input_price(graph, *cost_model, options.cost_options);
  if (!before.ok()) return before.status();
  absl::StatusOr<HeldWeights> input_weights = held_weights(*cost_model, graph, 0);
  if (!input_weights.ok()) return input_weights.status();
  result.cost_before = *before;
  result.weight_bytes_before = input_weights->bytes;
  auto take_if_better = [&](tensor::Graph stitched) -> absl::Status {
    absl::StatusOr<double> after = graph_cost(*cost_model, stitched, options.cost_options);
    if (!after.ok()) return after.status();
    absl::StatusOr<HeldWeights> held =
        held_weights(*cost_model, stitched, static_cast<double>(input_weights->bytes));
    if (!held.ok()) return held.status();
    result.cost_found = *after + held->spill;
    gate_predicted_gain(graph, std::move(stitched), result.cost_found, held->spill, held->bytes,
                        min_gain_for(graph, options), result);
    return absl::OkStatus();
  };
  if (unsearched == static_cast<int>(first.size())) {
    // Nothing was searched: the graph as it came, priced.
    refuse(graph, result, Gate::kSearched, result.not_searched);
    result.cost_found = result.cost_before;
    result.times.total = total.seconds();
    return result;
  }
  std::vector<char> taken(first.size(), 1);
  absl::StatusOr<tensor::Graph> stitched = stitch_taken(graph, regions, structure_of, found, taken);
  if (!stitched.ok()) return stitched.status();
  if (absl::Status s = take_if_better(*std::move(stitched)); !s.ok()) return s;
  result.times.extract += stitching.seconds();
  // What the minimum gain leaves out needs no check at other sizes nor in
  // the interpreter.
  const Stopwatch checking;
  if (!result.kept_input()) {
    absl::StatusOr<std::vector<char>> generic =
        take_generic(graph, result.graph, regions, structure_of, found, first, result);
    if (!generic.ok()) return generic.status();
    if (*generic != taken) {
      taken = *std::move(generic);
      stitched = stitch_taken(graph, regions, structure_of, found, taken);
      if (!stitched.ok()) return stitched.status();
      if (absl::Status s = take_if_better(*std::move(stitched)); !s.ok()) return s;
    }
  }
  // The graph taken has held at other sizes in take_generic.
  result.checked_at_other_sizes = !result.kept_input() && !graph.symbols.empty();
  if (!result.kept_input() && options.self_check) {
    if (absl::Status s = check_taken(options, regions, first, taken, found, threads); !s.ok())
      return s;
  }
  result.self_check = self_check_summary(options, result, found, first);
  result.times.check += checking.seconds();
  result.times.total = total.seconds();
  return result;
}

}  // namespace saturn

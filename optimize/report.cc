#include "saturn/optimize/report.h"

#include <optional>
#include <string>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/optimize/options.h"
#include "saturn/optimize/runtime_view.h"
#include "saturn/tensor/blocks.h"

namespace saturn {

using json = nlohmann::json;

json counts_json(const std::vector<RuleApplication>& counts, const char* what) {
  json out = json::array();
  for (const RuleApplication& a : counts) out.push_back({{"rule", a.name}, {what, a.count}});
  return out;
}

std::vector<RuleApplication> counts_of(const json& j, const char* what) {
  std::vector<RuleApplication> out;
  for (const json& a : j) out.push_back({a.at("rule").get<std::string>(), a.at(what).get<std::size_t>()});
  return out;
}

namespace {

json regions_json(const OptimizeResult& r) {
  json regions = json::array();
  for (const RegionSummary& s : r.region_summaries)
    regions.push_back({{"first_region", s.first},
                       {"copies", s.copies},
                       {"ops", s.ops},
                       {"cost_before", s.cost_before},
                       {"cost_after", s.cost_after},
                       {"stop_reason", to_string(s.stop_reason)},
                       {"saturation_taken", s.saturation_taken},
                       {"peak_nodes", s.peak_nodes},
                       {"seconds", s.seconds}});
  return regions;
}

// Every option of the table as the run resolved it.
json options_json(const OptimizeOptions& options) {
  json out = json::object();
  for (const OptionInfo& o : optimize_options())
    out[std::string(o.name)] = option_value(options, o.name);
  return out;
}

json text_or_null(const std::string& text) { return text.empty() ? json() : json(text); }

json measurement_json(const std::optional<Measurement>& m) {
  if (!m) return json();
  json out = {{"note", m->note}, {"timed", m->timed}};
  if (!m->candidate.empty())
    out.update({{"candidate", m->candidate}, {"other_candidates", m->other_candidates}});
  if (!m->timed) return out;
  out.update({{"runtime", m->runtime},
              {"clock", m->clock},
              {"outputs_match", m->outputs_match},
              {"faster", m->faster},
              {"speedup", m->speedup},
              {"speedup_low", m->speedup_low},
              {"speedup_high", m->speedup_high},
              {"noise", m->noise},
              {"threshold", m->threshold},
              {"sessions", m->sessions},
              {"rounds", m->rounds}});
  if (m->check_threads > 1)
    out["at_threads"] = {{"threads", m->check_threads},
                         {"speedup", m->check_speedup},
                         {"speedup_low", m->check_low},
                         {"speedup_high", m->check_high}};
  return out;
}

// Per kind of block: present in the input (fused or spelled out), fused
// there, fused and still spelled out in the result, and fused once
// onnxruntime loads the result.
json blocks_json(const OptimizeResult& r) {
  json out = json::object();
  for (const BlockSummary& b : r.blocks)
    out[b.kind] = {{"present", b.present},
                   {"fused_before", b.fused_before},
                   {"fused_after", b.fused_after},
                   {"spelled_after", b.spelled_after},
                   {"fused_at_load", b.fused_at_load ? json(*b.fused_at_load) : json()}};
  return out;
}

json subgraphs_json(const OptimizeResult& r) {
  json out = json::array();
  for (const SubgraphSummary& s : r.subgraphs)
    out.push_back({{"node", s.node},
                   {"attribute", s.attribute},
                   {"ops_before", s.ops_before},
                   {"ops_after", s.ops_after},
                   {"cost_before", s.cost_before},
                   {"cost_after", s.cost_after},
                   {"replaced", s.replaced},
                   {"note", s.note}});
  return out;
}

}  // namespace

std::vector<BlockSummary> count_block_kinds(const tensor::Graph& input,
                                            const tensor::Graph& result) {
  const tensor::BlockCounts before = tensor::count_blocks(input);
  const tensor::BlockCounts after = tensor::count_blocks(result);
  std::optional<tensor::BlockCounts> at_load;
  absl::StatusOr<tensor::Graph> loaded = as_onnxruntime_loads(result);
  if (loaded.ok()) at_load = tensor::count_blocks(*loaded);
  std::vector<BlockSummary> out;
  for (tensor::BlockKind k : tensor::kBlockKinds)
    out.push_back({.kind = std::string(to_string(k)),
                   .present = before[k].present(),
                   .fused_before = before[k].fused,
                   .fused_after = after[k].fused,
                   .spelled_after = after[k].spelled,
                   .fused_at_load = at_load ? std::optional((*at_load)[k].fused) : std::nullopt});
  return out;
}

std::string blocks_summary(const OptimizeResult& r) {
  std::string out;
  for (const BlockSummary& b : r.blocks) {
    if (b.present == 0) continue;
    const int at_load = b.fused_at_load.value_or(b.fused_after);
    out += fmt::format("{}{} {} of {}{}{}", out.empty() ? "" : ", ", b.kind, b.fused_after,
                       b.present, out.empty() ? " fused" : "",
                       at_load != b.fused_after
                           ? fmt::format(" ({} once onnxruntime loads it)", at_load)
                           : "");
  }
  return out;
}

std::string stop_summary(const OptimizeResult& r) {
  std::string out;
  if (r.regions > 1) {
    for (const auto& [reason, n] : r.stop_counts)
      out += fmt::format("{}{} {}", out.empty() ? "" : ", ", to_string(reason), n);
    return fmt::format("{} regions ({} structures): {}", r.regions, r.region_summaries.size(), out);
  }
  out = std::string(to_string(r.stats.stop_reason));
  if (r.stats.saturation_taken) out += ", saturation's graph taken";
  return out;
}

json decision_json(const Decision& d) {
  json verdicts = json::array();
  for (const Verdict& v : d.verdicts)
    verdicts.push_back({{"gate", to_string(v.gate)}, {"passed", v.passed}, {"evidence", v.evidence}});
  const Verdict* deciding = d.deciding();
  return {{"taken", d.taken},
          {"decided_by", deciding ? json(to_string(deciding->gate)) : json()},
          {"evidence", deciding ? json(deciding->evidence) : json()},
          {"verdicts", std::move(verdicts)}};
}

absl::StatusOr<Decision> decision_of(const json& j) {
  Decision d;
  try {
    d.taken = j.at("taken").get<bool>();
    for (const json& v : j.at("verdicts")) {
      const std::string name = v.at("gate").get<std::string>();
      std::optional<Gate> gate = gate_named(name);
      if (!gate) return absl::InvalidArgumentError(fmt::format("no gate '{}'", name));
      d.verdicts.push_back({*gate, v.at("passed").get<bool>(), v.at("evidence").get<std::string>()});
    }
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("a decision: {}", e.what()));
  }
  return d;
}

json optimize_report(const tensor::Graph& input, const OptimizeResult& r,
                     const OptimizeOptions& options) {
  json stops = json::object();
  for (const auto& [reason, count] : r.stop_counts) stops[std::string(to_string(reason))] = count;
  return {{"model", input.name},
          {"options", options_json(options)},
          {"strategy", r.stats.strategy},
          {"cost_model", r.cost_model},
          {"cost_source", r.cost_source},
          {"target", options.target == Target::kOnnx ? "onnx" : "onnxruntime"},
          {"cost_before", r.cost_before},
          {"cost_after", r.cost_after},
          {"improvement_percent", r.improvement_percent()},
          {"kept_input", r.kept_input()},
          {"decision", decision_json(r.decision)},
          {"not_searched", text_or_null(r.not_searched)},
          {"symbolic_dimensions", input.symbols.sizes},
          {"holds_only_at_given_sizes", text_or_null(r.holds_only_at_given_sizes)},
          {"regions_kept_for_sizes", r.regions_kept_for_sizes},
          {"cost_found", r.cost_found},
          {"min_gain_percent", 100 * min_gain_of(options)},
          {"ops_before", tensor::total_ops(input)},
          {"ops_after", tensor::total_ops(r.graph)},
          {"opaque_ops_before", tensor::opaque_op_types(input)},
          {"opaque_reasons_before", tensor::opaque_op_reasons(input)},
          {"opaque_ops_after", tensor::opaque_op_types(r.graph)},
          {"blocks", blocks_json(r)},
          {"subgraphs", subgraphs_json(r)},
          {"weight_bytes_before", r.weight_bytes_before},
          {"weight_bytes_after", r.weight_bytes_after},
          {"weight_spill", r.weight_spill},
          {"peak_nodes", r.stats.peak_nodes},
          {"peak_bytes", r.stats.peak_bytes},
          {"budget_nodes", options.budget.max_nodes},
          {"stop_reason", to_string(r.stats.stop_reason)},
          {"stop_reasons", stops},
          {"saturation_taken", r.stats.saturation_taken},
          {"extraction", std::string(to_string(r.extraction))},
          {"simulations", r.stats.simulations},
          {"regions", r.regions},
          {"region_structures", regions_json(r)},
          {"region_cache_hits", r.region_cache_hits()},
          {"rules_applied", counts_json(r.rules_applied, "count")},
          {"rules_rejected_type_mismatch", counts_json(r.rules_conflicting, "refusals")},
          {"unverified_rules", r.rule_check.unverified},
          {"self_check", r.self_check},
          {"rule_files",
           {{"files", options.rule_files},
            {"checked", !options.rule_files.empty() && !options.unverified_rules},
            {"verified", r.rule_check.verified},
            {"files_from_cache", r.rule_check.files_from_cache}}},
          {"seconds",
           {{"rules", r.times.rules},
            {"search", r.times.search},
            {"extract", r.times.extract},
            {"check", r.times.check},
            {"measure", r.times.measure},
            {"total", r.times.total}}},
          {"peak_memory_mb",
           {{"saturn", r.peak_memory.process_bytes / 1e6},
            {"onnxruntime_harness", r.peak_memory.children_bytes / 1e6}}},
          {"predicted_speedup", r.predicted_speedup()},
          {"measured", measurement_json(r.measured)}};
}

}  // namespace saturn

// What a process sends the root of SearchOptions::processes: the searches
// of the region structures it took, as JSON text. A result's graph goes
// node by node, in its order, with its weights by name only: the root cut
// the same regions from the same graph, so it holds the region's weights,
// interface and opsets, and a search adds no weights of its own.
#include <bit>
#include <optional>
#include <variant>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/base/status.h"
#include "saturn/optimize/report.h"
#include "saturn/optimize/optimize_internal.h"
#include "saturn/tensor/ops.h"

namespace saturn {

namespace {

using nlohmann::json;

// An attribute value as [alternative, value]; a double by its bits (JSON
// has no infinities).
json attr_json(const AttrValue& v) {
  if (const double* d = std::get_if<double>(&v)) return {1, std::bit_cast<std::int64_t>(*d)};
  return std::visit([&v](const auto& x) { return json{v.index(), x}; }, v);
}

AttrValue attr_of(const json& j) {
  switch (j.at(0).get<int>()) {
    case 0:
      return j.at(1).get<std::int64_t>();
    case 1:
      return std::bit_cast<double>(j.at(1).get<std::int64_t>());
    case 2:
      return j.at(1).get<std::string>();
    default:
      return j.at(1).get<std::vector<std::int64_t>>();
  }
}

json graph_json(const tensor::Graph& g) {
  json nodes = json::array(), outputs = json::array(), weights = json::array();
  for (const tensor::Node& n : g.nodes) {
    json attributes = json::array();
    for (const Attribute& a : n.attributes.entries())
      attributes.push_back({a.key, attr_json(a.value)});
    nodes.push_back({tensor::op_name(n.op), std::move(attributes), n.inputs, n.name});
  }
  for (const tensor::GraphOutput& o : g.outputs) outputs.push_back({o.node, o.name});
  for (const auto& [name, init] : g.weights) weights.push_back(name);
  return {{"nodes", std::move(nodes)}, {"outputs", std::move(outputs)}, {"weights", weights}};
}

// The graph sent, on the region's interface and weights.
absl::StatusOr<tensor::Graph> graph_of(const json& j, const tensor::Graph& region,
                                       const std::string& source) {
  tensor::Graph g;
  g.name = region.name;
  g.opsets = region.opsets;
  g.skip_normalizations_at_load = region.skip_normalizations_at_load;
  g.symbols = region.symbols;
  g.input_defaults = region.input_defaults;
  for (const json& n : j.at("nodes")) {
    std::optional<tensor::Op> op = tensor::find_op(n.at(0).get<std::string>());
    if (!op) return absl::InternalError(fmt::format("{}: unknown operator {}", source, n.at(0).dump()));
    tensor::Node node{.op = *op, .inputs = n.at(2).get<std::vector<int>>(),
                      .name = n.at(3).get<std::string>()};
    for (const json& a : n.at(1)) node.attributes.set(a.at(0).get<std::string>(), attr_of(a.at(1)));
    g.nodes.push_back(std::move(node));
  }
  for (const json& o : j.at("outputs"))
    g.outputs.push_back({o.at(0).get<int>(), o.at(1).get<std::string>()});
  for (const json& w : j.at("weights")) {
    const std::string name = w.get<std::string>();
    auto it = region.weights.find(name);
    if (it == region.weights.end())
      return absl::InternalError(fmt::format("{}: no weight '{}' in the region", source, name));
    g.weights[name] = it->second;
  }
  return g;
}

json result_json(const OptimizeResult& r) {
  const SearchStats& s = r.stats;
  return {{"graph", graph_json(r.graph)},
          {"decision", decision_json(r.decision)},
          {"cost_before", r.cost_before},
          {"cost_after", r.cost_after},
          {"cost_found", r.cost_found},
          {"extraction", static_cast<int>(r.extraction)},
          {"rules_applied", counts_json(r.rules_applied, "count")},
          {"rules_conflicting", counts_json(r.rules_conflicting, "count")},
          {"num_rules", r.num_rules},
          {"self_check", r.self_check},
          {"not_searched", r.not_searched},
          {"stats",
           {{"strategy", s.strategy},
            {"stop_reason", to_string(s.stop_reason)},
            {"saturation_taken", s.saturation_taken},
            {"steps", s.steps},
            {"simulations", s.simulations},
            {"graphs_explored", s.graphs_explored},
            {"extractions", s.extractions},
            {"peak_nodes", s.peak_nodes},
            {"peak_bytes", s.peak_bytes},
            {"rule_applications", s.rule_applications},
            {"rule_conflicts", s.rule_conflicts},
            {"seconds", s.seconds}}},
          {"times", {r.times.rules, r.times.search, r.times.extract, r.times.total}}};
}

absl::StatusOr<OptimizeResult> result_of(const json& j, const tensor::Graph& region,
                                         const std::string& source) {
  absl::StatusOr<tensor::Graph> graph = graph_of(j.at("graph"), region, source);
  if (!graph.ok()) return graph.status();
  OptimizeResult r;
  r.graph = *std::move(graph);
  absl::StatusOr<Decision> decision = decision_of(j.at("decision"));
  if (!decision.ok()) return decision.status();
  r.decision = *std::move(decision);
  r.cost_before = j.at("cost_before").get<double>();
  r.cost_after = j.at("cost_after").get<double>();
  r.cost_found = j.at("cost_found").get<double>();
  r.extraction = static_cast<ExtractionStatus>(j.at("extraction").get<int>());
  r.rules_applied = counts_of(j.at("rules_applied"), "count");
  r.rules_conflicting = counts_of(j.at("rules_conflicting"), "count");
  r.num_rules = j.at("num_rules").get<std::size_t>();
  r.self_check = j.at("self_check").get<std::string>();
  r.not_searched = j.at("not_searched").get<std::string>();
  const json& s = j.at("stats");
  const std::optional<StopReason> stop = parse_stop_reason(s.at("stop_reason").get<std::string>());
  if (!stop)
    return absl::DataLossError(fmt::format("{}: unknown stop reason '{}'", source,
                                           s.at("stop_reason").get<std::string>()));
  r.stats = {.strategy = s.at("strategy").get<std::string>(),
             .stop_reason = *stop,
             .saturation_taken = s.at("saturation_taken").get<bool>(),
             .steps = s.at("steps").get<std::size_t>(),
             .simulations = s.at("simulations").get<std::size_t>(),
             .graphs_explored = s.at("graphs_explored").get<std::size_t>(),
             .extractions = s.at("extractions").get<std::size_t>(),
             .peak_nodes = s.at("peak_nodes").get<std::size_t>(),
             .peak_bytes = s.at("peak_bytes").get<std::size_t>(),
             .rule_applications = s.at("rule_applications").get<std::vector<std::size_t>>(),
             .rule_conflicts = s.at("rule_conflicts").get<std::vector<std::size_t>>(),
             .seconds = s.at("seconds").get<double>()};
  const json& t = j.at("times");
  r.times = {t.at(0).get<double>(), t.at(1).get<double>(), t.at(2).get<double>(),
             t.at(3).get<double>()};
  return r;
}

}  // namespace

std::string encode_searches(const std::vector<StructureSearch>& searches) {
  json out = json::array();
  for (const StructureSearch& search : searches) {
    json entry = {{"structure", search.structure}, {"seconds", search.seconds}};
    if (search.found.ok()) {
      entry["result"] = result_json(*search.found);
    } else {
      entry["code"] = static_cast<int>(search.found.status().code());
      entry["message"] = std::string(message(search.found.status()));
    }
    out.push_back(std::move(entry));
  }
  return out.dump();
}

absl::Status decode_searches(const std::string& text, int rank,
                             const std::vector<tensor::Region>& regions,
                             const std::vector<int>& first,
                             std::vector<absl::StatusOr<OptimizeResult>>& found,
                             std::vector<double>& seconds) {
  const std::string source = fmt::format("the searches of rank {}", rank);
  try {
    for (const json& entry : json::parse(text)) {
      const auto s = entry.at("structure").get<std::size_t>();
      if (s >= found.size())
        return absl::InternalError(fmt::format("{}: no region structure {}", source, s));
      seconds[s] = entry.at("seconds").get<double>();
      if (entry.contains("result")) {
        found[s] = result_of(entry.at("result"), regions[first[s]].graph, source);
      } else {
        found[s] = absl::Status(static_cast<absl::StatusCode>(entry.at("code").get<int>()),
                                fmt::format("on rank {}: {}", rank,
                                            entry.at("message").get<std::string>()));
      }
    }
  } catch (const json::exception& e) {
    return absl::InternalError(fmt::format("{}: {}", source, e.what()));
  }
  return absl::OkStatus();
}

}  // namespace saturn

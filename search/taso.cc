// TASO-style backtracking search (Jia et al., SOSP 2019): graphs, not
// e-graphs. A priority queue holds rewritten graphs by cost; the cheapest is
// popped and every single rewrite of it (one match of one rule) yields a
// candidate graph, kept if it costs less than alpha times the best so far.
// The search ends after a budget of popped graphs or at the time limit.
//
// A candidate is made in an environment that holds just the popped graph: the
// rewrite is applied from a checkpoint, the rewritten classes take their new
// node, every other class keeps the graph's own node, and the state rolls back.
#include <algorithm>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "saturn/base/stopwatch.h"
#include "saturn/search/search.h"

namespace saturn {

namespace {

struct TasoGraph {
  double cost = 0;
  std::shared_ptr<const tensor::Graph> graph;
  std::vector<std::size_t> rules;  // rewrites applied since the input graph
  std::size_t order = 0;           // insertion order, for deterministic ties
};

struct CheaperFirst {
  bool operator()(const TasoGraph& a, const TasoGraph& b) const {
    return a.cost != b.cost ? a.cost > b.cost : a.order > b.order;
  }
};

// A structural hash of a graph: nodes by operator, attributes and inputs;
// node names and order do not matter.
std::size_t graph_hash(const tensor::Graph& g) {
  std::vector<std::size_t> h(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const tensor::Node& n = g.nodes[i];
    std::vector<std::size_t> inputs;
    for (int in : n.inputs) inputs.push_back(h[static_cast<std::size_t>(in)]);
    h[i] = absl::HashOf(static_cast<int>(n.op), n.attributes, inputs);
  }
  std::vector<std::size_t> outs;
  for (const tensor::GraphOutput& o : g.outputs)
    outs.push_back(h[static_cast<std::size_t>(o.node)]);
  return absl::HashOf(outs);
}

// The graph in `env` after a rewrite: classes in `rewritten` take a node
// the graph did not have, every other class the graph's own node
// (`graph_nodes`, the e-nodes before the rewrite). Returns the graph and its
// cost (with the charge for weights held beyond the cache and
// `input_weight_bytes`), or nothing if the choice is cyclic.
std::optional<std::pair<tensor::Graph, double>> rewritten_graph(
    const Environment& env, std::span<const ENode> graph_nodes,
    const absl::flat_hash_set<Id>& rewritten, double input_weight_bytes) {
  const EGraph& egraph = env.egraph();
  absl::flat_hash_set<ENode> original;
  for (ENode n : graph_nodes) {
    egraph.canonicalize(n);
    original.insert(std::move(n));
  }
  auto choose = [&](Id id) -> const ENode* {
    Id c = egraph.find(id);
    std::span<const ENode> nodes = egraph.nodes(c);
    const ENode* kept = nullptr;
    const ENode* fresh = nullptr;
    for (const ENode& n : nodes) {
      ENode canonical = n;
      egraph.canonicalize(canonical);
      bool is_original = original.contains(canonical);
      if (is_original && kept == nullptr) kept = &n;
      if (!is_original && fresh == nullptr) fresh = &n;
    }
    if (rewritten.contains(c)) return fresh != nullptr ? fresh : kept;
    return kept != nullptr ? kept : &nodes.front();
  };
  absl::StatusOr<tensor::Graph> g =
      tensor::graph_from_egraph(egraph, env.input_graph(), env.outputs(), choose);
  if (!g.ok()) return std::nullopt;
  // The DAG cost of the chosen nodes.
  auto cost_of = egraph_cost_function(*env.config().cost_model, egraph, env.analysis(),
                                      env.config().cost_options);
  double cost = 0;
  absl::flat_hash_set<Id> seen;
  std::vector<Id> stack = env.output_classes();
  while (!stack.empty()) {
    Id c = egraph.find(stack.back());
    stack.pop_back();
    if (!seen.insert(c).second) continue;
    const ENode* n = choose(c);
    cost += cost_of(c, *n);
    for (Id child : n->children) stack.push_back(child);
  }
  if (charges_held_weights(*env.config().cost_model)) {
    absl::StatusOr<HeldWeights> held =
        held_weights(*env.config().cost_model, *g, input_weight_bytes);
    if (!held.ok()) return std::nullopt;
    cost += held->spill;
  }
  return std::make_pair(std::move(*g), cost);
}

}  // namespace

absl::StatusOr<SearchOutcome> run_taso(const EnvironmentConfig& config,
                                       const SearchOptions& options) {
  absl::StatusOr<std::unique_ptr<Environment>> first = Environment::create(config);
  if (!first.ok()) return first.status();
  const Stopwatch clock;
  auto elapsed = [&] { return clock.seconds(); };

  absl::StatusOr<HeldWeights> input_weights = held_weights(*config.cost_model, *config.graph, 0);
  if (!input_weights.ok()) return input_weights.status();
  SearchStats stats;
  stats.strategy = "taso";
  stats.stop_reason = StopReason::kQueueEmpty;
  std::size_t order = 0;
  TasoGraph best{
      (*first)->initial_cost(), std::make_shared<tensor::Graph>(*config.graph), {}, order++};
  std::priority_queue<TasoGraph, std::vector<TasoGraph>, CheaperFirst> queue;
  absl::flat_hash_set<std::size_t> seen{graph_hash(*best.graph)};
  queue.push(best);

  while (!queue.empty()) {
    if (stats.graphs_explored >= options.taso.max_popped) {
      stats.stop_reason = StopReason::kGraphLimit;
      break;
    }
    if (elapsed() >= config.budget.time_limit_seconds) {
      stats.stop_reason = StopReason::kTimeLimit;
      break;
    }
    TasoGraph current = queue.top();
    queue.pop();
    ++stats.graphs_explored;
    EnvironmentConfig local = config;
    local.graph = current.graph.get();
    absl::StatusOr<std::unique_ptr<Environment>> env = Environment::create(local);
    if (!env.ok()) continue;  // a rewritten graph larger than the budget
    Environment& e = **env;
    const EGraph& egraph = e.egraph();
    std::vector<ENode> graph_nodes;
    for (Id c : egraph.class_ids())
      for (const ENode& n : egraph.nodes(c)) graph_nodes.push_back(n);

    for (std::size_t r = 0; r < e.num_rules(); ++r) {
      RuleMatches m = e.matches(r);
      const std::size_t count = std::min(m.size(), options.taso.matches_per_rule);
      for (std::size_t i = 0; i < count; ++i) {
        e.checkpoint();
        const std::size_t which[] = {i};
        StepResult step = e.step(r, which);
        if (step.applied > 0) {
          absl::flat_hash_set<Id> rewritten;
          for (Id root : m.roots_of(i)) rewritten.insert(egraph.find(root));
          std::optional<std::pair<tensor::Graph, double>> next =
              rewritten_graph(e, graph_nodes, rewritten, static_cast<double>(input_weights->bytes));
          if (next && next->second < options.taso.alpha * best.cost) {
            auto graph = std::make_shared<const tensor::Graph>(std::move(next->first));
            if (seen.insert(graph_hash(*graph)).second) {
              TasoGraph c{next->second, graph, current.rules, order++};
              c.rules.push_back(r);
              if (c.cost < best.cost) best = c;
              queue.push(std::move(c));
            }
          }
        }
        e.restore();
      }
    }
    count_usage(e, stats);
  }

  // The best graph, in an environment of its own for the final extraction.
  EnvironmentConfig final_config = config;
  final_config.graph = best.graph.get();
  absl::StatusOr<std::unique_ptr<Environment>> env = Environment::create(final_config);
  if (!env.ok()) return env.status();
  SearchOutcome out;
  stats.steps = best.rules.size();
  stats.rule_applications.assign((*env)->num_rules(), 0);
  for (std::size_t r : best.rules) ++stats.rule_applications[r];
  count_usage(**env, stats);
  stats.seconds = elapsed();
  out.stats = std::move(stats);
  out.graph = best.graph;
  out.input_cost = (*first)->initial_cost();
  out.env = std::move(*env);
  return out;
}

}  // namespace saturn

#include "saturn/search/environment.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/container/inlined_vector.h"
#include "saturn/base/status.h"
#include "fmt/format.h"

namespace saturn {

namespace {

constexpr double kUnknownCost = std::numeric_limits<double>::quiet_NaN();

// The bytes of the weights that the graph `selection` picks holds at run
// time: weight-only classes that a chosen computed node reads, or that are
// outputs (what tensor::resident_weight_bytes counts in the rebuilt graph).
double held_weight_bytes(const ExtractionProblem& p, const Selection& selection,
                         const tensor::TensorAnalysis& analysis) {
  const Selection live = prune_to_roots(p, selection);
  auto weight_only = [&](std::uint32_t c) { return analysis.info(p.class_ids[c]).weight_only; };
  std::vector<bool> held(p.num_classes(), false);
  for (std::uint32_t r : p.roots) held[r] = weight_only(r);
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    if (live.choice[c] < 0 || weight_only(c)) continue;
    for (std::uint32_t k : p.children(static_cast<std::uint32_t>(live.choice[c])))
      held[k] = held[k] || weight_only(k);
  }
  double bytes = 0;
  for (std::uint32_t c = 0; c < p.num_classes(); ++c)
    if (held[c]) bytes += static_cast<double>(analysis.info(p.class_ids[c]).type.num_bytes());
  return bytes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Environment>> Environment::create(const EnvironmentConfig& config) {
  if (config.graph == nullptr || config.rules == nullptr || config.cost_model == nullptr)
    return absl::InvalidArgumentError("environment: a graph, rules and a cost model are required");
  if (!(config.budget.time_limit_seconds > 0))
    return absl::InvalidArgumentError(
        fmt::format("environment: the time limit must be positive (got {} s)",
                    config.budget.time_limit_seconds));
  std::unique_ptr<Environment> env(new Environment(config));
  if (absl::Status s = env->load(); !s.ok()) return s;
  return env;
}

Environment::Environment(const EnvironmentConfig& config) : config_(config) {}
Environment::~Environment() = default;

absl::Status Environment::load() {
  // A fresh e-graph is as cheap as a rollback for a graph-sized e-graph and
  // keeps real steps free of undo-trail bookkeeping.
  egraph_.reset();
  analysis_ = std::make_unique<tensor::TensorAnalysis>();
  egraph_ = std::make_unique<EGraph>(language_, analysis_.get());
  egraph_->set_budget({config_.budget.max_nodes, config_.budget.max_bytes});
  absl::StatusOr<std::vector<Id>> ids = tensor::add_graph(*egraph_, *config_.graph);
  if (ids.ok() && egraph_->memory_bytes() > config_.budget.max_bytes) {
    // Attribute sets are interned before a node's budget check.
    ids = absl::ResourceExhaustedError(fmt::format("graph '{}' takes {} bytes in the e-graph",
                                                   config_.graph->name, egraph_->memory_bytes()));
  }
  if (!ids.ok()) {
    return absl::ResourceExhaustedError(fmt::format(
        "model '{}' does not fit the search budget ({} e-nodes, {} bytes): {}", config_.graph->name,
        config_.budget.max_nodes,
        config_.budget.max_bytes == Budget::kUnlimited ? std::string("unlimited")
                                                       : std::to_string(config_.budget.max_bytes),
        message(ids.status())));
  }
  egraph_->rebuild();
  graph_ids_ = std::move(*ids);
  history_.clear();
  marks_.clear();
  applications_.assign(num_rules(), 0);
  conflicts_.resize(num_rules(), 0);  // kept over resets
  budget_hit_ = false;
  match_states_.clear();  // a fresh e-graph numbers its versions anew
  clock_.restart();
  peak_nodes_ = egraph_->num_nodes();
  peak_bytes_ = egraph_->memory_bytes();
  ++extractions_;
  const ExtractionProblem p = problem();
  const ExtractionResult r = reward_extractor().extract(p);
  input_weight_bytes_ =
      charges_held_weights(*config_.cost_model) ? held_weight_bytes(p, r.selection, *analysis_) : 0;
  initial_cost_ = price(p, r);
  return absl::OkStatus();
}

void Environment::reset() {
  // The graph fitted when the environment was created, so it fits again.
  absl::Status s = load();
  assert(s.ok());
  (void)s;
}

// ---- Reading the state ----------------------------------------------------

std::vector<Id> Environment::output_classes() const {
  std::vector<Id> roots;
  for (const tensor::GraphOutput& o : config_.graph->outputs)
    roots.push_back(egraph_->find(graph_ids_[o.node]));
  return roots;
}

std::vector<tensor::ClassOutput> Environment::outputs() const {
  std::vector<tensor::ClassOutput> outs;
  for (const tensor::GraphOutput& o : config_.graph->outputs)
    outs.push_back({egraph_->find(graph_ids_[o.node]), o.name});
  return outs;
}

ExtractionProblem Environment::problem() const { return problem(config_.cost_options); }

ExtractionProblem Environment::problem(const EGraphCostOptions& costs) const {
  std::vector<Id> roots = output_classes();
  return problem_from_egraph(
      *egraph_, roots, egraph_cost_function(*config_.cost_model, *egraph_, *analysis_, costs));
}

double Environment::evaluate_cost() const {
  ++extractions_;
  const ExtractionProblem p = problem();
  return price(p, reward_extractor().extract(p));
}

// The extraction takes weights as free; merging them can make the graph hold
// more than the cache does, which a per-operator cost cannot see, so the
// state is charged for it here (nothing without a device cache size).
double Environment::price(const ExtractionProblem& p, const ExtractionResult& extraction) const {
  if (!charges_held_weights(*config_.cost_model)) return extraction.dag_cost;
  return extraction.dag_cost + weight_spill(*config_.cost_model,
                                            held_weight_bytes(p, extraction.selection, *analysis_),
                                            input_weight_bytes_);
}

// The extractor that prices states: the DAG greedy one with a few sharing
// trials (enough for a merge's payoff to show; the final extraction tries
// more), since it runs after every step.
const DagGreedyExtractor& Environment::reward_extractor() {
  static const DagGreedyExtractor extractor(DagGreedyOptions{.sharing_trials = 4});
  return extractor;
}

double Environment::cost() {
  if (history_.empty()) return initial_cost_;
  double& c = history_.back().cost;
  if (std::isnan(c)) c = evaluate_cost();
  return c;
}

absl::StatusOr<tensor::Graph> Environment::extract_graph(const Extractor& extractor,
                                                         ExtractionResult* result) const {
  ExtractionProblem p = problem();
  ExtractionResult r = extractor.extract(p);
  absl::StatusOr<tensor::Graph> g = graph_of(p, r);
  if (result != nullptr) *result = std::move(r);
  return g;
}

absl::StatusOr<tensor::Graph> Environment::graph_of(const ExtractionProblem& p,
                                                    const ExtractionResult& extraction) const {
  if (extraction.status == ExtractionStatus::kNoSolution)
    return absl::InternalError("extraction found no acyclic graph for the outputs");
  return tensor::graph_from_egraph(*egraph_, *config_.graph, outputs(),
                                   chosen_enodes(*egraph_, p, extraction.selection));
}

Observation Environment::observe(absl::StatusOr<tensor::Graph>* graph) {
  Observation o;
  o.op_counts.assign(tensor::kNumOps, 0);
  ExtractionProblem p = problem();
  ExtractionResult r = reward_extractor().extract(p);
  ++extractions_;
  // The same extraction prices the state, if it was not priced yet.
  if (!history_.empty() && std::isnan(history_.back().cost)) history_.back().cost = price(p, r);
  if (graph != nullptr) *graph = graph_of(p, r);
  auto chosen = chosen_enodes(*egraph_, p, r.selection);
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    if (r.selection.choice[c] < 0) continue;
    const ENode* node = chosen(p.class_ids[c]);
    tensor::Op op = tensor::TensorLanguage::op(node->op);
    if (!is_free_operator(op)) ++o.op_counts[static_cast<std::size_t>(op)];
  }
  o.nodes = egraph_->num_nodes();
  o.classes = egraph_->num_classes();
  o.bytes = egraph_->memory_bytes();
  o.cost = cost();
  o.initial_cost = initial_cost_;
  o.steps = steps();
  o.seconds = seconds();
  return o;
}

double Environment::seconds() const { return clock_.seconds(); }

bool Environment::out_of_time() const { return seconds() >= config_.budget.time_limit_seconds; }

StopReason Environment::budget_stop() const {
  const bool bytes = config_.budget.max_bytes != Budget::kUnlimited &&
                     egraph_->num_nodes() < config_.budget.max_nodes;
  return bytes ? StopReason::kByteLimit : StopReason::kNodeLimit;
}

bool Environment::has_budget() const {
  return !budget_hit_ && egraph_->num_nodes() < config_.budget.max_nodes &&
         egraph_->memory_bytes() < config_.budget.max_bytes && !out_of_time();
}

// ---- Matches --------------------------------------------------------------

std::size_t Environment::match_limit() const {
  if (config_.match_limit > 0) return config_.match_limit;
  const std::size_t nodes = config_.budget.max_nodes;
  return nodes > SIZE_MAX / 4 ? SIZE_MAX : std::max<std::size_t>(20000, 4 * nodes);
}

const RuleMatches& Environment::matches(std::size_t action) {
  assert(action < num_rules());
  StateMatches* state = current_matches();
  if (state == nullptr) {
    if (match_states_.size() < kMatchStates) {
      state = &match_states_.emplace_back();
    } else {
      state = &*std::min_element(
          match_states_.begin(), match_states_.end(),
          [](const StateMatches& a, const StateMatches& b) { return a.last_use < b.last_use; });
    }
    state->version = egraph_->version();
    state->matches.assign(num_rules(), RuleMatches{});
    state->ready.assign(num_rules(), false);
  }
  state->last_use = ++match_uses_;
  if (!state->ready[action]) {
    state->matches[action] = search_rule(*egraph_, rule(action), match_limit());
    state->ready[action] = true;
  }
  return state->matches[action];
}

Environment::StateMatches* Environment::current_matches() {
  for (StateMatches& state : match_states_)
    if (state.version == egraph_->version()) return &state;
  return nullptr;
}

bool Environment::has_match(std::size_t action) {
  if (const StateMatches* state = current_matches(); state != nullptr && state->ready[action])
    return state->matches[action].size() > 0;
  // The first match is enough; the step that applies the rule finds them all.
  return search_rule(*egraph_, rule(action), 1).size() > 0;
}

std::vector<std::size_t> Environment::legal_actions() {
  std::vector<std::size_t> actions;
  for (std::size_t r = 0; r < num_rules(); ++r)
    if (has_match(r)) actions.push_back(r);
  actions.push_back(stop_action());
  return actions;
}

// Whether applying match `i` of a multi-pattern rule would make a matched
// class reachable from one of the variables' classes: the result, placed in
// the matched class, would then depend on that class itself (`reach_` holds
// the state the matches were found in).
bool Environment::would_cycle(const Rule& r, const RuleMatches& m, std::size_t i) {
  if (!r.is_multi()) return false;
  absl::InlinedVector<Id, 4> roots;
  for (Id root : m.roots_of(i)) roots.push_back(egraph_->find(root));
  std::span<const Id> subst = m.subst(i);
  for (std::size_t v = 0; v < subst.size(); ++v) {
    if (r.attr_vars[v]) continue;
    const Id var = egraph_->find(subst[v]);
    for (Id root : roots) {
      if (reach_.reaches(var, root)) return true;
    }
  }
  return false;
}

// ---- Steps ----------------------------------------------------------------

void Environment::apply(std::size_t rule_index, const RuleMatches& m,
                        std::span<const std::size_t> which, StepRecord& record,
                        StepResult& result) {
  const Rule& r = rule(rule_index);
  std::vector<std::size_t> chosen;
  auto consider = [&](std::size_t i) {
    if (i >= m.size()) return;
    if (config_.filter_cycles && would_cycle(r, m, i)) {
      ++result.filtered;
      return;
    }
    chosen.push_back(i);
  };
  if (which.empty()) {
    for (std::size_t i = 0; i < m.size(); ++i) consider(i);
  } else {
    for (std::size_t i : which) consider(i);
  }
  if (chosen.empty()) return;
  ApplyResult applied = apply_rule(*egraph_, r, m, chosen);
  if (applied.stopped) budget_hit_ = true;
  conflicts_[rule_index] += applied.conflicts;
  result.conflicts += applied.conflicts;
  if (applied.applied > 0) {
    record.per_rule.emplace_back(rule_index, applied.applied);
    applications_[rule_index] += applied.applied;
    record.applied += applied.applied;
    result.applied += applied.applied;
  }
}

// Every add checks the budget, but some growth is checked by none: an
// attribute set a rewrite interns, analysis data that a merge joins during
// the rebuild. Under a byte budget a step is applied from a mark, and one
// that ends above the budget is undone and applied again under a budget
// lowered by its overshoot (then, if need be, not at all), so that
// memory_bytes() never exceeds the budget.
void Environment::apply_capped(const std::function<void()>& apply_matches, StepRecord& record,
                               StepResult& result) {
  const std::size_t cap = config_.budget.max_bytes;
  if (cap == Budget::kUnlimited) {
    apply_matches();
    egraph_->rebuild();
    return;
  }
  const StepRecord empty_record = record;
  const StepResult empty_result = result;
  const std::vector<std::size_t> conflicts_before = conflicts_;  // a retry counts them again
  const bool hit_before = budget_hit_;
  bool overshot = false;
  std::size_t lowered = cap;
  for (int attempt = 0; attempt < 3; ++attempt) {
    egraph_->mark();
    if (attempt < 2) apply_matches();  // the third applies nothing
    egraph_->rebuild();
    const std::size_t bytes = egraph_->memory_bytes();
    if (bytes <= cap) {
      egraph_->release();
      break;
    }
    egraph_->rollback();
    for (auto [r, n] : record.per_rule) applications_[r] -= n;
    record = empty_record;
    result = empty_result;
    conflicts_ = conflicts_before;
    budget_hit_ = hit_before;  // the retry applies the matches again
    overshot = true;
    lowered = lowered > bytes - cap ? lowered - (bytes - cap) : 0;
    egraph_->set_budget({config_.budget.max_nodes, lowered});
  }
  egraph_->set_budget({config_.budget.max_nodes, cap});
  budget_hit_ = budget_hit_ || overshot;
}

StepResult Environment::finish_step(StepRecord record, StepResult result) {
  peak_nodes_ = std::max(peak_nodes_, egraph_->num_nodes());
  peak_bytes_ = std::max(peak_bytes_, egraph_->memory_bytes());
  const double before = config_.price_steps ? cost() : kUnknownCost;
  // An application that changed nothing keeps the cost it had (still
  // unknown when the state before was not priced).
  if (record.applied == 0) record.cost = current_cost_if_known();
  history_.push_back(std::move(record));
  if (config_.price_steps)
    result.reward = initial_cost_ > 0 ? (before - cost()) / initial_cost_ : 0.0;
  result.done = !has_budget();
  if (config_.on_progress) {
    config_.on_progress(SearchProgress{history_.size(), egraph_->num_nodes(),
                                       config_.budget.max_nodes, latest_known_cost(), initial_cost_,
                                       clock_.seconds()});
  }
  return result;
}

double Environment::current_cost_if_known() const {
  return history_.empty() ? initial_cost_ : history_.back().cost;
}

double Environment::latest_known_cost() const {
  for (auto it = history_.rbegin(); it != history_.rend(); ++it)
    if (!std::isnan(it->cost)) return it->cost;
  return initial_cost_;
}

StepResult Environment::step(std::size_t action, std::span<const std::size_t> subset) {
  StepRecord record{action, 0, kUnknownCost, {}};
  StepResult result;
  if (action >= num_rules()) {
    // Stop: the state does not change.
    record.cost = current_cost_if_known();
    history_.push_back(std::move(record));
    result.done = true;
    return result;
  }
  if (has_budget()) {
    RuleMatches m = matches(action);  // a copy: applying changes the e-graph
    if (config_.filter_cycles && rule(action).is_multi()) reach_.rank(*egraph_);
    apply_capped([&] { apply(action, m, subset, record, result); }, record, result);
  }
  return finish_step(std::move(record), result);
}

StepResult Environment::step_all(std::span<const std::size_t> rule_indices) {
  StepRecord record{num_rules() + 1, 0, kUnknownCost, {}};
  StepResult result;
  if (has_budget()) {
    std::vector<RuleMatches> all;
    all.reserve(rule_indices.size());
    bool multi = false;
    for (std::size_t r : rule_indices) {
      all.push_back(matches(r));
      multi = multi || rule(r).is_multi();
      result.truncated = result.truncated || all.back().size() >= match_limit();
    }
    // Ranks of the state the matches were found in.
    if (config_.filter_cycles && multi) reach_.rank(*egraph_);
    apply_capped(
        [&] {
          for (std::size_t k = 0; k < rule_indices.size() && !budget_hit_; ++k)
            apply(rule_indices[k], all[k], {}, record, result);
        },
        record, result);
  }
  return finish_step(std::move(record), result);
}

// ---- Checkpoints ----------------------------------------------------------

void Environment::checkpoint() {
  egraph_->mark();
  marks_.push_back({history_.size(), budget_hit_});
}

void Environment::restore() {
  assert(!marks_.empty());
  egraph_->rollback();
  const Mark m = marks_.back();
  marks_.pop_back();
  while (history_.size() > m.history_size) {
    for (auto [r, n] : history_.back().per_rule) applications_[r] -= n;
    history_.pop_back();
  }
  budget_hit_ = m.budget_hit;
}

}  // namespace saturn

// The tree and sharing-aware DAG greedy extractors.
#include <algorithm>
#include <deque>
#include <limits>
#include <set>

#include "egraph/stopwatch.h"
#include "extract/extractor.h"

namespace saturn {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// For each class, the nodes that have it as a child (CSR).
struct Parents {
  std::vector<std::uint32_t> start, nodes;
  explicit Parents(const ExtractionProblem& p) : start(p.num_classes() + 1, 0) {
    for (std::uint32_t k : p.child_class) ++start[k + 1];
    for (std::size_t c = 0; c < p.num_classes(); ++c) start[c + 1] += start[c];
    nodes.resize(p.child_class.size());
    std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
    for (std::uint32_t n = 0; n < p.num_nodes(); ++n) {
      for (std::uint32_t k : p.children(n)) nodes[fill[k]++] = n;
    }
  }
  std::span<const std::uint32_t> of(std::uint32_t c) const {
    return {nodes.data() + start[c], start[c + 1] - start[c]};
  }
};

// A FIFO of nodes to (re)consider, each at most once at a time.
class NodeQueue {
 public:
  explicit NodeQueue(std::size_t n) : queued_(n, false) {}
  void push(std::uint32_t n) {
    if (!queued_[n]) {
      queued_[n] = true;
      queue_.push_back(n);
    }
  }
  bool empty() const { return queue_.empty(); }
  std::uint32_t pop() {
    std::uint32_t n = queue_.front();
    queue_.pop_front();
    queued_[n] = false;
    return n;
  }

 private:
  std::vector<bool> queued_;
  std::deque<std::uint32_t> queue_;
};

ExtractionResult finish(const ExtractionProblem& p, Selection selection, const Stopwatch& clock) {
  ExtractionResult r;
  r.selection = prune_to_roots(p, selection);
  absl::StatusOr<double> cost = check_selection(p, r.selection);
  r.status = cost.ok() ? ExtractionStatus::kHeuristic : ExtractionStatus::kNoSolution;
  r.dag_cost = cost.ok() ? *cost : kInfinity;
  r.tree_cost = tree_cost(p, r.selection);
  r.seconds = clock.seconds();
  return r;
}

Selection tree_selection(const ExtractionProblem& p, const Parents& parents) {
  std::vector<double> best(p.num_classes(), kInfinity);
  Selection s{std::vector<std::int32_t>(p.num_classes(), -1)};
  NodeQueue queue(p.num_nodes());
  for (std::uint32_t n = 0; n < p.num_nodes(); ++n) {
    if (p.children(n).empty()) queue.push(n);
  }
  while (!queue.empty()) {
    std::uint32_t n = queue.pop();
    double cost = p.node_cost[n];
    for (std::uint32_t k : p.children(n)) cost += best[k];
    std::uint32_t c = p.node_class[n];
    if (!(cost < best[c])) continue;
    best[c] = cost;
    s.choice[c] = static_cast<std::int32_t>(n);
    for (std::uint32_t parent : parents.of(c)) queue.push(parent);
  }
  return s;
}

// A sub-DAG: the classes it contains, sorted, each with the cost of the node
// chosen for it.
struct CostSet {
  std::vector<std::pair<std::uint32_t, double>> items;
  double total = kInfinity;
};

// out = a ∪ b (by class; a's cost wins on a tie).
void merge_into(const std::vector<std::pair<std::uint32_t, double>>& a,
                const std::vector<std::pair<std::uint32_t, double>>& b,
                std::vector<std::pair<std::uint32_t, double>>& out) {
  out.clear();
  out.reserve(a.size() + b.size());
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].first < b[j].first)
      out.push_back(a[i++]);
    else if (b[j].first < a[i].first)
      out.push_back(b[j++]);
    else {
      out.push_back(a[i++]);
      ++j;
    }
  }
  out.insert(out.end(), a.begin() + i, a.end());
  out.insert(out.end(), b.begin() + j, b.end());
}

// `cost` is per node (the problem's costs, or those with some nodes prepaid).
Selection dag_selection(const ExtractionProblem& p, const Parents& parents,
                        std::span<const double> cost) {
  std::vector<CostSet> sets(p.num_classes());
  Selection s{std::vector<std::int32_t>(p.num_classes(), -1)};
  NodeQueue queue(p.num_nodes());
  for (std::uint32_t n = 0; n < p.num_nodes(); ++n) {
    if (p.children(n).empty()) queue.push(n);
  }
  std::vector<std::pair<std::uint32_t, double>> acc, scratch;
  while (!queue.empty()) {
    std::uint32_t n = queue.pop();
    std::uint32_t c = p.node_class[n];
    std::span<const std::uint32_t> kids = p.children(n);
    // A union costs at least its largest part: skip hopeless candidates.
    double bound = cost[n];
    double largest = 0;
    for (std::uint32_t k : kids) largest = std::max(largest, sets[k].total);
    if (!(bound + largest < sets[c].total)) continue;
    acc.clear();
    for (std::uint32_t k : kids) {
      merge_into(acc, sets[k].items, scratch);
      std::swap(acc, scratch);
    }
    auto at =
        std::lower_bound(acc.begin(), acc.end(), std::pair<std::uint32_t, double>{c, -kInfinity});
    if (at != acc.end() && at->first == c) continue;  // would make a cycle
    acc.insert(at, {c, cost[n]});
    double total = 0;
    for (const auto& item : acc) total += item.second;
    if (!(total < sets[c].total)) continue;
    sets[c].items = acc;
    sets[c].total = total;
    s.choice[c] = static_cast<std::int32_t>(n);
    for (std::uint32_t parent : parents.of(c)) queue.push(parent);
  }
  return s;
}

// The chosen nodes under `root` in a selection (root included), not
// descending into classes already in use.
std::vector<std::uint32_t> chosen_under(const ExtractionProblem& p, const Selection& s,
                                        std::uint32_t root, const std::vector<bool>& in_use) {
  std::vector<std::uint32_t> nodes;
  std::vector<bool> seen = in_use;
  std::vector<std::uint32_t> stack = {root};
  seen[root] = true;
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    if (s.choice[c] < 0) continue;
    const auto n = static_cast<std::uint32_t>(s.choice[c]);
    nodes.push_back(n);
    for (std::uint32_t k : p.children(n)) {
      if (!seen[k]) {
        seen[k] = true;
        stack.push_back(k);
      }
    }
  }
  return nodes;
}

// Sharing the greedy pass cannot see: a class several chosen classes could
// read (the Split of merged Q, K and V projections) pays off only when all of
// them switch to it together, while each one alone would pay for the whole
// merged operator. For each such class (most readers first, at most
// `max_trials`), the greedy pass runs again with that class's sub-DAG
// prepaid; the result is kept when its true DAG cost is lower. The pass gives
// up after `sharing_patience` fruitless trials in a row.
ExtractionResult improve_by_sharing(const ExtractionProblem& p, const Parents& parents,
                                    const Selection& full, ExtractionResult best,
                                    const Stopwatch& clock, const DagGreedyOptions& options) {
  if (best.status == ExtractionStatus::kNoSolution) return best;
  std::vector<bool> in_use(p.num_classes(), false);
  for (std::size_t c = 0; c < p.num_classes(); ++c) in_use[c] = best.selection.choice[c] >= 0;
  std::vector<std::pair<int, std::uint32_t>> candidates;  // (readers, class)
  std::vector<std::uint32_t> readers;
  // One candidate per set of readers: the rest would offer the same switch
  // (a merge applied in several operand orders, say).
  std::set<std::vector<std::uint32_t>> reader_sets;
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    if (in_use[c] || full.choice[c] < 0) continue;
    readers.clear();
    for (std::uint32_t parent : parents.of(c)) {
      const std::uint32_t pc = p.node_class[parent];
      if (in_use[pc]) readers.push_back(pc);
    }
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    if (readers.size() >= 2 && reader_sets.insert(readers).second)
      candidates.emplace_back(static_cast<int>(readers.size()), c);
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  if (static_cast<int>(candidates.size()) > options.sharing_trials)
    candidates.resize(static_cast<std::size_t>(options.sharing_trials));
  std::vector<double> cost(p.node_cost.begin(), p.node_cost.end());
  int fruitless = 0;  // trials in a row that did not help
  for (const auto& [count, c] : candidates) {
    if (options.sharing_patience > 0 && fruitless >= options.sharing_patience) break;
    if (in_use[c]) continue;  // an earlier switch already uses it
    // Prepay only what the switch adds: the class's sub-DAG down to the
    // classes already in use (prepaying those would make the current
    // choices look free).
    std::vector<double> trial = cost;
    for (std::uint32_t n : chosen_under(p, full, c, in_use)) trial[n] = 0;
    ExtractionResult r = finish(p, dag_selection(p, parents, trial), clock);
    ++fruitless;
    if (r.dag_cost < best.dag_cost) {
      fruitless = 0;
      best = std::move(r);
      cost = std::move(trial);  // later trials build on this sharing
      for (std::size_t k = 0; k < p.num_classes(); ++k) in_use[k] = best.selection.choice[k] >= 0;
    }
  }
  return best;
}

}  // namespace

std::string_view to_string(ExtractionStatus status) {
  switch (status) {
    case ExtractionStatus::kHeuristic:
      return "heuristic";
    case ExtractionStatus::kOptimal:
      return "optimal";
    case ExtractionStatus::kFeasible:
      return "feasible";
    case ExtractionStatus::kTimedOut:
      return "timed-out";
    case ExtractionStatus::kNoSolution:
      return "no-solution";
  }
  return "?";
}

ExtractionResult TreeExtractor::extract(const ExtractionProblem& p) const {
  const Stopwatch clock;
  return finish(p, tree_selection(p, Parents(p)), clock);
}

ExtractionResult DagGreedyExtractor::extract(const ExtractionProblem& p) const {
  const Stopwatch clock;
  Parents parents(p);
  const Selection full = dag_selection(p, parents, p.node_cost);
  ExtractionResult dag = finish(p, full, clock);
  ExtractionResult tree = finish(p, tree_selection(p, parents), clock);
  ExtractionResult best = dag.dag_cost <= tree.dag_cost ? std::move(dag) : std::move(tree);
  if (options_.sharing_trials > 0)
    best = improve_by_sharing(p, parents, full, std::move(best), clock, options_);
  best.seconds = clock.seconds();
  return best;
}

}  // namespace saturn

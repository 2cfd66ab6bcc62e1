// The tree and sharing-aware DAG greedy extractors.
#include <algorithm>
#include <bit>
#include <deque>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>

#include "saturn/base/stopwatch.h"
#include "saturn/extract/extractor.h"

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
  SelectionSummary summary = summarize_selection(p, selection);
  ExtractionResult r;
  r.selection = std::move(summary.pruned);
  r.status = summary.status.ok() ? ExtractionStatus::kHeuristic : ExtractionStatus::kNoSolution;
  r.dag_cost = summary.dag_cost;
  r.tree_cost = summary.tree_cost;
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

// The sub-DAG of each class's choice: the classes it holds, each with the
// cost of the node chosen for it when that class's own sub-DAG was formed
// (later choices below do not change a set formed earlier, so a set's cost is
// always that of a real sub-DAG). Two forms with one interface: bitsets and
// a dense cost row per class for small problems, such as the states a search
// prices (a union is a few word ORs and a copy of the costs it adds), and
// sorted (class, cost) lists for larger ones. Either keeps its buffers from
// one call to the next on a thread: a search prices thousands of states, and
// allocating every class's set anew cost as much as the unions.
class DenseSets {
 public:
  // Up to this many classes: 8 MB of cost rows at most.
  static constexpr std::size_t kMaxClasses = 1024;

  void reset(std::size_t classes) {
    classes_ = classes;
    words_ = (classes + 63) / 64;
    // One row per class and one for the union being formed; keep_acc swaps
    // rows instead of copying them.
    // Grown, never shrunk nor cleared: a row is read only once written (its
    // class has a set), and shrinking would have the next growth zero it.
    grow(bits_, (classes + 1) * words_);
    grow(costs_, (classes + 1) * classes);
    row_.resize(classes);
    std::iota(row_.begin(), row_.end(), 0u);
    acc_ = static_cast<std::uint32_t>(classes);
  }
  // acc = the union of the classes' sets; a cost from an earlier one wins.
  void unite(std::span<const std::uint32_t> classes) {
    std::uint64_t* acc_bits = bits(acc_);
    double* acc_costs = costs(acc_);
    std::fill(acc_bits, acc_bits + words_, 0);
    double total = 0;  // a local: the member would go through memory on every add
    for (std::uint32_t k : classes) {
      const std::uint64_t* set_bits = bits(row_[k]);
      const double* set_costs = costs(row_[k]);
      for (std::size_t w = 0; w < words_; ++w) {
        for (std::uint64_t added = set_bits[w] & ~acc_bits[w]; added != 0; added &= added - 1) {
          const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(added));
          acc_costs[i] = set_costs[i];
          total += set_costs[i];
        }
        acc_bits[w] |= set_bits[w];
      }
    }
    acc_total_ = total;
  }
  bool acc_contains(std::uint32_t c) const { return (bits(acc_)[c / 64] >> (c % 64)) & 1; }
  // Adds class c at `cost`; returns the union's total.
  double acc_add(std::uint32_t c, double cost) {
    bits(acc_)[c / 64] |= std::uint64_t{1} << (c % 64);
    costs(acc_)[c] = cost;
    return acc_total_ += cost;
  }
  // Class c's set becomes acc (its old row takes acc's place).
  void keep_acc(std::uint32_t c) { std::swap(row_[c], acc_); }

 private:
  template <typename T>
  static void grow(std::vector<T>& v, std::size_t size) {
    if (v.size() < size) v.resize(size);
  }
  std::uint64_t* bits(std::uint32_t row) { return &bits_[row * words_]; }
  const std::uint64_t* bits(std::uint32_t row) const { return &bits_[row * words_]; }
  double* costs(std::uint32_t row) { return &costs_[row * classes_]; }

  std::size_t classes_ = 0, words_ = 0;
  std::vector<std::uint64_t> bits_;  // row r's members: words [r * words_, (r + 1) * words_)
  std::vector<double> costs_;        // and their costs (set members only): [r * classes_, ...)
  std::vector<std::uint32_t> row_;   // per class: its set's row
  std::uint32_t acc_ = 0;            // the row of the union being formed
  double acc_total_ = 0;
};

class SparseSets {
 public:
  using Item = std::pair<std::uint32_t, double>;  // class, cost

  void reset(std::size_t classes) {
    sets_.resize(std::max(sets_.size(), classes));
    for (std::size_t c = 0; c < classes; ++c) sets_[c].clear();
  }
  void unite(std::span<const std::uint32_t> classes) {
    acc_.clear();
    for (std::uint32_t k : classes) {
      scratch_.clear();
      std::set_union(acc_.begin(), acc_.end(), sets_[k].begin(), sets_[k].end(),
                     std::back_inserter(scratch_), by_class);
      std::swap(acc_, scratch_);
    }
  }
  bool acc_contains(std::uint32_t c) const {
    return std::binary_search(acc_.begin(), acc_.end(), Item{c, 0}, by_class);
  }
  double acc_add(std::uint32_t c, double cost) {
    acc_.insert(std::lower_bound(acc_.begin(), acc_.end(), Item{c, 0}, by_class), Item{c, cost});
    double total = 0;
    for (const Item& item : acc_) total += item.second;
    return total;
  }
  void keep_acc(std::uint32_t c) { sets_[c].swap(acc_); }  // acc_ is cleared before its next use

 private:
  static bool by_class(const Item& a, const Item& b) { return a.first < b.first; }
  std::vector<std::vector<Item>> sets_;
  std::vector<Item> acc_, scratch_;
};

// Each class takes the node whose sub-DAG (the node and the union of its
// children's sub-DAGs) costs least, until nothing improves; a node whose
// sub-DAG would contain its own class is passed over. `cost` is per node
// (the problem's costs, or those with some nodes prepaid).
template <typename Sets>
Selection dag_selection_with(const ExtractionProblem& p, const Parents& parents,
                             std::span<const double> cost, Sets& sets) {
  sets.reset(p.num_classes());
  std::vector<double> total(p.num_classes(), kInfinity);  // of each class's set
  Selection s{std::vector<std::int32_t>(p.num_classes(), -1)};
  NodeQueue queue(p.num_nodes());
  for (std::uint32_t n = 0; n < p.num_nodes(); ++n) {
    if (p.children(n).empty()) queue.push(n);
  }
  while (!queue.empty()) {
    const std::uint32_t n = queue.pop();
    const std::uint32_t c = p.node_class[n];
    std::span<const std::uint32_t> kids = p.children(n);
    // A union costs at least its largest part: skip hopeless candidates.
    double largest = 0;
    for (std::uint32_t k : kids) largest = std::max(largest, total[k]);
    if (!(cost[n] + largest < total[c])) continue;
    sets.unite(kids);
    if (sets.acc_contains(c)) continue;  // would make a cycle
    const double t = sets.acc_add(c, cost[n]);
    if (!(t < total[c])) continue;
    sets.keep_acc(c);
    total[c] = t;
    s.choice[c] = static_cast<std::int32_t>(n);
    for (std::uint32_t parent : parents.of(c)) queue.push(parent);
  }
  return s;
}

Selection dag_selection(const ExtractionProblem& p, const Parents& parents,
                        std::span<const double> cost) {
  if (p.num_classes() <= DenseSets::kMaxClasses) {
    thread_local DenseSets dense;
    return dag_selection_with(p, parents, cost, dense);
  }
  thread_local SparseSets sparse;
  return dag_selection_with(p, parents, cost, sparse);
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
// merged operator.
//
// Such classes are offered in order of their estimated gain: what the
// readers' current choices free, less the nodes that would read the class
// and the sub-DAG the class adds (see offer()). An estimate is refreshed
// before use, since earlier switches change it. A trial prepays the sub-DAGs
// of a batch of offers that touch disjoint classes and runs the greedy pass
// again; it is kept when its true DAG cost is lower. A batch that does not pay is halved
// and retried, so a model with many independent switches (one per layer)
// needs few trials. The pass stops after `sharing_trials` trials, after
// `sharing_patience` fruitless single-offer trials in a row, or when no
// estimate exceeds `sharing_min_gain` of the cost.
class SharingPass {
 public:
  SharingPass(const ExtractionProblem& p, const Parents& parents, const Selection& full,
              const Stopwatch& clock)
      : p_(p),
        parents_(parents),
        full_(full),
        clock_(clock),
        cost_(p.node_cost.begin(), p.node_cost.end()),
        in_use_(p.num_classes(), false),
        claimed_(p.num_classes(), false),
        uses_(p.num_classes(), 0),
        dropped_(p.num_classes(), 0),
        kept_(p.num_classes(), false) {}

  ExtractionResult run(ExtractionResult best, const DagGreedyOptions& options) {
    if (best.status == ExtractionStatus::kNoSolution) return best;
    best_ = std::move(best);
    min_gain_ = best_.dag_cost * options.sharing_min_gain;
    mark_in_use();
    for (std::uint32_t c = 0; c < p_.num_classes(); ++c) {
      if (in_use_[c] || full_.choice[c] < 0) continue;
      if (std::optional<Offer> o = offer(c)) queue_.emplace_back(o->gain, c);
    }
    std::make_heap(queue_.begin(), queue_.end());
    std::size_t batch_limit = p_.num_classes();
    int trials = 0, fruitless = 0;
    while (trials < options.sharing_trials &&
           (options.sharing_patience <= 0 || fruitless < options.sharing_patience)) {
      std::vector<Offer> batch = next_batch(batch_limit);
      if (batch.empty()) break;
      std::vector<double> trial = cost_;
      for (const Offer& o : batch) {
        for (std::uint32_t n : o.nodes) trial[n] = 0;
      }
      ExtractionResult r = finish(p_, dag_selection(p_, parents_, trial), clock_);
      ++trials;
      if (r.dag_cost < best_.dag_cost) {
        fruitless = 0;
        best_ = std::move(r);
        cost_ = std::move(trial);  // later trials build on this sharing
        mark_in_use();
        continue;
      }
      if (batch.size() == 1) {
        ++fruitless;
        continue;
      }
      batch_limit = batch.size() / 2;  // too much at once: offer them again, fewer at a time
      for (const Offer& o : batch) push(o.gain, o.cls);
    }
    return std::move(best_);
  }

 private:
  struct Offer {
    std::uint32_t cls = 0;
    double gain = 0;
    std::vector<std::uint32_t> readers;  // classes that would read `cls`
    std::vector<std::uint32_t> nodes;    // the sub-DAG the switch adds
  };

  void mark_in_use() {
    std::fill(uses_.begin(), uses_.end(), 0);
    for (std::uint32_t r : p_.roots) ++uses_[r];
    for (std::size_t c = 0; c < p_.num_classes(); ++c) {
      const std::int32_t n = best_.selection.choice[c];
      in_use_[c] = n >= 0;
      if (n >= 0) {
        for (std::uint32_t k : p_.children(static_cast<std::uint32_t>(n))) ++uses_[k];
      }
    }
  }

  void push(double gain, std::uint32_t c) {
    queue_.emplace_back(gain, c);
    std::push_heap(queue_.begin(), queue_.end());
  }

  // Switching the chosen classes that could read class c to it: nullopt
  // when fewer than two could. A reader is a class in use with a node that
  // reads c, directly or through up to kLevels classes not in use whose
  // nodes cost nothing (a merged Q/K/V projection split in halves, then each
  // half split again). The estimate: what the readers' current choices free
  // (their nodes, and whatever only they use), less the reading nodes (one
  // level of their other children not in use counted) and c's sub-DAG.
  std::optional<Offer> offer(std::uint32_t c) const {
    constexpr int kLevels = 4;
    constexpr std::size_t kMaxWay = 32;  // classes on the way, at most
    Offer o;
    o.cls = c;
    std::vector<double> reading;  // per reader: the cost of its cheapest reading node
    std::vector<std::uint32_t> reading_node;
    // Scratch members: offer() runs for every class not in use.
    std::vector<std::uint32_t>& way = way_;
    std::vector<std::uint32_t>& level = level_;
    std::vector<std::uint32_t>& next = next_;
    way.assign(1, c);
    level.assign(1, c);
    // A parent node's own cost and that of its other children not in use.
    auto cost_of = [&](std::uint32_t parent, std::uint32_t child) {
      double cost = cost_[parent];
      for (std::uint32_t k : p_.children(parent)) {
        if (k != child && !in_use_[k] && full_.choice[k] >= 0)
          cost += cost_[static_cast<std::uint32_t>(full_.choice[k])];
      }
      return cost;
    };
    for (int depth = 0; depth < kLevels && !level.empty(); ++depth) {
      next.clear();
      for (std::uint32_t x : level) {
        for (std::uint32_t parent : parents_.of(x)) {
          const std::uint32_t rc = p_.node_class[parent];
          if (best_.selection.choice[rc] == static_cast<std::int32_t>(parent)) continue;
          const double cost = cost_of(parent, x);
          if (in_use_[rc]) {
            auto it = std::find(o.readers.begin(), o.readers.end(), rc);
            if (it == o.readers.end()) {
              o.readers.push_back(rc);
              reading.push_back(cost);
              reading_node.push_back(parent);
            } else if (const auto i = static_cast<std::size_t>(it - o.readers.begin());
                       cost < reading[i]) {
              reading[i] = cost;
              reading_node[i] = parent;
            }
          } else if (cost == 0 && way.size() < kMaxWay &&
                     std::find(way.begin(), way.end(), rc) == way.end()) {
            way.push_back(rc);
            next.push_back(rc);
          }
        }
      }
      level.swap(next);
    }
    if (o.readers.size() < 2) return std::nullopt;
    o.nodes = chosen_under(p_, full_, c, in_use_);
    // Classes the switch keeps using: the readers, and the in-use children
    // of the reading nodes and of c's sub-DAG.
    std::vector<std::uint32_t> kept = o.readers;
    for (const auto* nodes : {&reading_node, &o.nodes}) {
      for (std::uint32_t n : *nodes) {
        for (std::uint32_t k : p_.children(n)) {
          if (in_use_[k]) kept.push_back(k);
        }
      }
    }
    o.gain = freed_by(o.readers, kept);
    for (double r : reading) o.gain -= r;
    for (std::uint32_t n : o.nodes) o.gain -= cost_[n];
    return o;
  }

  // What the best selection saves when `readers` drop their chosen nodes:
  // those nodes and every class only they (transitively) use, except the
  // `kept` classes (and what they use).
  double freed_by(const std::vector<std::uint32_t>& readers,
                  const std::vector<std::uint32_t>& kept) const {
    double freed = 0;
    std::vector<std::uint32_t>& stack = stack_;
    std::vector<std::uint32_t>& touched = touched_;
    touched.clear();
    auto drop = [&](std::uint32_t n) {
      freed += cost_[n];
      for (std::uint32_t k : p_.children(n)) stack.push_back(k);
    };
    for (std::uint32_t k : kept) kept_[k] = true;
    for (std::uint32_t rc : readers) drop(static_cast<std::uint32_t>(best_.selection.choice[rc]));
    while (!stack.empty()) {
      std::uint32_t k = stack.back();
      stack.pop_back();
      if (dropped_[k]++ == 0) touched.push_back(k);
      if (dropped_[k] == uses_[k] && !kept_[k])
        drop(static_cast<std::uint32_t>(best_.selection.choice[k]));
    }
    for (std::uint32_t k : touched) dropped_[k] = 0;
    for (std::uint32_t k : kept) kept_[k] = false;
    return freed;
  }

  // The best offers whose classes do not overlap, at most `limit`; offers
  // set aside for an overlap go back to the queue.
  std::vector<Offer> next_batch(std::size_t limit) {
    std::vector<Offer> batch;
    std::vector<std::pair<double, std::uint32_t>> aside;
    std::fill(claimed_.begin(), claimed_.end(), false);
    while (!queue_.empty() && batch.size() < limit) {
      std::pop_heap(queue_.begin(), queue_.end());
      auto [estimate, c] = queue_.back();
      queue_.pop_back();
      if (estimate <= min_gain_) {
        queue_.clear();  // the rest are no better
        break;
      }
      if (in_use_[c]) continue;  // an earlier switch already uses it
      std::optional<Offer> o = offer(c);
      if (!o || o->gain <= min_gain_) continue;
      if (!queue_.empty() && o->gain < queue_.front().first) {  // stale: queue it again
        push(o->gain, c);
        continue;
      }
      auto taken = [&](std::uint32_t k) { return claimed_[k]; };
      bool overlaps = taken(c) || std::any_of(o->readers.begin(), o->readers.end(), taken) ||
                      std::any_of(o->nodes.begin(), o->nodes.end(),
                                  [&](std::uint32_t n) { return taken(p_.node_class[n]); });
      if (overlaps) {
        aside.emplace_back(o->gain, c);
        continue;
      }
      claimed_[c] = true;
      for (std::uint32_t k : o->readers) claimed_[k] = true;
      for (std::uint32_t n : o->nodes) claimed_[p_.node_class[n]] = true;
      batch.push_back(*std::move(o));
    }
    for (const auto& [gain, c] : aside) push(gain, c);
    return batch;
  }

  const ExtractionProblem& p_;
  const Parents& parents_;
  const Selection& full_;
  const Stopwatch& clock_;
  std::vector<double> cost_;          // node costs, with the switched-to sub-DAGs prepaid
  std::vector<bool> in_use_;          // classes the best selection uses
  std::vector<bool> claimed_;         // classes the batch being formed touches
  std::vector<int> uses_;             // per class in use: its readers in the best selection
  mutable std::vector<int> dropped_;  // freed_by's scratch: readers dropped so far
  mutable std::vector<bool> kept_;    // freed_by's scratch: the classes kept
  mutable std::vector<std::uint32_t> way_, level_, next_, stack_, touched_;  // scratch
  ExtractionResult best_;
  double min_gain_ = 0;  // offers estimated to save no more are not tried
  std::vector<std::pair<double, std::uint32_t>> queue_;  // (estimated gain, class), a max-heap
};

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
    best = SharingPass(p, parents, full, clock).run(std::move(best), options_);
  best.seconds = clock.seconds();
  return best;
}

}  // namespace saturn

// The exact extractor: a 0-1 integer program solved by CBC.
//
//   minimize   sum cost(n) x(n)
//   subject to sum_{n in r} x(n) >= 1                for every root class r
//              sum_{m in k} x(m) - x(n) >= 0         for every node n and child class k
//              sum_{n in C} x(n) <= |C| - 1          for every cycle C found so far
//
// Before solving, the problem shrinks: classes the roots cannot reach go;
// "free" classes (a zero-cost node whose children are free) are decided up
// front and leave the program; a node is dropped when another node of its
// class costs no more and needs a subset of its children. Inside each
// strongly connected group of classes, order variables t forbid cycles:
//
//              t(a) - t(b) - M x(n) >= 1 - M         for n in a with child b in a's group
//
// and any cycle that still shows up (a safety net) gets a lazy cut
//              sum_{n in C} x(n) <= |C| - 1.
#include <algorithm>
#include <limits>

#include "Cbc_C_Interface.h"
#include "egraph/stopwatch.h"
#include "extract/extractor.h"
#include "fmt/format.h"

namespace saturn {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The classes reachable from the roots through any node.
std::vector<bool> reachable_classes(const ExtractionProblem& p) {
  std::vector<bool> seen(p.num_classes(), false);
  std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end());
  for (std::uint32_t r : p.roots) seen[r] = true;
  while (!stack.empty()) {
    std::uint32_t c = stack.back();
    stack.pop_back();
    for (std::uint32_t n = p.class_start[c]; n < p.class_start[c + 1]; ++n) {
      for (std::uint32_t k : p.children(n)) {
        if (!seen[k]) {
          seen[k] = true;
          stack.push_back(k);
        }
      }
    }
  }
  return seen;
}

// A cycle among the chosen nodes (edges: class of n -> each child class of
// a chosen n), as the list of nodes along it; empty if there is none.
std::vector<int> find_cycle(const ExtractionProblem& p, const std::vector<int>& column_of,
                            const double* x) {
  enum : std::uint8_t { kNew, kOpen, kDone };
  std::vector<std::uint8_t> state(p.num_classes(), kNew);
  struct Frame {
    std::uint32_t cls, node, child;
  };
  auto chosen = [&](std::uint32_t n) { return column_of[n] >= 0 && x[column_of[n]] > 0.5; };
  for (std::uint32_t start = 0; start < p.num_classes(); ++start) {
    if (state[start] != kNew) continue;
    std::vector<Frame> stack{{start, p.class_start[start], 0}};
    state[start] = kOpen;
    while (!stack.empty()) {
      Frame& f = stack.back();
      // Advance to the next (chosen node, child) edge of this class.
      while (f.node < p.class_start[f.cls + 1] &&
             (!chosen(f.node) || f.child >= p.children(f.node).size())) {
        ++f.node;
        f.child = 0;
      }
      if (f.node >= p.class_start[f.cls + 1]) {
        state[f.cls] = kDone;
        stack.pop_back();
        continue;
      }
      std::uint32_t k = p.children(f.node)[f.child++];
      if (state[k] == kOpen) {
        std::vector<int> cycle;
        for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
          cycle.push_back(static_cast<int>(it->node));
          if (it->cls == k) break;
        }
        return cycle;
      }
      if (state[k] == kNew) {
        state[k] = kOpen;
        stack.push_back({k, p.class_start[k], 0});
      }
    }
  }
  return {};
}

class CbcModel {
 public:
  CbcModel() : model_(Cbc_newModel()) {}
  ~CbcModel() { Cbc_deleteModel(model_); }
  CbcModel(const CbcModel&) = delete;
  CbcModel& operator=(const CbcModel&) = delete;
  Cbc_Model* get() const { return model_; }

 private:
  Cbc_Model* model_;
};

}  // namespace

namespace {

// Classes decided for free: a zero-cost node whose children are all free.
// Returns the chosen node per free class (-1 for the others).
std::vector<std::int32_t> free_classes(const ExtractionProblem& p) {
  std::vector<std::int32_t> choice(p.num_classes(), -1);
  for (double c : p.node_cost) {
    if (c < 0) return choice;  // the reduction assumes non-negative costs
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::uint32_t n = 0; n < p.num_nodes(); ++n) {
      std::uint32_t c = p.node_class[n];
      if (choice[c] >= 0 || p.node_cost[n] != 0) continue;
      bool ready = true;
      for (std::uint32_t k : p.children(n)) ready = ready && choice[k] >= 0;
      if (ready) {
        choice[c] = static_cast<std::int32_t>(n);
        changed = true;
      }
    }
  }
  return choice;
}

// Sorted, de-duplicated child classes of n that are not free.
std::vector<std::uint32_t> needed_children(const ExtractionProblem& p, std::uint32_t n,
                                           const std::vector<std::int32_t>& free) {
  std::vector<std::uint32_t> kids;
  for (std::uint32_t k : p.children(n)) {
    if (free[k] < 0) kids.push_back(k);
  }
  std::sort(kids.begin(), kids.end());
  kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
  return kids;
}

// Strongly connected components of the class graph given by `edges` (Tarjan,
// iterative). Returns the component of each class.
std::vector<int> components(std::size_t num_classes,
                            const std::vector<std::vector<std::uint32_t>>& edges) {
  std::vector<int> index(num_classes, -1), low(num_classes, 0), comp(num_classes, -1);
  std::vector<bool> on_stack(num_classes, false);
  std::vector<std::uint32_t> stack;
  int counter = 0, num_comps = 0;
  for (std::uint32_t root = 0; root < num_classes; ++root) {
    if (index[root] >= 0) continue;
    std::vector<std::pair<std::uint32_t, std::size_t>> work{{root, 0}};
    while (!work.empty()) {
      auto& [v, next] = work.back();
      if (next == 0) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
      }
      if (next < edges[v].size()) {
        std::uint32_t w = edges[v][next++];
        if (index[w] < 0) {
          work.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        std::uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = num_comps;
        } while (w != v);
        ++num_comps;
      }
      std::uint32_t done = v;
      work.pop_back();
      if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
    }
  }
  return comp;
}

// A 0-1 program built row by row, then loaded into CBC in column form.
class SparseModel {
 public:
  int add_column(double cost, double upper, bool integer) {
    cost_.push_back(cost);
    upper_.push_back(upper);
    integer_.push_back(integer);
    return static_cast<int>(cost_.size()) - 1;
  }
  void add_term(int column, double value) { terms_.push_back({column, value}); }
  void end_row(double lower, double upper) {
    row_start_.push_back(terms_.size());
    row_lower_.push_back(lower);
    row_upper_.push_back(upper);
  }
  void load(Cbc_Model* m) const {
    const int cols = static_cast<int>(cost_.size());
    std::vector<CoinBigIndex> start(cols + 1, 0);
    for (const auto& t : terms_) ++start[t.first + 1];
    for (int c = 0; c < cols; ++c) start[c + 1] += start[c];
    std::vector<int> rows(terms_.size());
    std::vector<double> values(terms_.size());
    std::vector<CoinBigIndex> fill(start.begin(), start.end() - 1);
    for (std::size_t r = 0; r + 1 < row_start_.size(); ++r) {
      for (std::size_t i = row_start_[r]; i < row_start_[r + 1]; ++i) {
        CoinBigIndex at = fill[terms_[i].first]++;
        rows[at] = static_cast<int>(r);
        values[at] = terms_[i].second;
      }
    }
    std::vector<double> lower(cols, 0.0);
    Cbc_loadProblem(m, cols, static_cast<int>(row_lower_.size()), start.data(), rows.data(),
                    values.data(), lower.data(), upper_.data(), cost_.data(), row_lower_.data(),
                    row_upper_.data());
    for (int c = 0; c < cols; ++c) {
      Cbc_setColName(m, c, fmt::format("c{}", c).c_str());  // MIP starts match columns by name
      if (integer_[c]) Cbc_setInteger(m, c);
    }
  }

 private:
  std::vector<double> cost_, upper_;
  std::vector<bool> integer_;
  std::vector<std::pair<int, double>> terms_;
  std::vector<std::size_t> row_start_{0};
  std::vector<double> row_lower_, row_upper_;
};

}  // namespace

ExtractionResult IlpExtractor::extract(const ExtractionProblem& p) const {
  const Stopwatch clock;
  auto elapsed = [&] { return clock.seconds(); };
  ExtractionResult warm = DagGreedyExtractor().extract(p);
  ExtractionResult result = warm;
  result.status = ExtractionStatus::kTimedOut;
  if (warm.status == ExtractionStatus::kNoSolution) {
    result.seconds = elapsed();
    return result;
  }

  // ---- Reduce ---------------------------------------------------------
  const std::vector<bool> reachable = reachable_classes(p);
  const std::vector<std::int32_t> free = free_classes(p);
  std::vector<int> column_of(p.num_nodes(), -1);
  std::vector<std::uint32_t> node_of;
  std::vector<std::vector<std::uint32_t>> kids_of;  // per column: needed child classes
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    if (!reachable[c] || free[c] >= 0) continue;
    std::vector<std::uint32_t> members;
    std::vector<std::vector<std::uint32_t>> member_kids;
    for (std::uint32_t n = p.class_start[c]; n < p.class_start[c + 1]; ++n) {
      std::vector<std::uint32_t> kids = needed_children(p, n, free);
      if (std::binary_search(kids.begin(), kids.end(), c)) continue;  // its own child
      members.push_back(n);
      member_kids.push_back(std::move(kids));
    }
    for (std::size_t i = 0; i < members.size(); ++i) {
      bool dominated = false;
      for (std::size_t j = 0; j < members.size() && !dominated && members.size() <= 64; ++j) {
        if (i == j) continue;
        double ci = p.node_cost[members[i]], cj = p.node_cost[members[j]];
        bool no_worse =
            cj < ci || (cj == ci && (member_kids[j].size() < member_kids[i].size() || j < i));
        dominated = no_worse && std::includes(member_kids[i].begin(), member_kids[i].end(),
                                              member_kids[j].begin(), member_kids[j].end());
      }
      if (dominated) continue;
      column_of[members[i]] = static_cast<int>(node_of.size());
      node_of.push_back(members[i]);
      kids_of.push_back(member_kids[i]);
    }
  }

  if (node_of.empty()) {  // every needed class is free
    result.selection = prune_to_roots(p, Selection{free});
    result.dag_cost = *check_selection(p, result.selection);
    result.tree_cost = tree_cost(p, result.selection);
    result.lower_bound = result.dag_cost;
    result.status = ExtractionStatus::kOptimal;
    result.seconds = elapsed();
    return result;
  }

  // ---- Build ----------------------------------------------------------
  // Rows are collected first and loaded at once (adding them one by one is
  // quadratic in CBC).
  SparseModel model;
  for (std::uint32_t n : node_of) model.add_column(p.node_cost[n], 1.0, true);
  auto add_class_sum = [&](std::uint32_t cls) {
    for (std::uint32_t n = p.class_start[cls]; n < p.class_start[cls + 1]; ++n) {
      if (column_of[n] >= 0) model.add_term(column_of[n], 1.0);
    }
  };
  for (std::uint32_t r : p.roots) {
    if (free[r] >= 0) continue;
    add_class_sum(r);
    model.end_row(1.0, kInfinity);
  }
  std::vector<std::vector<std::uint32_t>> edges(p.num_classes());
  for (std::size_t col = 0; col < node_of.size(); ++col) {
    for (std::uint32_t k : kids_of[col]) {
      add_class_sum(k);
      model.add_term(static_cast<int>(col), -1.0);
      model.end_row(0.0, kInfinity);
      edges[p.node_class[node_of[col]]].push_back(k);
    }
  }
  // Order variables for the classes of each cyclic group.
  std::vector<int> comp = components(p.num_classes(), edges);
  std::vector<int> comp_size(p.num_classes() + 1, 0);
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) ++comp_size[comp[c]];
  std::vector<int> order_col(p.num_classes(), -1);
  for (std::size_t col = 0; col < node_of.size(); ++col) {
    std::uint32_t a = p.node_class[node_of[col]];
    for (std::uint32_t b : kids_of[col]) {
      if (comp[a] != comp[b]) continue;
      const double big = comp_size[comp[a]];
      for (std::uint32_t c : {a, b}) {
        if (order_col[c] < 0) order_col[c] = model.add_column(0.0, big - 1, false);
      }
      model.add_term(order_col[a], 1.0);
      model.add_term(order_col[b], -1.0);
      model.add_term(static_cast<int>(col), -big);
      model.end_row(1.0 - big, kInfinity);
    }
  }
  CbcModel cbc;
  Cbc_Model* m = cbc.get();
  Cbc_setLogLevel(m, 0);
  model.load(m);
  std::vector<int> idx;
  std::vector<double> coef;

  // ---- Solve ----------------------------------------------------------
  // The warm start: the greedy answer, with order values from a topological
  // order of its classes.
  std::vector<int> start_cols;
  std::vector<double> start_vals;
  if (options_.warm_start) {
    for (std::size_t col = 0; col < node_of.size(); ++col) {
      std::uint32_t n = node_of[col];
      start_cols.push_back(static_cast<int>(col));
      start_vals.push_back(
          warm.selection.choice[p.node_class[n]] == static_cast<std::int32_t>(n) ? 1.0 : 0.0);
    }
    std::vector<double> depth(p.num_classes(), 0);
    Selection pruned = prune_to_roots(p, warm.selection);
    // Post-order walk: a class's depth exceeds its children's.
    std::vector<std::uint32_t> order;
    std::vector<std::uint8_t> seen(p.num_classes(), 0);
    for (std::uint32_t r : p.roots) {
      std::vector<std::pair<std::uint32_t, std::size_t>> stack{{r, 0}};
      if (seen[r]) continue;
      seen[r] = 1;
      while (!stack.empty()) {
        auto& [c, i] = stack.back();
        std::span<const std::uint32_t> kids =
            p.children(static_cast<std::uint32_t>(pruned.choice[c]));
        if (i < kids.size()) {
          std::uint32_t k = kids[i++];
          if (!seen[k]) {
            seen[k] = 1;
            stack.push_back({k, 0});
          }
          continue;
        }
        double d = 0;
        for (std::uint32_t k : kids) d = std::max(d, depth[k] + 1);
        depth[c] = d;
        stack.pop_back();
      }
    }
    for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
      if (order_col[c] < 0) continue;
      start_cols.push_back(order_col[c]);
      start_vals.push_back(std::min<double>(depth[c], comp_size[comp[c]] - 1));
    }
  }
  while (true) {
    double remaining = options_.time_limit_seconds - elapsed();
    if (remaining <= 0) break;
    Cbc_setMaximumSeconds(m, remaining);
    if (options_.warm_start)
      Cbc_setMIPStartI(m, static_cast<int>(start_cols.size()), start_cols.data(),
                       start_vals.data());
    Cbc_solve(m);
    const double* x = Cbc_getColSolution(m);
    bool has_solution = x != nullptr && Cbc_getObjValue(m) < 1e300 && !Cbc_isProvenInfeasible(m);
    if (!has_solution) break;
    std::vector<int> cycle = find_cycle(p, column_of, x);
    if (!cycle.empty()) {
      idx.clear();
      coef.clear();
      for (int n : cycle) {
        idx.push_back(column_of[n]);
        coef.push_back(1.0);
      }
      Cbc_addRow(m, "", static_cast<int>(idx.size()), idx.data(), coef.data(), 'L',
                 static_cast<double>(cycle.size()) - 1);
      ++result.cycle_cuts;
      continue;
    }
    Selection s{free};
    for (std::size_t col = 0; col < node_of.size(); ++col) {
      std::uint32_t n = node_of[col];
      std::uint32_t c = p.node_class[n];
      if (x[col] > 0.5 && (s.choice[c] < 0 || p.node_cost[n] < p.node_cost[s.choice[c]]))
        s.choice[c] = static_cast<std::int32_t>(n);
    }
    s = prune_to_roots(p, s);
    absl::StatusOr<double> cost = check_selection(p, s);
    bool optimal = Cbc_isProvenOptimal(m) != 0;
    result.lower_bound = optimal ? Cbc_getObjValue(m) : Cbc_getBestPossibleObjValue(m);
    if (cost.ok() && *cost <= warm.dag_cost) {
      result.selection = std::move(s);
      result.dag_cost = *cost;
      result.tree_cost = tree_cost(p, result.selection);
      result.status = optimal ? ExtractionStatus::kOptimal : ExtractionStatus::kFeasible;
    } else if (optimal) {
      result.status = ExtractionStatus::kOptimal;  // the warm start is as good
    }
    break;
  }
  result.seconds = elapsed();
  return result;
}

}  // namespace saturn

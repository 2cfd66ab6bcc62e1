#include "saturn/extract/ilp_program.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <span>

#include "Cbc_C_Interface.h"
#include "Clp_C_Interface.h"
#include "saturn/base/graph.h"
#include "saturn/extract/ilp_reductions.h"
#include "fmt/format.h"

namespace saturn::ilp_detail {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Steps (classes to test times columns and child edges) that the search for
// needed classes may take: about a second.
constexpr double kNeedWorkLimit = 1e9;

using Kids = std::vector<std::vector<std::uint32_t>>;  // per column: needed child classes

// The columns that surely lead back to a target class: those with a child
// that is the target, or a class (in the target's group) all of whose
// columns surely lead back. Once one node per class is chosen, a node of the
// target with child k cannot use such a column of k without closing a
// cycle, so its child row may leave them out: a much tighter row for the LP
// than the plain one, which lets a class be half-computed by a slice of a
// merged result that half-reads the class itself.
class ReturnPaths {
 public:
  ReturnPaths(const ExtractionProblem& p, const std::vector<std::uint32_t>& node_of,
              const ColumnIndex& columns, const std::vector<int>& comp)
      : p_(p),
        node_of_(node_of),
        columns_(columns),
        comp_(comp),
        left_(p.num_classes(), 0),
        left_stamp_(p.num_classes(), 0),
        mark_(node_of.size(), 0) {}

  bool leads_back(int col) const { return mark_[col] == generation_; }

  void trace(std::uint32_t target) {
    ++generation_;
    std::vector<std::uint32_t> queue{target};
    for (std::size_t i = 0; i < queue.size(); ++i) {
      for (int col : columns_.readers[queue[i]]) {
        const std::uint32_t c = p_.node_class[node_of_[col]];
        if (mark_[col] == generation_ || comp_[c] != comp_[target]) continue;
        mark_[col] = generation_;
        if (c == target) continue;
        if (left_stamp_[c] != generation_) {
          left_stamp_[c] = generation_;
          left_[c] = columns_.per_class[c];
        }
        if (--left_[c] == 0) queue.push_back(c);
      }
    }
  }

 private:
  const ExtractionProblem& p_;
  const std::vector<std::uint32_t>& node_of_;
  const ColumnIndex& columns_;
  const std::vector<int>& comp_;           // each class's strongly connected group
  std::vector<int> left_;                  // per class: columns not yet leading back
  std::vector<std::uint32_t> left_stamp_;  // generation in which left_ was set
  std::vector<std::uint32_t> mark_;        // per column: generation it was found to lead back
  std::uint32_t generation_ = 0;
};

// Cuts for the short cycles of classes inside each cyclic group. For a cycle
// a1 -> a2 -> ... -> ak -> a1, with y(a -> b) the sum of x over a's nodes
// that have child b and X(a) the sum over all of a's nodes, one row per j:
//
//              y(a1 -> a2) + ... + y(ak -> a1) <= sum_{i != j} X(ai)
//
// An acyclic selection with one node per class meets every such cut (the
// chosen classes of the cycle form paths, with fewer edges than classes;
// if aj is not chosen, neither edge at aj is), and any solution can drop to
// one node per class at no extra cost, so the optimum stays. The order rows
// alone let the LP break a cycle by choosing a node at 1/M; these cuts make
// it pay. They are stronger than the plain bound k - 1: on TENSAT's VGG the
// LP closed three-class Split/Concat round trips at one half each, which
// the plain bound (1.5 <= 2) allows and these (1.5 <= 1) do not. Written out,
// row j reads: aj's nodes that continue the cycle are at most the other
// classes' nodes that leave it. Enumerates simple cycles of at most
// `max_length` classes, each once (from its lowest class), and returns how
// many rows it added.
int add_short_cycle_cuts(const ExtractionProblem& p, const std::vector<int>& column_of,
                         const std::vector<std::uint32_t>& node_of, const Kids& kids_of,
                         const std::vector<int>& comp, int max_length, SparseModel& model) {
  constexpr int kMaxCuts = 200'000;
  if (max_length < 2) return 0;
  // Per class: (child class in the same group, column) pairs, sorted.
  std::vector<std::vector<std::pair<std::uint32_t, int>>> out(p.num_classes());
  for (std::size_t col = 0; col < node_of.size(); ++col) {
    std::uint32_t a = p.node_class[node_of[col]];
    for (std::uint32_t b : kids_of[col]) {
      if (comp[a] == comp[b]) out[a].push_back({b, static_cast<int>(col)});
    }
  }
  for (auto& edges : out) std::sort(edges.begin(), edges.end());
  int cuts = 0;
  std::vector<std::uint32_t> path;
  std::vector<bool> on_path(p.num_classes(), false);
  auto emit = [&] {
    const std::size_t k = path.size();
    for (std::size_t j = 0; j < k; ++j) {
      for (std::size_t i = 0; i < k; ++i) {
        const std::uint32_t a = path[i], b = path[(i + 1) % k];
        for (std::uint32_t n = p.class_start[a]; n < p.class_start[a + 1]; ++n) {
          const int col = column_of[n];
          if (col < 0) continue;
          const bool continues = std::binary_search(kids_of[col].begin(), kids_of[col].end(), b);
          if (i == j && continues) model.add_term(col, 1.0);
          if (i != j && !continues) model.add_term(col, -1.0);
        }
      }
      model.end_row(-kInfinity, 0.0);
      ++cuts;
    }
  };
  // Depth-first from `start` through classes above it; `a` ends the path.
  auto extend = [&](auto&& self, std::uint32_t start, std::uint32_t a) -> void {
    std::uint32_t previous = std::numeric_limits<std::uint32_t>::max();
    for (const auto& [b, col] : out[a]) {
      if (b == previous || cuts >= kMaxCuts) continue;
      previous = b;
      if (b == start) {
        if (path.size() >= 2) emit();
      } else if (b > start && !on_path[b] && static_cast<int>(path.size()) < max_length) {
        path.push_back(b);
        on_path[b] = true;
        self(self, start, b);
        on_path[b] = false;
        path.pop_back();
      }
    }
  };
  for (std::uint32_t start = 0; start < p.num_classes() && cuts < kMaxCuts; ++start) {
    if (out[start].empty()) continue;
    path.assign(1, start);
    on_path[start] = true;
    extend(extend, start, start);
    on_path[start] = false;
  }
  return cuts;
}

// Adds `value` x(n) for each column n of class `cls` to the row being built.
void add_class_sum(const ExtractionProblem& p, const std::vector<int>& column_of, std::uint32_t cls,
                   double value, SparseModel& model) {
  for (std::uint32_t n = p.class_start[cls]; n < p.class_start[cls + 1]; ++n) {
    if (column_of[n] >= 0) model.add_term(column_of[n], value);
  }
}

// Each class's strongly connected group in the graph of the columns' child
// edges; sets prog.group_size, the size of each class's group.
std::vector<int> class_groups(const ExtractionProblem& p, const Kids& kids_of, Program& prog) {
  std::vector<std::vector<std::uint32_t>> edges(p.num_classes());
  for (std::size_t col = 0; col < prog.node_of.size(); ++col) {
    for (std::uint32_t k : kids_of[col]) edges[p.node_class[prog.node_of[col]]].push_back(k);
  }
  std::vector<int> comp = strongly_connected_components(edges);
  std::vector<int> comp_size(p.num_classes() + 1, 0);
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) ++comp_size[comp[c]];
  prog.group_size.resize(p.num_classes());
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) prog.group_size[c] = comp_size[comp[c]];
  return comp;
}

// Child rows, one per class a and child class k: the nodes of a that read
// k are at most the nodes of k,
//
//              sum_{n in k} x(n) - sum_{n in a with child k} x(n) >= 0.
//
// One node per class is chosen in some optimal solution, so summing over
// a's readers is valid; it is much tighter for the LP than a row per node,
// which lets many fractional readers of k share one fraction of it. Inside
// a cyclic group, k counts only the nodes that do not surely lead back to
// a (see ReturnPaths).
void add_child_rows(const ExtractionProblem& p, const Kids& kids_of, const ColumnIndex& columns,
                    const std::vector<int>& comp, Program& prog) {
  const std::vector<int>& column_of = prog.column_of;
  SparseModel& model = prog.model;
  ReturnPaths back(p, prog.node_of, columns, comp);
  std::vector<std::pair<std::uint32_t, int>> reads;  // (child class, column) of one class
  for (std::uint32_t a = 0; a < p.num_classes(); ++a) {
    reads.clear();
    for (std::uint32_t n = p.class_start[a]; n < p.class_start[a + 1]; ++n) {
      if (column_of[n] < 0) continue;
      for (std::uint32_t k : kids_of[column_of[n]]) reads.push_back({k, column_of[n]});
    }
    if (reads.empty()) continue;
    std::sort(reads.begin(), reads.end());
    if (prog.group_size[a] > 1) back.trace(a);
    for (std::size_t i = 0; i < reads.size();) {
      const std::uint32_t k = reads[i].first;
      for (std::uint32_t n = p.class_start[k]; n < p.class_start[k + 1]; ++n) {
        int child = column_of[n];
        if (child >= 0 && !(comp[k] == comp[a] && back.leads_back(child)))
          model.add_term(child, 1.0);
      }
      for (; i < reads.size() && reads[i].first == k; ++i) model.add_term(reads[i].second, -1.0);
      model.end_row(0.0, kInfinity);
    }
  }
}

// Rows for the classes that every solution needs (mandatory_classes) and
// for the classes that another class needs (needed_classes).
void add_need_rows(const ExtractionProblem& p, const Kids& kids_of, const ColumnIndex& columns,
                   const Selection& known, Program& prog) {
  // Classes every solution needs get the row sum_{n in k} x(n) >= 1.
  for (std::uint32_t k : mandatory_classes(p, kids_of, columns, known)) {
    add_class_sum(p, prog.column_of, k, 1.0, prog.model);
    prog.model.end_row(1.0, kInfinity);
  }
  // A class needed by another is chosen at least as much:
  //
  //              sum_{n in d} x(n) - sum_{n in c} x(n) >= 0.
  for (auto [d, c] : needed_classes(p, kids_of, columns, kNeedWorkLimit)) {
    add_class_sum(p, prog.column_of, d, 1.0, prog.model);
    add_class_sum(p, prog.column_of, c, -1.0, prog.model);
    prog.model.end_row(0.0, kInfinity);
  }
}

// The chosen classes and their child edges form a graph in which every
// class is reached from a root (free classes, whose children are free, lie
// on no such path), so it has at least as many edges as classes, less one
// per root:
//
//              sum_n (children(n) - 1) x(n) >= -(roots)
//
// Without it the LP builds egg's sums of seven numbers from three
// additions where any selection needs six.
void add_edge_count_row(const ExtractionProblem& p, const Kids& kids_of, Program& prog) {
  int open_roots = 0;
  for (std::uint32_t r : p.roots) open_roots += prog.free[r] < 0;
  for (std::size_t col = 0; col < prog.node_of.size(); ++col) {
    const double edges_less_one = static_cast<double>(kids_of[col].size()) - 1.0;
    if (edges_less_one != 0) prog.model.add_term(static_cast<int>(col), edges_less_one);
  }
  prog.model.end_row(-static_cast<double>(open_roots), kInfinity);
}

// Order variables for the classes of each cyclic group (see the overview in
// ilp.cc): t(a) - t(b) - M x(n) >= 1 - M for n in a with child b in a's
// group, M the group's size.
void add_order_rows(const ExtractionProblem& p, const Kids& kids_of, const std::vector<int>& comp,
                    Program& prog) {
  SparseModel& model = prog.model;
  prog.order_col.assign(p.num_classes(), -1);
  for (std::size_t col = 0; col < prog.node_of.size(); ++col) {
    std::uint32_t a = p.node_class[prog.node_of[col]];
    for (std::uint32_t b : kids_of[col]) {
      if (comp[a] != comp[b]) continue;
      const double big = prog.group_size[a];
      for (std::uint32_t c : {a, b}) {
        if (prog.order_col[c] < 0) prog.order_col[c] = model.add_column(0.0, big - 1, false);
      }
      model.add_term(prog.order_col[a], 1.0);
      model.add_term(prog.order_col[b], -1.0);
      model.add_term(static_cast<int>(col), -big);
      model.end_row(1.0 - big, kInfinity);
    }
  }
}

}  // namespace

void SparseModel::load_program(Cbc_Model* m) const {
  const ColumnForm f = column_form();
  Cbc_loadProblem(m, num_columns(), f.num_rows, f.start.data(), f.rows.data(), f.values.data(),
                  f.lower.data(), upper_.data(), cost_.data(), row_lower_.data(),
                  row_upper_.data());
  for (int c = 0; c < num_columns(); ++c) {
    Cbc_setColName(m, c, fmt::format("c{}", c).c_str());  // MIP starts match columns by name
    if (integer_[c]) Cbc_setInteger(m, c);
  }
}

void SparseModel::load_relaxation(Clp_Simplex* m) const {
  const ColumnForm f = column_form();
  Clp_loadProblem(m, num_columns(), f.num_rows, f.start.data(), f.rows.data(), f.values.data(),
                  f.lower.data(), upper_.data(), cost_.data(), row_lower_.data(),
                  row_upper_.data());
}

SparseModel::ColumnForm SparseModel::column_form() const {
  const int cols = num_columns();
  ColumnForm f{static_cast<int>(row_lower_.size()), std::vector<CoinBigIndex>(cols + 1, 0),
               std::vector<int>(terms_.size()), std::vector<double>(terms_.size()),
               std::vector<double>(cols, 0.0)};
  for (const auto& t : terms_) ++f.start[t.first + 1];
  for (int c = 0; c < cols; ++c) f.start[c + 1] += f.start[c];
  std::vector<CoinBigIndex> fill(f.start.begin(), f.start.end() - 1);
  for (std::size_t r = 0; r + 1 < row_start_.size(); ++r) {
    for (std::size_t i = row_start_[r]; i < row_start_[r + 1]; ++i) {
      CoinBigIndex at = fill[terms_[i].first]++;
      f.rows[at] = static_cast<int>(r);
      f.values[at] = terms_[i].second;
    }
  }
  return f;
}

Program formulate(const ExtractionProblem& p, const Selection& known, int cycle_cut_length) {
  Program prog;
  // ---- Reduce ---------------------------------------------------------
  ReducedNodes reduced = reduce_nodes(p);
  prog.free = std::move(reduced.free);
  prog.never_needed = std::move(reduced.never_needed);
  prog.node_of = std::move(reduced.kept);
  const Kids kids_of = std::move(reduced.kids);
  prog.column_of.assign(p.num_nodes(), -1);
  for (std::size_t col = 0; col < prog.node_of.size(); ++col)
    prog.column_of[prog.node_of[col]] = static_cast<int>(col);
  if (prog.node_of.empty()) return prog;  // every needed class is free

  // ---- Build ----------------------------------------------------------
  // Rows are collected first and loaded at once (adding them one by one is
  // quadratic in CBC).
  for (std::uint32_t n : prog.node_of) prog.model.add_column(p.node_cost[n], 1.0, true);
  for (std::uint32_t r : p.roots) {
    if (prog.free[r] >= 0) continue;
    add_class_sum(p, prog.column_of, r, 1.0, prog.model);
    prog.model.end_row(1.0, kInfinity);
  }
  const std::vector<int> comp = class_groups(p, kids_of, prog);
  const ColumnIndex columns(p, prog.node_of, kids_of);
  add_child_rows(p, kids_of, columns, comp, prog);
  add_need_rows(p, kids_of, columns, known, prog);
  add_edge_count_row(p, kids_of, prog);
  add_order_rows(p, kids_of, comp, prog);
  prog.cycle_cuts = add_short_cycle_cuts(p, prog.column_of, prog.node_of, kids_of, comp,
                                         cycle_cut_length, prog.model);
  return prog;
}

void mip_start(const ExtractionProblem& p, const Program& prog, const Selection& selection,
               std::vector<int>& cols, std::vector<double>& vals) {
  for (std::size_t col = 0; col < prog.node_of.size(); ++col) {
    std::uint32_t n = prog.node_of[col];
    cols.push_back(static_cast<int>(col));
    vals.push_back(selection.choice[p.node_class[n]] == static_cast<std::int32_t>(n) ? 1.0 : 0.0);
  }
  // The chosen graph, walked in post-order: a class's depth exceeds its
  // children's.
  Selection pruned = prune_to_roots(p, selection);
  graph::Successors chosen(p.num_classes());
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    if (pruned.choice[c] < 0) continue;
    std::span<const std::uint32_t> kids = p.children(static_cast<std::uint32_t>(pruned.choice[c]));
    chosen[c].assign(kids.begin(), kids.end());
  }
  std::vector<double> depth(p.num_classes(), 0);
  for (std::uint32_t c : graph::postorder(chosen, p.roots)) {
    double d = 0;
    for (std::uint32_t k : chosen[c]) d = std::max(d, depth[k] + 1);
    depth[c] = d;
  }
  for (std::uint32_t c = 0; c < p.num_classes(); ++c) {
    if (prog.order_col[c] < 0) continue;
    cols.push_back(prog.order_col[c]);
    vals.push_back(std::min<double>(depth[c], prog.group_size[c] - 1));
  }
}

std::optional<Relaxation> solve_relaxation(const Program& prog, double seconds) {
  std::unique_ptr<Clp_Simplex, void (*)(Clp_Simplex*)> clp(Clp_newModel(), Clp_deleteModel);
  Clp_Simplex* m = clp.get();
  Clp_setLogLevel(m, 0);
  prog.model.load_relaxation(m);
  Clp_setMaximumSeconds(m, seconds);
  Clp_dual(m, 0);
  if (Clp_status(m) != 0 || !Clp_isProvenOptimal(m)) return std::nullopt;
  // For any feasible x, cost(x) = bound + sum_j d_j (x_j - x*_j) plus
  // non-negative row terms; at the optimum each term is non-negative except
  // for what the solver's tolerances leave, which is subtracted.
  const int cols = prog.model.num_columns();
  const double* d = Clp_getReducedCost(m);
  const double* x = Clp_getColSolution(m);
  const double* upper = Clp_getColUpper(m);
  double slack = 0;
  for (int j = 0; j < cols; ++j) slack += std::max(0.0, -d[j] * (x[j] > 0.5 * upper[j] ? -1 : 1));
  Relaxation r;
  r.bound = Clp_objectiveValue(m) - slack;
  for (std::size_t j = 0; j < prog.node_of.size(); ++j)
    r.bound_with.push_back(r.bound + std::max(0.0, d[j]) * (1.0 - x[j]));
  return r;
}

}  // namespace saturn::ilp_detail

// The 0-1 program of IlpExtractor (see the overview in ilp.cc): its rows,
// written for a reduced problem, CBC's MIP start, and the LP relaxation that
// reduced-cost fixing reads. Internal to extract/ (namespace
// saturn::ilp_detail).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "Coin_C_defines.h"
#include "saturn/extract/problem.h"

namespace saturn::ilp_detail {

// A 0-1 program built row by row, then loaded in column form into CBC (or,
// as its LP relaxation, into Clp).
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
  int num_columns() const { return static_cast<int>(cost_.size()); }

  // Loads the program into CBC, with its integer columns marked.
  void load_program(Cbc_Model* m) const;
  // Loads the LP relaxation into Clp.
  void load_relaxation(Clp_Simplex* m) const;

 private:
  struct ColumnForm {
    int num_rows;
    std::vector<CoinBigIndex> start;
    std::vector<int> rows;
    std::vector<double> values, lower;
  };
  ColumnForm column_form() const;

  std::vector<double> cost_, upper_;
  std::vector<bool> integer_;
  std::vector<std::pair<int, double>> terms_;
  std::vector<std::size_t> row_start_{0};
  std::vector<double> row_lower_, row_upper_;
};

// The 0-1 program of a problem, with the maps between its columns and the
// problem's nodes and classes. Columns 0 .. node_of.size() - 1 are nodes;
// the order columns follow.
struct Program {
  SparseModel model;
  std::vector<std::int32_t> free;      // per class: its node if decided up front, else -1
  std::vector<int> column_of;          // per node: its column, or -1 if reduced away
  std::vector<bool> never_needed;      // per node: dominated, its own child, or underivable
  std::vector<std::uint32_t> node_of;  // per node column: its node
  std::vector<int> order_col;          // per class: its order column, or -1
  std::vector<int> group_size;         // per class: classes in its strongly connected group
  int cycle_cuts = 0;                  // short-cycle rows
};

// Reduces the problem and writes its program. `known`, a valid selection,
// tells which classes may be mandatory.
Program formulate(const ExtractionProblem& p, const Selection& known, int cycle_cut_length);

// CBC's MIP start for a selection: its nodes, and order values from a
// topological order of its classes.
void mip_start(const ExtractionProblem& p, const Program& prog, const Selection& selection,
               std::vector<int>& cols, std::vector<double>& vals);

// The LP relaxation's optimum, and per node column a lower bound on the
// cost of any solution of the program that chooses it.
struct Relaxation {
  double bound = 0;
  std::vector<double> bound_with;
};

// Solves the relaxation with Clp's dual simplex (its presolve crashed on a
// SqueezeNet e-graph, see ilp.cc); nothing if it is not proven in time.
std::optional<Relaxation> solve_relaxation(const Program& prog, double seconds);

}  // namespace saturn::ilp_detail

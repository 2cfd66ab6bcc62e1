// Extractors: hand-made e-graphs where tree and DAG optima differ, where
// greedy misses the optimum, and with cycles; the checker; every
// extraction-gym file; and an extracted tensor graph that runs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <random>

#include "saturn/base/status.h"
#include "saturn/extract/derivation_search.h"
#include "saturn/extract/extractor.h"
#include "saturn/tensor/analysis.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/interpreter/interpreter.h"

namespace saturn {
namespace {

// A problem from a list of (class, cost, child classes), classes numbered
// from 0 in order of first appearance.
struct HandNode {
  std::uint32_t eclass;
  double cost;
  std::vector<std::uint32_t> children;
};

ExtractionProblem make_problem(std::vector<HandNode> nodes, std::vector<std::uint32_t> roots) {
  SerializedEGraph s;
  for (const HandNode& n : nodes) {
    if (n.eclass >= s.class_nodes.size()) {
      s.class_nodes.resize(n.eclass + 1);
      s.class_names.resize(n.eclass + 1);
    }
    s.class_nodes[n.eclass].push_back(static_cast<std::uint32_t>(s.nodes.size()));
    s.nodes.push_back({std::to_string(s.nodes.size()), "op", n.children, n.eclass, n.cost});
  }
  s.roots = std::move(roots);
  return problem_from_serialized(s);
}

std::vector<const Extractor*> all_extractors() {
  static const TreeExtractor tree;
  static const DagGreedyExtractor greedy;
  static const IlpExtractor ilp(IlpOptions{.time_limit_seconds = 20});
  return {&tree, &greedy, &ilp};
}

TEST(Extract, TreeAndDagOptimaDiffer) {
  // Root 0: f(A, A) pays A once as a DAG (1 + 10) but twice as a tree (21);
  // g(B, C) costs 13 either way.
  ExtractionProblem p =
      make_problem({{0, 1, {1, 1}}, {0, 1, {2, 3}}, {1, 10, {}}, {2, 6, {}}, {3, 6, {}}}, {0});
  ExtractionResult tree = TreeExtractor().extract(p);
  EXPECT_DOUBLE_EQ(tree.tree_cost, 13);
  EXPECT_DOUBLE_EQ(tree.dag_cost, 13);
  for (const Extractor* e :
       {static_cast<const Extractor*>(all_extractors()[1]), all_extractors()[2]}) {
    ExtractionResult r = e->extract(p);
    EXPECT_DOUBLE_EQ(r.dag_cost, 11) << e->name();
    EXPECT_DOUBLE_EQ(r.tree_cost, 21) << e->name();
  }
  EXPECT_EQ(IlpExtractor().extract(p).status, ExtractionStatus::kOptimal);
}

// The greedy pass alone costs `unshared`; its sharing improvement and the
// ILP (proven) find `shared`.
void expect_sharing_found(const ExtractionProblem& p, double unshared, double shared) {
  EXPECT_DOUBLE_EQ(DagGreedyExtractor(DagGreedyOptions{.sharing_trials = 0}).extract(p).dag_cost,
                   unshared);
  ExtractionResult greedy = DagGreedyExtractor().extract(p);
  EXPECT_DOUBLE_EQ(greedy.dag_cost, shared);
  EXPECT_TRUE(check_selection(p, greedy.selection).ok());
  ExtractionResult ilp = IlpExtractor().extract(p);
  EXPECT_EQ(ilp.status, ExtractionStatus::kOptimal);
  EXPECT_DOUBLE_EQ(ilp.dag_cost, shared);
}

TEST(Extract, SharingThatTheGreedyPassMissesIsFound) {
  // Two roots can each be a leaf of cost 4, or f(S) / g(S) of cost 1 over a
  // shared S of cost 4: separately the leaves look cheaper (4 < 5), together
  // the shared form costs 6 < 8 (the shape of a merged Q/K/V projection).
  ExtractionProblem p =
      make_problem({{0, 1, {2}}, {0, 4, {}}, {1, 1, {2}}, {1, 4, {}}, {2, 4, {}}}, {0, 1});
  expect_sharing_found(p, 8, 6);
}

TEST(Extract, SharingThroughFreeSplitsIsFound) {
  // Roots Q1..Q4 (classes 0-3) are leaves of cost 4 each. Pair merges P12
  // and P34 (cost 7) serve two roots each; a four-way merge M (cost 13)
  // serves all four through two free half-splits H1 and H2, so none of the
  // roots reads it directly. Pairs give 14, the four-way merge 13.
  ExtractionProblem p = make_problem({{0, 4, {}},
                                      {0, 0, {4}},
                                      {0, 0, {6}},
                                      {1, 4, {}},
                                      {1, 0, {4}},
                                      {1, 0, {6}},
                                      {2, 4, {}},
                                      {2, 0, {5}},
                                      {2, 0, {7}},
                                      {3, 4, {}},
                                      {3, 0, {5}},
                                      {3, 0, {7}},
                                      {4, 7, {}},
                                      {5, 7, {}},
                                      {6, 0, {8}},
                                      {7, 0, {8}},
                                      {8, 13, {}}},
                                     {0, 1, 2, 3});
  expect_sharing_found(p, 16, 13);
}

TEST(Extract, SharingTrialsFollowTheirEstimatesAndPatience) {
  // Roots A, B, C are leaves of cost 4 each; each could instead read shared
  // classes through a node of cost 1.
  //   X (cost 100) could serve all three: estimated 3 * 3 - 100 < 0, never tried.
  //   Y (cost 1) could serve all three, but each reader also needs W, a free
  //     node over Z (cost 10), which the estimate does not see two levels
  //     down: estimated 3 * 3 - 1 = 8, the first trial, fruitless.
  //   S (cost 4) serves A and B: estimated 3 + 3 - 4 = 2, and it pays:
  //     1 + 1 + 4 + 4 = 10 < 12.
  ExtractionProblem p = make_problem({{0, 4, {}},
                                      {0, 1, {3}},
                                      {0, 1, {4, 7}},
                                      {0, 1, {5}},
                                      {1, 4, {}},
                                      {1, 1, {3}},
                                      {1, 1, {4, 7}},
                                      {1, 1, {5}},
                                      {2, 4, {}},
                                      {2, 1, {3}},
                                      {2, 1, {4, 7}},
                                      {3, 100, {}},
                                      {4, 1, {}},
                                      {5, 4, {}},
                                      {6, 10, {}},
                                      {7, 0, {6}}},
                                     {0, 1, 2});
  EXPECT_DOUBLE_EQ(DagGreedyExtractor().extract(p).dag_cost, 10);
  EXPECT_DOUBLE_EQ(DagGreedyExtractor(DagGreedyOptions{.sharing_patience = 1}).extract(p).dag_cost,
                   12);
  EXPECT_DOUBLE_EQ(DagGreedyExtractor(DagGreedyOptions{.sharing_patience = 0}).extract(p).dag_cost,
                   10);
  EXPECT_DOUBLE_EQ(DagGreedyExtractor(DagGreedyOptions{.sharing_trials = 0}).extract(p).dag_cost,
                   12);
}

TEST(Extract, CyclesAreAvoided) {
  // A = f(B) | 10, B = g(A) | 5 | h(B): only f(B) with B = 5 is acyclic and cheap.
  ExtractionProblem p =
      make_problem({{0, 1, {1}}, {0, 10, {}}, {1, 1, {0}}, {1, 5, {}}, {1, 0, {1}}}, {0});
  for (const Extractor* e : all_extractors()) {
    ExtractionResult r = e->extract(p);
    absl::StatusOr<double> cost = check_selection(p, r.selection);
    ASSERT_TRUE(cost.ok()) << e->name() << ": " << message(cost.status());
    EXPECT_DOUBLE_EQ(*cost, 6) << e->name();
  }
  // A cycle the ILP must cut: zero-cost nodes that feed each other.
  ExtractionProblem q =
      make_problem({{0, 0, {1}}, {0, 3, {}}, {1, 0, {0}}, {1, 3, {}}, {2, 1, {0, 1}}}, {2});
  ExtractionResult r = IlpExtractor().extract(q);
  EXPECT_TRUE(check_selection(q, r.selection).ok());
  EXPECT_DOUBLE_EQ(r.dag_cost, 4);
  EXPECT_EQ(r.status, ExtractionStatus::kOptimal);
}

// A random e-graph: `classes` classes of 1-3 nodes, each costing below
// `max_cost` with 0-2 random children, so that cycles and shared classes
// occur. Class 0 is the root; the last class always has a leaf (costing
// max_cost), so usually something is feasible.
ExtractionProblem random_problem(std::mt19937& rng, std::uint32_t classes, unsigned max_cost) {
  std::vector<HandNode> nodes;
  for (std::uint32_t c = 0; c < classes; ++c) {
    const int count = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < count; ++i) {
      HandNode n{c, static_cast<double>(rng() % max_cost), {}};
      const int kids = static_cast<int>(rng() % 3);
      for (int k = 0; k < kids; ++k) n.children.push_back(rng() % classes);
      nodes.push_back(n);
    }
  }
  nodes.push_back({classes - 1, static_cast<double>(max_cost + 1), {}});
  return make_problem(nodes, {0});
}

// The DAG greedy pass keeps its sub-DAGs as bitsets on small problems and as
// sorted lists on larger ones: padding a problem with unreachable leaf
// classes past the bitsets' limit must not change what it chooses.
TEST(Extract, DagGreedyChoosesAlikeOnSmallAndLargeProblems) {
  std::mt19937 rng(11);
  const DagGreedyExtractor greedy;
  for (int round = 0; round < 40; ++round) {
    const auto classes = static_cast<std::uint32_t>(10 + rng() % 50);
    const ExtractionProblem small = random_problem(rng, classes, 20);
    std::vector<HandNode> nodes;
    for (std::uint32_t n = 0; n < small.num_nodes(); ++n) {
      std::span<const std::uint32_t> kids = small.children(n);
      nodes.push_back({small.node_class[n], small.node_cost[n], {kids.begin(), kids.end()}});
    }
    for (std::uint32_t c = classes; c < classes + 2000; ++c) nodes.push_back({c, 1.0, {}});
    const ExtractionProblem large = make_problem(nodes, small.roots);
    const ExtractionResult a = greedy.extract(small);
    const ExtractionResult b = greedy.extract(large);
    ASSERT_EQ(a.status, b.status) << "round " << round;
    if (a.status == ExtractionStatus::kNoSolution) continue;
    EXPECT_EQ(a.dag_cost, b.dag_cost) << "round " << round;
    for (std::uint32_t c = 0; c < classes; ++c)
      EXPECT_EQ(a.selection.choice[c], b.selection.choice[c]) << "round " << round << " class " << c;
  }
}

// The derivation search over every node of `p`, nothing decided up front
// and no cost ignored.
std::optional<DerivationBound> search_all(const ExtractionProblem& p) {
  return derivation_search(p, std::vector<std::int32_t>(p.num_classes(), -1),
                           std::vector<bool>(p.num_nodes(), true), {.seconds = 10});
}

// Expects the search to bound `p` at `optimum` with a selection of that cost.
void expect_search_reaches(const ExtractionProblem& p, const DerivationBound& searched,
                           double optimum, const std::string& where) {
  EXPECT_NEAR(searched.lower_bound, optimum, 1e-9) << where;
  absl::StatusOr<double> cost = check_selection(p, prune_to_roots(p, searched.selection));
  ASSERT_TRUE(cost.ok()) << where << ": " << message(cost.status());
  EXPECT_NEAR(*cost, optimum, 1e-9) << where;
}

TEST(Extract, IlpMatchesExhaustiveSearchOnRandomEGraphs) {
  // Small random e-graphs, cycles and shared classes included: every
  // selection is enumerated, and the ILP must prove the same optimum (its
  // reductions and extra rows may only drop solutions that are no better),
  // as must the derivation search.
  std::mt19937 rng(7);
  int with_cycles = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const std::uint32_t classes = 3 + rng() % 5;
    ExtractionProblem p = random_problem(rng, classes, 4);
    double best = std::numeric_limits<double>::infinity();
    Selection s{std::vector<std::int32_t>(classes, 0)};
    std::vector<std::uint32_t> pick(classes, 0);
    while (true) {
      for (std::uint32_t c = 0; c < classes; ++c)
        s.choice[c] = static_cast<std::int32_t>(p.class_start[c] + pick[c]);
      absl::StatusOr<double> cost = check_selection(p, s);
      if (cost.ok()) best = std::min(best, *cost);
      if (!cost.ok() && message(cost.status()).find("cycle") != std::string::npos) ++with_cycles;
      std::uint32_t c = 0;
      while (c < classes && ++pick[c] == p.class_start[c + 1] - p.class_start[c]) pick[c++] = 0;
      if (c == classes) break;
    }
    ExtractionResult ilp = IlpExtractor().extract(p);
    std::optional<DerivationBound> searched = search_all(p);
    if (std::isinf(best)) {
      EXPECT_EQ(ilp.status, ExtractionStatus::kNoSolution) << "trial " << trial;
      EXPECT_FALSE(searched.has_value()) << "trial " << trial;
      continue;
    }
    ASSERT_TRUE(searched.has_value()) << "trial " << trial;
    expect_search_reaches(p, *searched, best, "trial " + std::to_string(trial));
    EXPECT_EQ(ilp.status, ExtractionStatus::kOptimal) << "trial " << trial;
    EXPECT_DOUBLE_EQ(ilp.dag_cost, best) << "trial " << trial;
    EXPECT_TRUE(check_selection(p, ilp.selection).ok()) << "trial " << trial;
  }
  EXPECT_GT(with_cycles, 0);  // the generator does make cyclic choices
}

TEST(Extract, ReducedCostFixingKeepsTheOptimum) {
  // Random e-graphs too large to enumerate: the ILP that drops nodes by
  // reduced cost and formulates again must prove the same optimum as the
  // one that does not.
  std::mt19937 rng(11);
  int compared = 0, fixed = 0;
  for (int trial = 0; trial < 300; ++trial) {
    ExtractionProblem p = random_problem(rng, 10 + rng() % 30, 10);
    ExtractionResult with = IlpExtractor().extract(p);
    ExtractionResult without = IlpExtractor(IlpOptions{.reduced_cost_rounds = 0}).extract(p);
    ASSERT_EQ(with.status == ExtractionStatus::kNoSolution,
              without.status == ExtractionStatus::kNoSolution)
        << "trial " << trial;
    if (with.status == ExtractionStatus::kNoSolution) continue;
    EXPECT_TRUE(check_selection(p, with.selection).ok()) << "trial " << trial;
    ASSERT_EQ(with.status, ExtractionStatus::kOptimal) << "trial " << trial;
    ASSERT_EQ(without.status, ExtractionStatus::kOptimal) << "trial " << trial;
    EXPECT_NEAR(with.dag_cost, without.dag_cost, 1e-9) << "trial " << trial;
    fixed += with.fixed_nodes;
    ++compared;
  }
  EXPECT_GT(compared, 100);
  EXPECT_GT(fixed, 0);  // the rounds did drop nodes
}

TEST(Extract, DerivationSearchMatchesTheIlp) {
  // Random e-graphs too large to enumerate, cycles included: the search's
  // bound is the ILP's proven optimum, and its selection costs that much.
  std::mt19937 rng(13);
  int compared = 0, split = 0;
  for (int trial = 0; trial < 150; ++trial) {
    ExtractionProblem p = random_problem(rng, 10 + rng() % 20, 10);
    ExtractionResult ilp = IlpExtractor().extract(p);
    if (ilp.status == ExtractionStatus::kNoSolution) continue;
    ASSERT_EQ(ilp.status, ExtractionStatus::kOptimal) << "trial " << trial;
    std::optional<DerivationBound> searched = search_all(p);
    ASSERT_TRUE(searched.has_value()) << "trial " << trial;
    expect_search_reaches(p, *searched, ilp.dag_cost, "trial " + std::to_string(trial));
    split += searched->parts > 1;
    ++compared;
  }
  EXPECT_GT(compared, 100);
  EXPECT_GT(split, 0);  // some problems did split at separators
}

TEST(Extract, SearchWithinItsResolutionEndsFeasibleOrOptimal) {
  // Random cyclic e-graphs whose node costs are whole numbers or tiny ones
  // (1e-4 to 5e-4) that a search at resolution 1e-3 leaves out: where its
  // bound comes that close, the extractor stops there with the cheaper of
  // the search's selection and the warm start, as feasible (or optimal),
  // and the optimum (CBC alone) lies within the bound. (The case where the
  // search's selection is dearer than the warm start has its own test
  // below; these problems only tie with it.)
  std::mt19937 rng(17);
  const IlpExtractor coarse(IlpOptions{.time_limit_seconds = 20,
                                       .search_resolution = 1e-3,
                                       .search_min_gap = 0});
  int stopped_by_search = 0, warm_start_kept = 0;
  for (int trial = 0; trial < 300; ++trial) {
    ExtractionProblem p = random_problem(rng, 10 + rng() % 20, 10);
    for (double& cost : p.node_cost) {
      if (rng() % 3 == 0) cost = 1e-4 + 1e-7 * static_cast<double>(rng() % 4000);
    }
    const ExtractionResult greedy = DagGreedyExtractor().extract(p);
    const ExtractionResult result = coarse.extract(p);
    if (greedy.status == ExtractionStatus::kNoSolution) continue;
    const std::string where = "trial " + std::to_string(trial);
    ASSERT_TRUE(result.status == ExtractionStatus::kOptimal ||
                result.status == ExtractionStatus::kFeasible)
        << where << ": " << to_string(result.status);
    absl::StatusOr<double> cost = check_selection(p, result.selection);
    ASSERT_TRUE(cost.ok()) << where;
    EXPECT_NEAR(*cost, result.dag_cost, 1e-9) << where;
    EXPECT_LE(result.dag_cost, greedy.dag_cost + 1e-9) << where;
    EXPECT_LE(result.lower_bound, result.dag_cost + 1e-9) << where;
    if (result.status == ExtractionStatus::kFeasible) {
      const ExtractionResult exact = IlpExtractor(IlpOptions{.search_share = 0}).extract(p);
      ASSERT_EQ(exact.status, ExtractionStatus::kOptimal) << where;
      EXPECT_LE(result.lower_bound, exact.dag_cost + 1e-9) << where;
      EXPECT_LE(result.dag_cost - result.lower_bound, 1e-3 * result.dag_cost + 1e-9) << where;
      ++stopped_by_search;
      warm_start_kept += std::abs(result.dag_cost - greedy.dag_cost) < 1e-12;
    }
  }
  EXPECT_GT(stopped_by_search, 0);
  EXPECT_GT(warm_start_kept, 0);  // some ended at the warm start's cost
}

TEST(Extract, SearchWithinItsResolutionKeepsACheaperWarmStartAsFeasible) {
  // The root reads class 1 (a, 10) or class 2 (b, 9.9999); their leaves
  // cost 1e-4 and 5e-4, below what the search at resolution 1e-3 counts,
  // and a zero-cost cycle through class 1 leaves the LP short. The search
  // takes b (9.9999 as it sees it), the warm start a (10.0001 against
  // 10.0004): the warm start stays, with the search's bound, and the
  // result is feasible, not timed out.
  const ExtractionProblem p = make_problem({{0, 10, {1}},
                                            {0, 9.9999, {2}},
                                            {1, 1e-4, {}},
                                            {1, 0, {3}},
                                            {2, 5e-4, {}},
                                            {3, 0, {1}}},
                                           {0});
  const ExtractionResult result =
      IlpExtractor(IlpOptions{.time_limit_seconds = 20,
                              .cycle_cut_length = 0,
                              .reduced_cost_rounds = 0,
                              .search_resolution = 1e-3,
                              .search_min_gap = 0})
          .extract(p);
  EXPECT_EQ(result.status, ExtractionStatus::kFeasible) << to_string(result.status);
  EXPECT_NEAR(result.dag_cost, 10.0001, 1e-9);
  EXPECT_NEAR(result.lower_bound, 9.9999, 1e-9);
  EXPECT_GT(result.search_states, 0u);
}

TEST(Extract, DerivationSearchSplitsAChainAtItsLayers) {
  // Eight layers, each a class with a cheap and a dear node reading the
  // layer below and a shared weight W; a zero-cost node makes W's class
  // free, so every layer is a separator. Each layer also forms a zero-cost
  // cycle with a class of its own (layer = f(S), S = g(layer)), as
  // Split/Concat round trips do, which must not derive the layer for free.
  std::vector<HandNode> nodes{{0, 0, {}}, {1, 1, {}}};  // W (free), the input
  const std::uint32_t layers = 8;
  for (std::uint32_t i = 0; i < layers; ++i) {
    const std::uint32_t own = 2 + 2 * i, loop = own + 1, below = i == 0 ? 1 : own - 2;
    nodes.push_back({own, 3, {below, 0}});
    nodes.push_back({own, 5, {below}});
    nodes.push_back({own, 0, {loop}});
    nodes.push_back({loop, 0, {own}});
  }
  ExtractionProblem p = make_problem(nodes, {2 * layers});
  std::vector<std::int32_t> free(p.num_classes(), -1);
  free[0] = 0;
  std::optional<DerivationBound> searched =
      derivation_search(p, free, std::vector<bool>(p.num_nodes(), true), {});
  ASSERT_TRUE(searched.has_value());
  expect_search_reaches(p, *searched, 1 + 3 * layers, "chain");
  EXPECT_GE(searched->parts, static_cast<int>(layers));
  // Costs below ignore_below count as zero: the bound drops, still valid.
  std::optional<DerivationBound> coarse =
      derivation_search(p, free, std::vector<bool>(p.num_nodes(), true), {.ignore_below = 2});
  ASSERT_TRUE(coarse.has_value());
  EXPECT_DOUBLE_EQ(coarse->lower_bound, 3 * layers);
}

TEST(Extract, SliceOfAMergeThatReadsItselfIsNotCounted) {
  // A and B (roots) are matmuls of cost 5, or slices of S = split(K); K is
  // concat(A, B) (free, but it reads A and B back: a cycle) or the merged
  // matmul of cost 8. Only the merged form shares: 8 < 10.
  ExtractionProblem p = make_problem(
      {{0, 5, {}}, {0, 0, {2}}, {1, 5, {}}, {1, 0, {2}}, {2, 0, {3}}, {3, 0, {0, 1}}, {3, 8, {}}},
      {0, 1});
  for (const Extractor* e :
       {static_cast<const Extractor*>(all_extractors()[1]), all_extractors()[2]}) {
    ExtractionResult r = e->extract(p);
    EXPECT_TRUE(check_selection(p, r.selection).ok()) << e->name();
    EXPECT_DOUBLE_EQ(r.dag_cost, 8) << e->name();
  }
  EXPECT_EQ(IlpExtractor().extract(p).status, ExtractionStatus::kOptimal);
}

TEST(Extract, CheckerRejectsBadSelections) {
  ExtractionProblem p = make_problem({{0, 1, {1}}, {1, 1, {0}}, {1, 2, {}}}, {0});
  auto error = [&](std::vector<std::int32_t> choice) {
    absl::StatusOr<double> c = check_selection(p, Selection{std::move(choice)});
    return c.ok() ? std::string("ok") : std::string(message(c.status()));
  };
  EXPECT_EQ(error({0, 2}), "ok");
  EXPECT_NE(error({-1, 2}).find("class 0 is needed but has no chosen node"), std::string::npos);
  EXPECT_NE(error({0, -1}).find("class 1 is needed"), std::string::npos);
  EXPECT_NE(error({0, 1}).find("cycle"), std::string::npos);
  EXPECT_NE(error({2, 2}).find("another class"), std::string::npos);
  EXPECT_NE(error({0}).find("covers 1 classes"), std::string::npos);
  EXPECT_EQ(tree_cost(p, Selection{{0, 1}}), std::numeric_limits<double>::infinity());
}

TEST(Extract, CountsClassesOnCycles) {
  // 0 -> 1 -> 2 -> 1 (a cycle through another node of class 1), 3 reads itself.
  ExtractionProblem p = make_problem(
      {{0, 1, {1}}, {1, 1, {2}}, {1, 1, {}}, {2, 1, {1}}, {3, 1, {3}}, {3, 1, {0}}}, {3});
  EXPECT_EQ(classes_on_cycles(p), 3u);
  EXPECT_EQ(classes_on_cycles(make_problem({{0, 1, {1, 2}}, {1, 1, {2}}, {2, 1, {}}}, {0})), 0u);
}

std::vector<std::filesystem::path> gym_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(SATURN_TEST_DATA "/extraction-gym")) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Extract, IlpSurvivesShortTimeLimits) {
  // CBC's preprocessing crashed when a 10-50 ms limit fell inside it. At any
  // limit the answer is valid and no worse than the greedy warm start.
  std::vector<std::filesystem::path> files = gym_files();
  std::erase_if(files, [](const auto& f) { return f.parent_path().filename() != "egg"; });
  ASSERT_FALSE(files.empty());
  for (double limit : {0.001, 0.01, 0.05}) {
    for (const auto& file : files) {
      absl::StatusOr<SerializedEGraph> s = read_serialized(file.string());
      ASSERT_TRUE(s.ok()) << message(s.status());
      ExtractionProblem p = problem_from_serialized(*s);
      ExtractionResult ilp = IlpExtractor(IlpOptions{.time_limit_seconds = limit}).extract(p);
      absl::StatusOr<double> cost = check_selection(p, ilp.selection);
      ASSERT_TRUE(cost.ok()) << file << " at " << limit << " s";
      EXPECT_LE(*cost, DagGreedyExtractor().extract(p).dag_cost + 1e-9) << file;
    }
  }
}

TEST(Extract, EveryExtractionGymFile) {
  std::vector<std::filesystem::path> files = gym_files();
  ASSERT_EQ(files.size(), 33u);
  for (const auto& file : files) {
    absl::StatusOr<SerializedEGraph> s = read_serialized(file.string());
    ASSERT_TRUE(s.ok()) << message(s.status());
    ExtractionProblem p = problem_from_serialized(*s);
    ExtractionResult tree = TreeExtractor().extract(p);
    ExtractionResult greedy = DagGreedyExtractor().extract(p);
    for (const ExtractionResult* r : {&tree, &greedy}) {
      absl::StatusOr<double> cost = check_selection(p, r->selection);
      ASSERT_TRUE(cost.ok()) << file << ": " << message(cost.status());
      EXPECT_DOUBLE_EQ(*cost, r->dag_cost);
    }
    EXPECT_LE(greedy.dag_cost, tree.dag_cost) << file;
    // The ILP proves every optimum (BERT's in seconds) except on TENSAT's
    // cyclic VGG, where the LP derives convolutions from each other through
    // Split/Concat round trips; there the derivation search bounds the
    // optimum to within its resolution (0.01%). That search takes about 13 s
    // on a 2-core machine, close to its default share of the limit (a
    // quarter), so it gets most of the time here: a slow machine must not
    // fail the test.
    const bool provable = file.filename() != "vgg.json";
    ExtractionResult ilp =
        IlpExtractor(IlpOptions{.time_limit_seconds = 120, .search_share = 0.9}).extract(p);
    ASSERT_TRUE(check_selection(p, ilp.selection).ok()) << file;
    if (provable) {
      EXPECT_EQ(ilp.status, ExtractionStatus::kOptimal) << file;
    } else {
      EXPECT_GT(ilp.search_parts, 1) << file << ": the bound comes from the derivation search";
    }
    EXPECT_LE(ilp.dag_cost, greedy.dag_cost + 1e-9) << file;
    EXPECT_LE(ilp.lower_bound, ilp.dag_cost + 1e-9) << file;
    EXPECT_GE(ilp.lower_bound, greedy.dag_cost * 0.99)
        << file << ": greedy not shown within 1% of the optimum";
  }
}

TEST(Extract, ExtractedTensorGraphRuns) {
  using namespace tensor;
  GraphBuilder b("mlp");
  Value x = b.input("x", {2, 4});
  Value h = b.relu(b.linear("fc1", x, 8));
  b.output(b.linear("fc2", h, 3), "y");
  Graph g = *b.build();
  TensorLanguage lang;
  TensorAnalysis shapes;
  EGraph egraph(lang, &shapes);
  std::vector<Id> ids = *add_graph(egraph, g);
  Id root = ids[g.outputs[0].node];
  ExtractionProblem p = problem_from_egraph(egraph, std::span<const Id>(&root, 1),
                                            [](Id, const ENode&) { return 1.0; });
  ExtractionResult r = DagGreedyExtractor().extract(p);
  ASSERT_TRUE(check_selection(p, r.selection).ok());
  std::vector<ClassOutput> outputs{{root, "y"}};
  absl::StatusOr<Graph> back =
      graph_from_egraph(egraph, g, outputs, chosen_enodes(egraph, p, r.selection));
  ASSERT_TRUE(back.ok()) << message(back.status());
  EXPECT_EQ(op_counts(*back), op_counts(g));
  Inputs in = random_inputs(g, 5);
  EXPECT_LE(max_error_ratio((*evaluate(g, in))[0], (*evaluate(*back, in))[0], 1e-6, 1e-6), 1.0);
}

}  // namespace
}  // namespace saturn

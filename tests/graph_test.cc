// Graph algorithm tests: strongly connected components and their numbering,
// dominators, cycles, post-orders and topological orders.
#include "saturn/base/graph.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace saturn::graph {
namespace {

// Each vertex's position in `order` (kNoVertex if absent).
std::vector<std::uint32_t> positions(const std::vector<std::uint32_t>& order, std::size_t n) {
  std::vector<std::uint32_t> at(n, kNoVertex);
  for (std::uint32_t i = 0; i < order.size(); ++i) at[order[i]] = i;
  return at;
}

TEST(Graph, StrongComponentsInReverseTopologicalOrder) {
  // Two cycles, 0 <-> 1 and 2 <-> 3, then 4; 5 stands alone.
  const Successors succ = {{1}, {0, 2}, {3}, {2, 4}, {}, {}};
  const Components c = strong_components(succ);
  EXPECT_EQ(c.count, 4u);
  ASSERT_EQ(c.component.size(), succ.size());
  // Tarjan's completion order from vertex 0: {4}, {2, 3}, {0, 1}, then {5}.
  EXPECT_EQ(c.component, (std::vector<std::uint32_t>{2, 2, 1, 1, 0, 3}));
  for (std::uint32_t v = 0; v < succ.size(); ++v) {
    for (std::uint32_t w : succ[v]) EXPECT_LE(c.component[w], c.component[v]);
  }
}

TEST(Graph, StrongComponentsOfEmptyAndSelfLoop) {
  EXPECT_EQ(strong_components({}).count, 0u);
  const Components c = strong_components({{0}, {0}});
  EXPECT_EQ(c.count, 2u);
  EXPECT_EQ(c.component, (std::vector<std::uint32_t>{0, 1}));
}

TEST(Graph, DominatorsOfADiamond) {
  // 0 -> {1, 2} -> 3 -> 4; 5 is not reached, and its edge into 4 does not
  // count.
  const Successors succ = {{1, 2}, {3}, {3}, {4}, {}, {4}};
  EXPECT_EQ(immediate_dominators(succ, 0),
            (std::vector<std::uint32_t>{kNoVertex, 0, 0, 0, 3, kNoVertex}));
}

TEST(Graph, DominatorsWithACycle) {
  // 0 -> 1 -> 2 -> 1, 2 -> 3, and a way round 1: 0 -> 3.
  const Successors succ = {{1, 3}, {2}, {1, 3}, {}};
  EXPECT_EQ(immediate_dominators(succ, 0), (std::vector<std::uint32_t>{kNoVertex, 0, 1, 0}));
}

TEST(Graph, FindsACycle) {
  // 3 -> 0 -> 1 -> 2 -> 0 and 2 -> 4: the cycle from the vertex reached again.
  const Successors succ = {{1}, {2}, {4, 0}, {0}, {}};
  EXPECT_EQ(find_cycle(succ), (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(find_cycle({{}, {1}}), (std::vector<std::uint32_t>{1}));  // a self-loop
}

TEST(Graph, FindsNoCycleInADag) {
  const Successors succ = {{1, 2}, {3}, {3}, {}};
  EXPECT_TRUE(find_cycle(succ).empty());
  EXPECT_TRUE(find_cycle({}).empty());
}

TEST(Graph, DepthFirstStopsAtTheFirstCycle) {
  // From 0: 3 finishes, then 1 -> 2 -> 1 closes a cycle; 4 is never reached.
  const Successors succ = {{3, 1}, {2}, {1, 4}, {}, {}};
  const std::vector<std::uint32_t> starts = {0};
  const DepthFirst walk = depth_first(succ, starts);
  EXPECT_EQ(walk.postorder, (std::vector<std::uint32_t>{3}));
  EXPECT_EQ(walk.cycle, (std::vector<std::uint32_t>{1, 2}));
  // postorder passes the cycle over and reaches everything.
  EXPECT_EQ(postorder(succ, starts), (std::vector<std::uint32_t>{3, 4, 2, 1, 0}));
}

TEST(Graph, DepthFirstFromSeveralStarts) {
  // Starts in order, each skipped once reached.
  const Successors succ = {{}, {0}, {1}, {}};
  const std::vector<std::uint32_t> starts = {1, 2, 1, 3};
  const DepthFirst walk = depth_first(succ, starts);
  EXPECT_TRUE(walk.cycle.empty());
  EXPECT_EQ(walk.postorder, (std::vector<std::uint32_t>{0, 1, 2, 3}));
}

TEST(Graph, TopologicalOrder) {
  const Successors succ = {{1, 2}, {3}, {3}, {}, {0}};
  const std::optional<std::vector<std::uint32_t>> order = topological_order(succ);
  ASSERT_TRUE(order.has_value());
  ASSERT_EQ(order->size(), succ.size());
  const std::vector<std::uint32_t> at = positions(*order, succ.size());
  for (std::uint32_t v = 0; v < succ.size(); ++v) {
    ASSERT_NE(at[v], kNoVertex) << v;
    for (std::uint32_t w : succ[v]) EXPECT_LT(at[v], at[w]) << v << " -> " << w;
  }
  EXPECT_FALSE(topological_order({{1}, {2}, {0}}).has_value());
  EXPECT_FALSE(topological_order({{0}}).has_value());
}

}  // namespace
}  // namespace saturn::graph

// Graph algorithms on plain directed graphs: vertices 0 .. n-1, each with
// its list of successors; results are plain vectors.
//
//   graph::Successors succ = {{1}, {2}, {0, 3}, {}};
//   graph::Components c = graph::strong_components(succ);  // {3} is 0, {0, 1, 2} is 1
//   std::vector<std::uint32_t> cycle = graph::find_cycle(succ);  // {0, 1, 2}
//
// Strongly connected components come from Boost.Graph
// (boost::strong_components, Tarjan's algorithm on Boost's non-recursive
// depth-first search): copying the lists into a boost::adjacency_list costs
// a few lines, Tarjan's bookkeeping written out cost forty lines in each of
// two places. The rest is this module's own code, on one shared iterative
// depth-first search: Boost's depth_first_search can stop at a cycle only by
// throwing from a visitor and reports a back edge rather than the cycle, and
// boost::lengauer_tarjan_dominator_tree needs in-edges (a bidirectional copy)
// and recurses in its path compression as deep as the graph is long, which
// on a 100,000-vertex chain could overflow the stack; the dominators here
// are Cooper, Harvey and Kennedy's iterative algorithm. Every search here
// keeps its own stack, so no depth of graph recurses. Boost.Graph is
// included only in graph.cc.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"

namespace saturn::graph {

// succ[v] lists the vertices v points to, in the order searches follow
// them; repeats are allowed. Every successor is below succ.size().
using Successors = std::vector<std::vector<std::uint32_t>>;

inline constexpr std::uint32_t kNoVertex = std::numeric_limits<std::uint32_t>::max();

struct Components {
  std::vector<std::uint32_t> component;  // per vertex: its component
  std::uint32_t count = 0;
};

// The strongly connected components, numbered in reverse topological order
// (an edge leads to a component of equal or lower number): the order in
// which Tarjan's algorithm completes them when it starts from vertices 0,
// 1, ... in turn and follows successors in list order.
Components strong_components(const Successors& succ);

// Depth-first search from `starts` in order (skipping vertices already
// reached), following successors in list order.
struct DepthFirst {
  std::vector<std::uint32_t> postorder;  // vertices in the order they were finished
  // The first cycle met: the path from the vertex reached again (front) to
  // the vertex whose edge reached it (back). Empty if there is none.
  std::vector<std::uint32_t> cycle;
};
// Stops at the first edge back to a vertex still open: `cycle` then holds
// the cycle it closes and `postorder` the vertices finished before.
DepthFirst depth_first(const Successors& succ, std::span<const std::uint32_t> starts);
// The same over a graph held in another form (an e-graph's chosen nodes, say):
// vertices 0 .. num_vertices-1, `successors(v)` listing v's.
using SuccessorsOf = absl::FunctionRef<std::span<const std::uint32_t>(std::uint32_t)>;
DepthFirst depth_first(std::size_t num_vertices, SuccessorsOf successors,
                       std::span<const std::uint32_t> starts);
// Every vertex reached from `starts`, in the order finished; edges back to
// open vertices are passed over.
std::vector<std::uint32_t> postorder(const Successors& succ, std::span<const std::uint32_t> starts);

// A cycle of the graph (as depth_first from every vertex in turn finds it),
// or empty if the graph is acyclic.
std::vector<std::uint32_t> find_cycle(const Successors& succ);
// Every vertex, each before its successors; nothing if the graph has a
// cycle.
std::optional<std::vector<std::uint32_t>> topological_order(const Successors& succ);

// The immediate dominator of each vertex reached from `entry`: the last
// vertex other than itself on every path from `entry` to it. kNoVertex for
// `entry` itself and for the vertices it does not reach.
std::vector<std::uint32_t> immediate_dominators(const Successors& succ, std::uint32_t entry);

}  // namespace saturn::graph

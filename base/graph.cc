#include "saturn/base/graph.h"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>

#include "boost/graph/compressed_sparse_row_graph.hpp"
#include "boost/graph/strong_components.hpp"

namespace saturn::graph {

namespace {

// The shared depth-first search: from `starts` in order (skipping vertices
// already reached), successors in list order, on an explicit stack. With
// `stop_at_cycle`, stops at the first edge back to an open vertex and
// records the cycle; otherwise passes such edges over.
DepthFirst search(std::size_t num_vertices, SuccessorsOf successors,
                  std::span<const std::uint32_t> starts, bool stop_at_cycle) {
  enum : std::uint8_t { kNew, kOpen, kDone };
  std::vector<std::uint8_t> state(num_vertices, kNew);
  struct Frame {
    std::uint32_t vertex;
    std::span<const std::uint32_t> rest;  // successors not yet followed
  };
  std::vector<Frame> stack;
  DepthFirst walk;
  auto open = [&](std::uint32_t v) {
    state[v] = kOpen;
    stack.push_back({v, successors(v)});
  };
  for (std::uint32_t start : starts) {
    if (state[start] != kNew) continue;
    open(start);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.rest.empty()) {
        state[top.vertex] = kDone;
        walk.postorder.push_back(top.vertex);
        stack.pop_back();
        continue;
      }
      const std::uint32_t w = top.rest.front();
      top.rest = top.rest.subspan(1);
      if (state[w] == kNew) {
        open(w);
      } else if (state[w] == kOpen && stop_at_cycle) {
        // The open vertices are those on the stack, w among them.
        auto from = std::find_if(stack.begin(), stack.end(),
                                 [w](const Frame& frame) { return frame.vertex == w; });
        for (; from != stack.end(); ++from) walk.cycle.push_back(from->vertex);
        return walk;
      }
    }
  }
  return walk;
}

DepthFirst search(const Successors& succ, std::span<const std::uint32_t> starts,
                  bool stop_at_cycle) {
  return search(
      succ.size(), [&](std::uint32_t v) { return std::span<const std::uint32_t>(succ[v]); },
      starts, stop_at_cycle);
}

std::vector<std::uint32_t> all_vertices(const Successors& succ) {
  std::vector<std::uint32_t> vertices(succ.size());
  std::iota(vertices.begin(), vertices.end(), 0u);
  return vertices;
}

}  // namespace

Components strong_components(const Successors& succ) {
  // A compressed sparse row graph: two arrays, where an adjacency list
  // allocates per vertex. Edges given sorted by source keep their order.
  using BoostGraph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property,
                                                        boost::no_property, boost::no_property,
                                                        std::uint32_t, std::uint32_t>;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::size_t v = 0; v < succ.size(); ++v) {
    for (std::uint32_t w : succ[v]) edges.emplace_back(static_cast<std::uint32_t>(v), w);
  }
  const BoostGraph g(boost::edges_are_sorted, edges.begin(), edges.end(),
                     static_cast<std::uint32_t>(succ.size()));
  Components c;
  c.component.resize(succ.size());
  const auto index = boost::get(boost::vertex_index, g);
  c.count =
      boost::strong_components(g, boost::make_iterator_property_map(c.component.begin(), index));
  return c;
}

DepthFirst depth_first(const Successors& succ, std::span<const std::uint32_t> starts) {
  return search(succ, starts, /*stop_at_cycle=*/true);
}

DepthFirst depth_first(std::size_t num_vertices, SuccessorsOf successors,
                       std::span<const std::uint32_t> starts) {
  return search(num_vertices, successors, starts, /*stop_at_cycle=*/true);
}

std::vector<std::uint32_t> postorder(const Successors& succ,
                                     std::span<const std::uint32_t> starts) {
  return search(succ, starts, /*stop_at_cycle=*/false).postorder;
}

std::vector<std::uint32_t> find_cycle(const Successors& succ) {
  return search(succ, all_vertices(succ), /*stop_at_cycle=*/true).cycle;
}

std::optional<std::vector<std::uint32_t>> topological_order(const Successors& succ) {
  DepthFirst walk = search(succ, all_vertices(succ), /*stop_at_cycle=*/true);
  if (!walk.cycle.empty()) return std::nullopt;
  // A vertex finishes after everything it reaches.
  std::reverse(walk.postorder.begin(), walk.postorder.end());
  return std::move(walk.postorder);
}

std::vector<std::uint32_t> immediate_dominators(const Successors& succ, std::uint32_t entry) {
  // After Cooper, Harvey and Kennedy, "A Simple, Fast Dominance Algorithm"
  // (2001): refine each vertex's dominator, in reverse postorder, to the
  // common dominator of its processed predecessors until nothing changes.
  const std::size_t n = succ.size();
  const std::vector<std::uint32_t> order =
      postorder(succ, std::span<const std::uint32_t>(&entry, 1));
  std::vector<std::uint32_t> post_number(n, kNoVertex);
  for (std::size_t i = 0; i < order.size(); ++i)
    post_number[order[i]] = static_cast<std::uint32_t>(i);
  std::vector<std::vector<std::uint32_t>> preds(n);
  for (std::uint32_t v = 0; v < n; ++v) {
    for (std::uint32_t w : succ[v]) preds[w].push_back(v);
  }
  std::vector<std::uint32_t> idom(n, kNoVertex);
  idom[entry] = entry;
  auto intersect = [&](std::uint32_t a, std::uint32_t b) {
    while (a != b) {
      while (post_number[a] < post_number[b]) a = idom[a];
      while (post_number[b] < post_number[a]) b = idom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto v = order.rbegin(); v != order.rend(); ++v) {
      if (*v == entry) continue;
      std::uint32_t best = kNoVertex;
      for (std::uint32_t u : preds[*v]) {
        if (idom[u] == kNoVertex) continue;
        best = best == kNoVertex ? u : intersect(u, best);
      }
      if (idom[*v] != best) {
        idom[*v] = best;
        changed = true;
      }
    }
  }
  idom[entry] = kNoVertex;
  return idom;
}

}  // namespace saturn::graph

// Regions: a large graph cut into runs of operators that are optimized one
// at a time and stitched back, so that a search's cost follows the region
// and not the model, and repeated blocks (a transformer's layers) are
// searched once.
//
//   absl::StatusOr<std::vector<Region>> regions = split_into_regions(g, {});
//   std::vector<const Graph*> results;             // one graph per region, each
//   for (const Region& r : *regions)               // with r.graph's interface
//     results.push_back(&r.graph);
//   absl::StatusOr<Graph> same = stitch_regions(g, *regions, results);
//
// Every operator that does work at run time belongs to exactly one region.
// Leaves (inputs, weights, constants) and weight-only operators (computed
// once at load time) belong to none: each region holds its own copy of those
// it reads, so that the rules that look for weights still see them, and
// stitching merges the copies again.
//
// A cut is sought once a region holds `target_ops` operators, at a place
// where a single value crosses (between a transformer's or a ResNet's
// blocks): one where the operators that follow open like the region's own
// first ones (so that regions repeat with the blocks they hold), else the
// first such place; failing both within `max_ops`, the narrowest place.
// Rewrites that would span a cut are what regions cost: a region never sees
// the operators across its boundary.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/tensor/graph.h"

namespace saturn::tensor {

struct RegionOptions {
  int target_ops = 64;  // operators before a cut is sought; 0: one region
  int max_ops = 160;    // a cut is made by here, at the narrowest place
};

struct Region {
  // The region as a graph of its own, named canonically so that two copies
  // of one block are equal graphs: inputs in0, in1, ... (values from outside,
  // in the order the region first reads them), weights w0, w1, ... (the
  // same), outputs out0, out1, ... (values read after the region, or graph
  // outputs, in the order they are computed). Node names are dropped.
  Graph graph;
  std::vector<int> inputs;           // the node of `graph`'s input in<k>
  std::vector<std::string> weights;  // the weight name behind w<k>
  std::vector<int> outputs;          // the node of `graph`'s output out<k>
  // Regions with equal keys have equal graphs (up to their weights' values):
  // a result found for one is a result for every copy.
  std::string key;
  int ops = 0;         // operators that do work
  int cut_values = 0;  // values that cross the cut after this region
};

// Cuts `graph` (which must type-check) into regions, in the graph's order;
// one region when the graph has no more than `max_ops` operators or
// `target_ops` is 0.
absl::StatusOr<std::vector<Region>> split_into_regions(const Graph& graph,
                                                       const RegionOptions& options);

// `graph` with each region replaced by `results[i]`: a graph with the
// interface of `regions[i].graph` (its inputs, weights and outputs by their
// canonical names). Weight-only values that several regions computed are
// computed once. The graph's inputs keep their order.
absl::StatusOr<Graph> stitch_regions(const Graph& graph, std::span<const Region> regions,
                                     std::span<const Graph* const> results);

}  // namespace saturn::tensor

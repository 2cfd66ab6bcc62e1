// The reference interpreter: runs a Graph on given inputs. It is the ground
// truth for rule verification and for checking that an optimized graph
// computes what the original did.
//
//   Inputs in = random_inputs(graph, /*seed=*/1);
//   absl::StatusOr<std::vector<Tensor>> out = evaluate(graph, in);  // per graph output
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/tensor.h"

namespace saturn::tensor {

using Inputs = absl::flat_hash_map<std::string, Tensor>;

// The graph outputs' values, in `graph.outputs` order. Every Input node must
// have a tensor of its type in `inputs`. Intermediate values are freed after
// their last use.
absl::StatusOr<std::vector<Tensor>> evaluate(const Graph& graph, const Inputs& inputs);

// Seeded random values for every graph input: floats uniform in [-1, 1);
// int64 inputs used as Gather indices stay inside the gathered axis,
// other int64 inputs fall in [0, 10). An input the graph knows the value of
// at its given sizes (Graph::size_values: a region's input that a shape
// computation outside it gives) takes that value.
Inputs random_inputs(const Graph& graph, std::uint64_t seed);

}  // namespace saturn::tensor

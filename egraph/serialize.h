// E-graphs as files: the egraph-serialize JSON format that extraction-gym
// uses, and Graphviz DOT.
//
//   SerializedEGraph s = serialize(egraph, roots, [](const ENode&) { return 1.0; });
//   std::string json = to_json(s);
//   absl::StatusOr<SerializedEGraph> back = read_serialized("bert.json");
//   std::string dot = to_dot(egraph, roots);
//
// JSON shape: {"nodes": {ID: {"op", "children": [ID...], "eclass", "cost"}},
// "root_eclasses": [CLASS...]}; a child is a node id standing for its class.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "saturn/egraph/egraph.h"

namespace saturn {

// An e-graph as plain data, independent of any language: what extractors
// read and what files hold. Classes and nodes are numbered densely.
struct SerializedEGraph {
  struct Node {
    std::string name;  // the node id in the file
    std::string op;
    std::vector<std::uint32_t> children;  // child classes
    std::uint32_t eclass = 0;
    double cost = 1.0;
  };
  std::vector<Node> nodes;
  std::vector<std::string> class_names;
  std::vector<std::vector<std::uint32_t>> class_nodes;  // nodes of each class
  std::vector<std::uint32_t> roots;                     // root classes
};

// Parses egraph-serialize JSON; errors name `source_name` and the node.
absl::StatusOr<SerializedEGraph> parse_serialized(std::string_view json,
                                                  std::string_view source_name);
absl::StatusOr<SerializedEGraph> read_serialized(const std::string& path);
std::string to_json(const SerializedEGraph& egraph);

// Serializes the (rebuilt) e-graph; `cost` gives each node's cost.
SerializedEGraph serialize(const EGraph& egraph, std::span<const Id> roots,
                           const std::function<double(const ENode&)>& cost);
// Adds a serialized e-graph's classes to `egraph` (node labels are read as
// operators of its language) and returns the ids of its root classes.
absl::StatusOr<std::vector<Id>> add_serialized(EGraph& egraph, const SerializedEGraph& s,
                                               std::string_view source_name);

// Graphviz DOT: one cluster per class, edges from nodes to child classes.
std::string to_dot(const EGraph& egraph, std::span<const Id> roots = {});

}  // namespace saturn

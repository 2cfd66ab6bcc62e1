// Cutting a graph into regions and stitching the regions' results back.
// See regions.h.
#include "saturn/optimize/regions.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "saturn/tensor/probe.h"

namespace saturn::tensor {

namespace {

// A node's identity for merging copies: operator, attributes, operands.
std::string node_key(const Node& n) {
  return fmt::format("{} {} [{}]", op_name(n.op), n.attributes.to_string(), fmt::join(n.inputs, ","));
}

// Where the cuts go: the graph's work operators (neither leaves nor
// weight-only) in order, and what crosses the place after each of them.
struct CutPlaces {
  std::vector<int> work;            // node indices
  std::vector<int> position;        // each node's place in `work`, or -1
  // Values crossing after work[p], and of those the ones that cannot be a
  // region's input (see can_be_input).
  std::vector<int> values, blocked;
};

// A region input is a tensor of a known element type and shape: a tuple, or
// what an opaque operator left unknown (ONNX shape arithmetic whose sizes
// depend on the data), never crosses a cut.
bool can_be_input(const ValueType& t) {
  if (t.is_tuple) return false;
  const TensorType& tensor = t.tensor();
  return tensor.dtype != DType::kOther &&
         std::none_of(tensor.dims.begin(), tensor.dims.end(),
                      [](std::int64_t d) { return d < 0; });
}

CutPlaces cut_places(const Graph& graph, const std::vector<ValueType>& types) {
  const std::vector<bool> weight_only = weight_only_nodes(graph);
  const std::vector<bool> live = live_nodes(graph);
  CutPlaces c;
  c.position.assign(graph.nodes.size(), -1);
  // A work operator computed from weights only (a QuantizeLinear of a
  // constant, a DequantizeLinear of that: never computed ahead) takes its
  // place just before its earliest reader rather than where the file put
  // it, so that it falls in its reader's region: a rule that matches the
  // two together (quantization.rules) cannot see across a cut. A chain of
  // them (a product's bias dequantized, passed through an Identity and
  // quantized again as an activation, as quantize_static spells
  // TorchScript's biases) moves as a whole, each operator before the
  // earliest reader of any that read it.
  std::vector<bool> from_weights(graph.nodes.size(), false);
  for (int i = 0; i < graph.size(); ++i) {
    const std::vector<int>& in = graph.nodes[i].inputs;
    from_weights[i] = live[i] && !weight_only[i] && graph.nodes[i].op != Op::kInput &&
                      !in.empty() &&
                      std::all_of(in.begin(), in.end(),
                                  [&](int x) { return weight_only[x] || from_weights[x]; });
  }
  // Each node's place in the work order, doubled: 2 i + 1 where the file
  // put it, or (for one computed from weights) 2 r for its earliest reader
  // r past the chain, so that it sorts before that reader and, by index,
  // after its own inputs.
  std::vector<std::vector<int>> readers(graph.nodes.size());
  for (int r = 0; r < graph.size(); ++r)
    for (int in : graph.nodes[r].inputs) readers[in].push_back(r);
  std::vector<int> place(graph.nodes.size());
  for (int i = graph.size() - 1; i >= 0; --i) {
    place[i] = 2 * i + 1;
    if (!from_weights[i] || readers[i].empty()) continue;
    place[i] = std::numeric_limits<int>::max();
    for (int r : readers[i]) place[i] = std::min(place[i], from_weights[r] ? place[r] : 2 * r);
  }
  std::vector<std::pair<int, int>> order;  // (place, node), sorted: the work order
  for (int i = 0; i < graph.size(); ++i) {
    if (!live[i] || weight_only[i] || graph.nodes[i].op == Op::kInput) continue;
    order.emplace_back(place[i], i);
  }
  std::sort(order.begin(), order.end());
  for (const auto& [at, i] : order) {
    c.position[i] = static_cast<int>(c.work.size());
    c.work.push_back(i);
  }
  std::vector<int> last_use(graph.nodes.size(), -1);
  for (int p = 0; p < static_cast<int>(c.work.size()); ++p) {
    for (int in : graph.nodes[c.work[p]].inputs) last_use[in] = std::max(last_use[in], p);
  }
  // Each value crosses every place from its own to its last reader's.
  std::vector<int> values(c.work.size() + 1, 0), blocked(c.work.size() + 1, 0);
  for (int p = 0; p < static_cast<int>(c.work.size()); ++p) {
    const int v = c.work[p];
    if (last_use[v] <= p) continue;
    ++values[p];
    --values[last_use[v]];
    if (!can_be_input(types[v])) {
      ++blocked[p];
      --blocked[last_use[v]];
    }
  }
  c.values.resize(c.work.size());
  c.blocked.resize(c.work.size());
  for (std::size_t p = 0, v = 0, t = 0; p < c.work.size(); ++p) {
    c.values[p] = static_cast<int>(v += values[p]);
    c.blocked[p] = static_cast<int>(t += blocked[p]);
  }
  return c;
}

// What starts at work position `begin`: the next operators with their
// attributes, and each operand as a distance back (within the window) or as
// a value from before it. Two places with the same opening start the same
// kind of block.
std::string opening(const Graph& graph, const std::vector<ValueType>& types, const CutPlaces& c,
                    int begin) {
  constexpr int kWindow = 16;
  std::string s;
  const int end = std::min<int>(static_cast<int>(c.work.size()), begin + kWindow);
  for (int p = begin; p < end; ++p) {
    const Node& n = graph.nodes[c.work[p]];
    s += fmt::format("{}{}(", op_name(n.op), n.attributes.to_string());
    for (int in : n.inputs) {
      const int q = c.position[in];
      if (q >= begin && q < p) {
        s += fmt::format("-{} ", p - q);
      } else {
        const ValueType& t = types[in];
        s += fmt::format("{}[{}] ", op_name(graph.nodes[in].op),
                         t.is_tuple ? std::string("tuple") : fmt::format("{}", fmt::join(t.parts[0].dims, ",")));
      }
    }
    s += ")";
  }
  return s;
}

// The end (one past the last work position) of the region that starts at
// `begin`. Only values that can be a region's input cross a cut. Of the
// places where a single value crosses, one that opens like `begin` comes
// first, so that regions repeat with the blocks they hold.
int region_end(const Graph& graph, const std::vector<ValueType>& types, const CutPlaces& c,
               int begin, const RegionOptions& options) {
  const int n = static_cast<int>(c.work.size());
  if (n - begin <= options.max_ops) return n;
  const std::string start = opening(graph, types, c, begin);
  int single = -1, narrowest = -1;
  for (int p = begin + options.target_ops - 1; p < n - 1; ++p) {
    if (c.blocked[p] > 0) continue;
    if (c.values[p] <= 1) {
      if (opening(graph, types, c, p + 1) == start) return p + 1;
      if (single < 0) single = p;
    }
    if (narrowest < 0 || c.values[p] < c.values[narrowest]) narrowest = p;
    if (p >= begin + options.max_ops - 1) break;
  }
  if (single >= 0) return single + 1;
  return narrowest < 0 ? n : narrowest + 1;
}

// Builds the region of work positions [begin, end).
class RegionBuilder {
 public:
  RegionBuilder(const Graph& graph, const std::vector<ValueType>& types, const CutPlaces& c)
      : graph_(graph), types_(types), places_(c) {
    if (!graph.symbols.empty()) {
      probe_ = probe_types(graph, types);
      probe_sizes_ = probe_sizes(graph.symbols);
    }
  }

  Region build(int index, int begin, int end) {
    region_ = Region{};
    local_.clear();
    Graph& g = region_.graph;
    g.name = fmt::format("{}.region{}", graph_.name, index);
    g.opsets = graph_.opsets;
    g.skip_normalizations_at_load = graph_.skip_normalizations_at_load;
    g.symbols.sizes = graph_.symbols.sizes;
    for (int p = begin; p < end; ++p) {
      const Node& n = graph_.nodes[places_.work[p]];
      Node copy{n.op, n.attributes, {}, ""};
      for (int in : n.inputs) copy.inputs.push_back(value(in, begin));
      local_[places_.work[p]] = add(std::move(copy));
    }
    std::vector<bool> graph_output(graph_.nodes.size(), false);
    for (const GraphOutput& o : graph_.outputs) graph_output[o.node] = true;
    std::vector<bool> read_later(graph_.nodes.size(), false);
    for (int p = end; p < static_cast<int>(places_.work.size()); ++p) {
      for (int in : graph_.nodes[places_.work[p]].inputs) read_later[in] = true;
    }
    for (int p = begin; p < end; ++p) {
      const int v = places_.work[p];
      if (!graph_output[v] && !read_later[v]) continue;
      g.outputs.push_back({local_[v], fmt::format("out{}", region_.outputs.size())});
      region_.outputs.push_back(v);
    }
    region_.ops = end - begin;
    region_.cut_values = end < static_cast<int>(places_.work.size()) ? places_.values[end - 1] : 0;
    region_.key = structural_key(g);
    return std::move(region_);
  }

 private:
  int add(Node node) {
    region_.graph.nodes.push_back(std::move(node));
    return region_.graph.size() - 1;
  }

  // The region's node for the graph's node `v`, read by an operator of the
  // region that starts at work position `begin`.
  int value(int v, int begin) {
    if (auto it = local_.find(v); it != local_.end()) return it->second;
    const Node& n = graph_.nodes[v];
    int id;
    if (n.op == Op::kInput || places_.position[v] >= 0) {
      // A value from before the region (the graph's inputs included).
      const std::string name = fmt::format("in{}", region_.inputs.size());
      region_.inputs.push_back(v);
      if (auto known = graph_.size_values.find(n.name);
          !n.name.empty() && known != graph_.size_values.end())
        region_.graph.size_values[name] = known->second;
      const TensorType& type = types_[v].tensor();
      id = add(Node{Op::kInput, leaf_attributes(name, type.dims, type.dtype), {}, name});
      if (!probe_.empty()) symbolic_axes(name, v);
    } else if (n.op == Op::kWeight) {
      const std::string& original = *n.attributes.get_string("name");
      const std::string name = fmt::format("w{}", region_.weights.size());
      region_.weights.push_back(original);
      auto init = graph_.weights.find(original);
      // A weight without an entry has values seeded by its name.
      region_.graph.weights[name] = init != graph_.weights.end()
                                        ? init->second
                                        : WeightInit{nullptr, stable_hash(original), -0.1f, 0.1f};
      Node weight{Op::kWeight, n.attributes, {}, name};
      weight.attributes.set("name", name);
      id = add(std::move(weight));
    } else {
      // A constant or a weight-only operator: the region computes its own.
      Node copy{n.op, n.attributes, {}, ""};
      for (int in : n.inputs) copy.inputs.push_back(value(in, begin));
      id = add(std::move(copy));
    }
    local_[v] = id;
    return id;
  }

  // The axes of region input `name` (the graph's value `v`) that follow the
  // symbols, for the region's search to type it at other sizes too.
  void symbolic_axes(const std::string& name, int v) {
    const Dims& base = types_[v].tensor().dims;
    std::vector<std::string> axes(base.size(), "?");
    if (probe_[v]) {
      for (std::size_t a = 0; a < base.size(); ++a)
        axes[a] = axis_expression(base[a], probe_[v]->tensor().dims[a], graph_.symbols,
                                  probe_sizes_);
    }
    if (std::ranges::any_of(axes, [](const std::string& a) { return !a.empty(); }))
      region_.graph.symbols.axes[name] = std::move(axes);
  }

  static std::string structural_key(const Graph& g) {
    std::string key;
    for (const auto& [input, axes] : g.symbols.axes)
      key += fmt::format("axes {} {}\n", input, fmt::join(axes, ","));
    for (const auto& [domain, version] : g.opsets) key += fmt::format("opset {} {}\n", domain, version);
    for (const Node& n : g.nodes) {
      key += node_key(n);
      key += '\n';
    }
    for (const GraphOutput& o : g.outputs) key += fmt::format("out {}\n", o.node);
    return key;
  }

  const Graph& graph_;
  const std::vector<ValueType>& types_;
  const CutPlaces& places_;
  std::vector<std::optional<ValueType>> probe_;  // at the probe sizes (symbolic graphs)
  ProbeSizes probe_sizes_;
  Region region_;
  absl::flat_hash_map<int, int> local_;  // graph node -> region node
};

// The k of a canonical name `prefix<k>` below `count`, or -1.
int canonical_index(const std::string& name, std::string_view prefix, std::size_t count) {
  int k = -1;
  if (!name.starts_with(prefix) ||
      !absl::SimpleAtoi(absl::string_view(name).substr(prefix.size()), &k))
    return -1;
  return k >= 0 && static_cast<std::size_t>(k) < count ? k : -1;
}

// The stitched graph as it grows: the graph's nodes as they are added, with
// leaves and weight-only nodes merged by their key.
class Stitcher {
 public:
  explicit Stitcher(const Graph& graph) : graph_(graph), value_(graph.nodes.size(), -1) {
    out_.name = graph.name;
    out_.weights = graph.weights;
    out_.input_defaults = graph.input_defaults;
    out_.opsets = graph.opsets;
    out_.ir_version = graph.ir_version;
    out_.skip_normalizations_at_load = graph.skip_normalizations_at_load;
    out_.symbols = graph.symbols;
    for (int i = 0; i < graph.size(); ++i) {
      if (graph.nodes[i].op == Op::kInput) value_[i] = push(graph.nodes[i]);
    }
  }

  absl::Status add_region(int index, const Region& region, const Graph& result) {
    auto bad = [&](const std::string& what) {
      return absl::InvalidArgumentError(
          fmt::format("region {} of '{}': its result {}", index, graph_.name, what));
    };
    const std::vector<bool> weight_only = weight_only_nodes(result);
    std::vector<int> local(result.nodes.size(), -1);
    for (int i = 0; i < result.size(); ++i) {
      const Node& n = result.nodes[i];
      const std::string* name = n.attributes.get_string("name");
      if (n.op == Op::kInput) {
        const int k = name ? canonical_index(*name, "in", region.inputs.size()) : -1;
        if (k < 0) return bad(fmt::format("has an input '{}' the region does not have", name ? *name : ""));
        local[i] = value_[region.inputs[k]];
        continue;
      }
      Node copy = n;
      copy.name.clear();
      for (int& in : copy.inputs) in = local[in];
      if (n.op == Op::kWeight) {
        const int k = name ? canonical_index(*name, "w", region.weights.size()) : -1;
        if (k < 0) return bad(fmt::format("reads a weight '{}' the region does not have", name ? *name : ""));
        copy.attributes.set("name", region.weights[k]);
        copy.name = region.weights[k];
      }
      local[i] = weight_only[i] ? shared(std::move(copy)) : push(std::move(copy));
    }
    std::vector<bool> seen(region.outputs.size(), false);
    for (const GraphOutput& o : result.outputs) {
      const int k = canonical_index(o.name, "out", region.outputs.size());
      if (k < 0 || seen[k]) return bad(fmt::format("has an unknown or repeated output '{}'", o.name));
      seen[k] = true;
      value_[region.outputs[k]] = local[o.node];
    }
    if (std::find(seen.begin(), seen.end(), false) != seen.end())
      return bad("lacks one of the region's outputs");
    return absl::OkStatus();
  }

  absl::StatusOr<Graph> finish() {
    for (const GraphOutput& o : graph_.outputs) {
      // Graph outputs that no region computes: leaves and weight-only values.
      const int v = value_[o.node] >= 0 ? value_[o.node] : original(o.node);
      out_.outputs.push_back({v, o.name});
    }
    if (absl::StatusOr<std::vector<ValueType>> types = infer_types(out_); !types.ok())
      return absl::InternalError(fmt::format("the regions of '{}' stitch into a graph that does not type-check: {}",
                                             graph_.name, message(types.status())));
    return std::move(out_);
  }

 private:
  int push(Node node) {
    out_.nodes.push_back(std::move(node));
    return out_.size() - 1;
  }
  int shared(Node node) {
    auto [it, inserted] = shared_.try_emplace(node_key(node), out_.size());
    if (inserted) push(std::move(node));
    return it->second;
  }
  // A leaf or weight-only node of the graph itself, added with its operands.
  int original(int v) {
    if (value_[v] >= 0) return value_[v];
    Node copy = graph_.nodes[v];
    for (int& in : copy.inputs) in = original(in);
    return value_[v] = shared(std::move(copy));
  }

  const Graph& graph_;
  Graph out_;
  std::vector<int> value_;  // graph node -> stitched node, once known
  absl::flat_hash_map<std::string, int> shared_;
};

}  // namespace

absl::StatusOr<std::vector<Region>> split_into_regions(const Graph& graph,
                                                       const RegionOptions& options) {
  if (options.target_ops < 0 || options.max_ops < options.target_ops)
    return absl::InvalidArgumentError(fmt::format(
        "regions need 0 <= target ops <= max ops, got {} and {}", options.target_ops, options.max_ops));
  absl::StatusOr<std::vector<ValueType>> types = infer_types(graph);
  if (!types.ok()) return types.status();
  const CutPlaces places = cut_places(graph, *types);
  RegionOptions o = options;
  if (o.target_ops == 0) o.max_ops = static_cast<int>(places.work.size());
  o.target_ops = std::max(o.target_ops, 1);
  RegionBuilder builder(graph, *types, places);
  std::vector<Region> regions;
  int begin = 0;
  do {
    const int end = region_end(graph, *types, places, begin, o);
    regions.push_back(builder.build(static_cast<int>(regions.size()), begin, end));
    begin = end;
  } while (begin < static_cast<int>(places.work.size()));
  return regions;
}

absl::StatusOr<Graph> stitch_regions(const Graph& graph, std::span<const Region> regions,
                                     std::span<const Graph* const> results) {
  if (regions.size() != results.size())
    return absl::InvalidArgumentError(fmt::format("{} regions but {} results", regions.size(), results.size()));
  Stitcher stitcher(graph);
  for (std::size_t i = 0; i < regions.size(); ++i) {
    if (absl::Status s = stitcher.add_region(static_cast<int>(i), regions[i], *results[i]); !s.ok())
      return s;
  }
  return stitcher.finish();
}

}  // namespace saturn::tensor

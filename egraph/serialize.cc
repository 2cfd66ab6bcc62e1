#include "saturn/egraph/serialize.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "saturn/base/file.h"
#include "saturn/base/json.h"
#include "saturn/egraph/term.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace saturn {

namespace {

std::string node_label(const EGraph& egraph, const ENode& node) {
  return egraph.language().node_label(node.op, egraph.attrs().get(node.attrs));
}

}  // namespace

absl::StatusOr<SerializedEGraph> parse_serialized(std::string_view json,
                                                  std::string_view source_name) {
  absl::StatusOr<nlohmann::json> parsed = parse_json(json, source_name);
  if (!parsed.ok()) return parsed.status();
  nlohmann::json doc = *std::move(parsed);
  auto fail = [&](const std::string& what) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", source_name, what));
  };
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_object()) {
    return fail("expected an object with a \"nodes\" object");
  }
  SerializedEGraph out;
  absl::flat_hash_map<std::string, std::uint32_t> class_index;
  absl::flat_hash_map<std::string, std::uint32_t> node_index;
  auto class_of = [&](const std::string& name) {
    auto [it, inserted] = class_index.try_emplace(name, out.class_names.size());
    if (inserted) {
      out.class_names.push_back(name);
      out.class_nodes.emplace_back();
    }
    return it->second;
  };
  for (const auto& [name, node] : doc["nodes"].items()) {
    if (!node.is_object() || !node.contains("op") || !node["op"].is_string() ||
        !node.contains("eclass")) {
      return fail(fmt::format("node \"{}\": expected \"op\" (a string) and \"eclass\"", name));
    }
    const auto& eclass = node["eclass"];
    if (!eclass.is_string() && !eclass.is_number_integer()) {
      return fail(fmt::format("node \"{}\": \"eclass\" must be a string or an integer", name));
    }
    SerializedEGraph::Node n;
    n.name = name;
    n.op = node["op"].get<std::string>();
    n.eclass = class_of(eclass.is_string() ? eclass.get<std::string>() : eclass.dump());
    if (node.contains("cost")) {
      if (!node["cost"].is_number()) return fail(fmt::format("node \"{}\": bad \"cost\"", name));
      n.cost = node["cost"].get<double>();
      // Extraction minimizes a sum: a negative cost on a cycle has no
      // minimum (found by fuzzing: the tree extractor never converged).
      if (!(n.cost >= 0) || !std::isfinite(n.cost))
        return fail(fmt::format("node \"{}\": \"cost\" must be a non-negative number, got {}",
                                name, n.cost));
    }
    node_index.emplace(name, out.nodes.size());
    out.class_nodes[n.eclass].push_back(out.nodes.size());
    out.nodes.push_back(std::move(n));
  }
  // Children name nodes; resolve them to classes once every node is known.
  std::size_t k = 0;
  for (const auto& [name, node] : doc["nodes"].items()) {
    const auto children = node.value("children", nlohmann::json::array());
    if (!children.is_array()) return fail(fmt::format("node \"{}\": bad \"children\"", name));
    for (const auto& child : children) {
      auto it = child.is_string() ? node_index.find(child.get<std::string>()) : node_index.end();
      if (it == node_index.end()) {
        return fail(fmt::format("node \"{}\": unknown child {}", name, child.dump()));
      }
      out.nodes[k].children.push_back(out.nodes[it->second].eclass);
    }
    ++k;
  }
  for (const auto& root : doc.value("root_eclasses", nlohmann::json::array())) {
    std::string r = root.is_string() ? root.get<std::string>() : root.dump();
    auto it = class_index.find(r);
    if (it == class_index.end()) return fail(fmt::format("unknown root e-class {}", r));
    out.roots.push_back(it->second);
  }
  return out;
}

absl::StatusOr<SerializedEGraph> read_serialized(const std::string& path) {
  absl::StatusOr<std::string> text = read_text_file(path);
  if (!text.ok()) return text.status();
  return parse_serialized(*text, path);
}

std::string to_json(const SerializedEGraph& s) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::object();
  for (const auto& n : s.nodes) {
    nlohmann::ordered_json children = nlohmann::ordered_json::array();
    for (std::uint32_t c : n.children) children.push_back(s.nodes[s.class_nodes[c].front()].name);
    nodes[n.name] = {{"op", n.op},
                     {"children", std::move(children)},
                     {"eclass", s.class_names[n.eclass]},
                     {"cost", n.cost}};
  }
  nlohmann::ordered_json roots = nlohmann::ordered_json::array();
  for (std::uint32_t r : s.roots) roots.push_back(s.class_names[r]);
  nlohmann::ordered_json doc = {{"nodes", std::move(nodes)}, {"root_eclasses", std::move(roots)}};
  return doc.dump(1);
}

SerializedEGraph serialize(const EGraph& egraph, std::span<const Id> roots,
                           const std::function<double(const ENode&)>& cost) {
  SerializedEGraph out;
  absl::flat_hash_map<Id, std::uint32_t> index;
  for (Id id : egraph.class_ids()) {
    index.emplace(id, out.class_names.size());
    out.class_names.push_back(std::to_string(id.value));
    out.class_nodes.emplace_back();
  }
  for (Id id : egraph.class_ids()) {
    const std::uint32_t c = index.at(id);
    std::size_t k = 0;
    for (const ENode& node : egraph.nodes(id)) {
      SerializedEGraph::Node n;
      n.name = fmt::format("{}.{}", id.value, k++);
      n.op = node_label(egraph, node);
      for (Id child : node.children) n.children.push_back(index.at(egraph.find(child)));
      n.eclass = c;
      n.cost = cost(node);
      out.class_nodes[c].push_back(out.nodes.size());
      out.nodes.push_back(std::move(n));
    }
  }
  for (Id r : roots) out.roots.push_back(index.at(egraph.find(r)));
  return out;
}

absl::StatusOr<std::vector<Id>> add_serialized(EGraph& egraph, const SerializedEGraph& s,
                                               std::string_view source_name) {
  // Read every label once.
  std::vector<ResolvedOp> ops;
  ops.reserve(s.nodes.size());
  for (const auto& n : s.nodes) {
    SExprReader reader(n.op, fmt::format("{}: node \"{}\" op", source_name, n.name));
    absl::StatusOr<SExpr> head = reader.read();
    if (!head.ok()) return head.status();
    absl::StatusOr<ResolvedOp> op =
        resolve_operator(egraph.language(), *head, n.children.size(), !n.children.empty(), reader);
    if (!op.ok()) return op.status();
    ops.push_back(*std::move(op));
  }
  // A node can be added once all its children's classes exist; repeat until
  // every node is in (cycles close through classes made by earlier nodes).
  std::vector<Id> class_id(s.class_names.size());
  std::vector<bool> added(s.nodes.size(), false);
  std::size_t remaining = s.nodes.size();
  while (remaining > 0) {
    std::size_t before = remaining;
    for (std::size_t i = 0; i < s.nodes.size(); ++i) {
      if (added[i]) continue;
      const auto& n = s.nodes[i];
      ENode node(ops[i].op, egraph.attrs().intern(ops[i].attributes));
      bool ready = true;
      for (std::uint32_t c : n.children) {
        if (!class_id[c].valid()) {
          ready = false;
          break;
        }
        node.children.push_back(class_id[c]);
      }
      if (!ready) continue;
      AddResult r = egraph.add(std::move(node));
      if (!r.ok()) {
        return absl::ResourceExhaustedError(fmt::format(
            "{}: node \"{}\" could not be added (budget full or rejected)", source_name, n.name));
      }
      Id& cls = class_id[n.eclass];
      if (cls.valid()) {
        absl::StatusOr<Id> merged = egraph.merge(cls, r.id);
        if (!merged.ok()) {
          return absl::InvalidArgumentError(
              fmt::format("{}: node \"{}\" does not fit its class (its analysis data conflict)",
                          source_name, n.name));
        }
        cls = *merged;
      } else {
        cls = r.id;
      }
      added[i] = true;
      --remaining;
    }
    if (remaining == before) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: {} nodes only reach classes that no node can build", source_name, remaining));
    }
  }
  egraph.rebuild();
  std::vector<Id> roots;
  for (std::uint32_t r : s.roots) roots.push_back(egraph.find(class_id[r]));
  return roots;
}

std::string to_dot(const EGraph& egraph, std::span<const Id> roots) {
  std::string out = "digraph egraph {\n  compound=true;\n  clusterrank=local;\n";
  std::vector<Id> root_ids;
  for (Id r : roots) root_ids.push_back(egraph.find(r));
  for (Id id : egraph.class_ids()) {
    const bool is_root = std::find(root_ids.begin(), root_ids.end(), id) != root_ids.end();
    out += fmt::format("  subgraph cluster_{} {{\n    style=dotted;{}\n", id.value,
                       is_root ? " color=red;" : "");
    std::size_t k = 0;
    for (const ENode& node : egraph.nodes(id)) {
      std::string label = node_label(egraph, node);
      std::string escaped;
      for (char c : label) {
        if (c == '"' || c == '\\') escaped += '\\';
        escaped += c;
      }
      out += fmt::format("    \"{}.{}\" [label=\"{}\"];\n", id.value, k++, escaped);
    }
    out += "  }\n";
  }
  for (Id id : egraph.class_ids()) {
    std::size_t k = 0;
    for (const ENode& node : egraph.nodes(id)) {
      for (std::size_t c = 0; c < node.children.size(); ++c) {
        Id child = egraph.find(node.children[c]);
        out += fmt::format("  \"{}.{}\" -> \"{}.0\" [lhead=cluster_{}, label={}];\n", id.value, k,
                           child.value, child.value, c);
      }
      ++k;
    }
  }
  out += "}\n";
  return out;
}

}  // namespace saturn

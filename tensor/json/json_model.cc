#include "saturn/tensor/json/json_model.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "saturn/base/file.h"
#include "saturn/base/json.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/tensor/infer.h"

namespace saturn::tensor {

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr std::string_view kFormat = "saturn-model";
constexpr int kVersion = 1;

class ModelReader {
 public:
  ModelReader(std::string_view file) : file_(file) {}

  absl::StatusOr<Graph> read(const Json& root) {
    if (!root.is_object()) return error("", "the top level must be an object");
    if (auto f = root.find("format"); f != root.end() && (!f->is_string() || *f != kFormat)) {
      return error("format", fmt::format("must be \"{}\"", kFormat));
    }
    if (auto v = root.find("version");
        v != root.end() && (!v->is_number_integer() || *v != kVersion)) {
      return error("version", fmt::format("must be {}", kVersion));
    }
    for (const auto& [key, value] : root.items()) {
      if (key != "format" && key != "version" && key != "name" && key != "inputs" &&
          key != "weights" && key != "nodes" && key != "outputs" && key != "opsets" &&
          key != "ir_version") {
        return error(key, "unknown field");
      }
    }
    absl::StatusOr<std::string> name = string_field(root, "name", "model", "");
    if (!name.ok()) return name.status();
    graph_.name = *std::move(name);
    if (auto o = root.find("opsets"); o != root.end()) {
      if (!o->is_object()) return error("opsets", "must map domains to versions");
      for (const auto& [domain, version] : o->items()) {
        if (!version.is_number_integer() || version.get<std::int64_t>() < 1)
          return error("opsets", fmt::format("'{}' must map to a positive version", domain));
        graph_.opsets.emplace_back(domain, version.get<std::int64_t>());
      }
    }
    if (auto v = root.find("ir_version"); v != root.end()) {
      if (!v->is_number_integer() || v->get<std::int64_t>() < 1)
        return error("ir_version", "must be a positive integer (the ONNX IR version)");
      graph_.ir_version = v->get<std::int64_t>();
    }
    if (absl::Status s = read_leaves(root, "inputs", Op::kInput); !s.ok()) return s;
    if (absl::Status s = read_leaves(root, "weights", Op::kWeight); !s.ok()) return s;
    const Json* nodes = list(root, "nodes");
    if (nodes == nullptr) return error("nodes", "must be a list");
    for (std::size_t i = 0; i < nodes->size(); ++i) {
      if (absl::Status s = read_node((*nodes)[i], fmt::format("nodes[{}]", i)); !s.ok()) return s;
    }
    const Json* outputs = list(root, "outputs");
    if (outputs == nullptr || outputs->empty()) return error("outputs", "must be a non-empty list");
    for (std::size_t i = 0; i < outputs->size(); ++i) {
      const Json& o = (*outputs)[i];
      std::string where = fmt::format("outputs[{}]", i);
      std::string name, value;
      if (o.is_string()) {
        name = value = o.get<std::string>();
      } else if (o.is_object() && o.contains("name") && o.contains("value") &&
                 o["name"].is_string() && o["value"].is_string()) {
        name = o["name"].get<std::string>();
        value = o["value"].get<std::string>();
      } else {
        return error(where, "must be a value name or {\"name\": ..., \"value\": ...}");
      }
      auto it = values_.find(value);
      if (it == values_.end()) return error(where, fmt::format("unknown value '{}'", value));
      graph_.outputs.push_back(GraphOutput{it->second, name});
    }
    return std::move(graph_);
  }

 private:
  absl::Status error(std::string_view where, std::string_view what) const {
    if (where.empty()) return absl::InvalidArgumentError(fmt::format("{}: {}", file_, what));
    return absl::InvalidArgumentError(fmt::format("{}: {}: {}", file_, where, what));
  }

  // The string field `key` of object `j`, or `fallback` when it is absent.
  absl::StatusOr<std::string> string_field(const Json& j, std::string_view key,
                                           std::string_view fallback,
                                           std::string_view where) const {
    auto it = j.find(key);
    if (it == j.end()) return std::string(fallback);
    if (!it->is_string()) return error(where, fmt::format("\"{}\" must be a string", key));
    return it->get<std::string>();
  }

  static const Json* list(const Json& root, std::string_view key) {
    auto it = root.find(key);
    if (it == root.end()) return nullptr;
    return it->is_array() ? &*it : nullptr;
  }

  absl::StatusOr<Dims> read_dims(const Json& j, const std::string& where) const {
    if (!j.is_array()) return error(where, "must be a list of integers");
    Dims dims;
    for (const Json& d : j) {
      if (!d.is_number_integer()) return error(where, "must be a list of integers");
      dims.push_back(d.get<std::int64_t>());
    }
    return dims;
  }

  absl::Status define(const std::string& value, int node, const std::string& where) {
    if (!values_.emplace(value, node).second)
      return error(where, fmt::format("the value '{}' is defined twice", value));
    return absl::OkStatus();
  }

  // Checks and adds a node (binding its value name, if given); returns its type.
  absl::StatusOr<ValueType> append(Node node, const std::string& where,
                                   std::optional<std::string> value) {
    absl::StatusOr<Attributes> attrs = normalize_attributes(node.op, std::move(node.attributes));
    if (!attrs.ok()) return error(where, message(attrs.status()));
    node.attributes = std::move(*attrs);
    std::vector<ValueType> in;
    for (int i : node.inputs) in.push_back(types_[i]);
    absl::StatusOr<ValueType> t = infer_type(node.op, node.attributes, in);
    if (!t.ok()) return error(where, message(t.status()));
    graph_.nodes.push_back(std::move(node));
    types_.push_back(*t);
    if (value) {
      if (absl::Status s = define(*value, graph_.size() - 1, where); !s.ok()) return s;
    }
    return t;
  }

  absl::Status read_leaves(const Json& root, std::string_view key, Op op) {
    if (!root.contains(key)) return absl::OkStatus();
    const Json* items = list(root, key);
    if (items == nullptr) return error(key, "must be a list");
    for (std::size_t i = 0; i < items->size(); ++i) {
      const Json& item = (*items)[i];
      std::string where = fmt::format("{}[{}]", key, i);
      if (!item.is_object() || !item.contains("name") || !item["name"].is_string())
        return error(where, "needs a \"name\" string");
      std::string name = item["name"].get<std::string>();
      where += fmt::format(" ({})", name);
      if (!item.contains("shape")) return error(where, "needs a \"shape\"");
      absl::StatusOr<Dims> dims = read_dims(item["shape"], where + ": shape");
      if (!dims.ok()) return dims.status();
      absl::StatusOr<std::string> dtype_text = string_field(item, "dtype", "float32", where);
      if (!dtype_text.ok()) return dtype_text.status();
      const std::string& dtype = *dtype_text;
      std::optional<DType> dt = parse_dtype(dtype);
      if (!dt) return error(where, fmt::format("unknown dtype '{}'", dtype));
      for (const auto& [k, v] : item.items()) {
        bool known =
            k == "name" || k == "shape" || k == "dtype" ||
            (op == Op::kInput && (k == "onnx_type" || k == "default")) ||
            (op == Op::kWeight && (k == "data" || k == "seed" || k == "low" || k == "high"));
        if (!known) return error(where, fmt::format("unknown field '{}'", k));
      }
      if (op == Op::kWeight) {
        absl::StatusOr<WeightInit> init = read_init(item, TensorType{*dt, *dims}, where);
        if (!init.ok()) return init.status();
        graph_.weights[name] = std::move(*init);
      }
      if (auto d = item.find("default"); op == Op::kInput && d != item.end()) {
        absl::StatusOr<std::shared_ptr<const Tensor>> data =
            read_data(*d, TensorType{*dt, *dims}, where + ": default");
        if (!data.ok()) return data.status();
        graph_.input_defaults[name] = *std::move(data);
      }
      Attributes a{{"name", name}, {"shape", *dims}, {"dtype", dtype}};
      if (op == Op::kInput && item.contains("onnx_type")) {
        if (!item["onnx_type"].is_string()) return error(where, "onnx_type must be a string");
        a.set("onnx_type", item["onnx_type"].get<std::string>());
      }
      if (auto t = append(Node{op, std::move(a), {}, name}, where, name); !t.ok())
        return t.status();
    }
    return absl::OkStatus();
  }

  // Tensor values: a list of numbers (or strings), or for other element
  // types base64 of the little-endian bytes.
  absl::StatusOr<std::shared_ptr<const Tensor>> read_data(const Json& d, const TensorType& type,
                                                          const std::string& where) const {
    if (!is_computable(type.dtype) && type.dtype != DType::kString) {
      std::string bytes;
      if (!d.is_string() || !absl::Base64Unescape(d.get<std::string>(), &bytes) ||
          static_cast<std::int64_t>(bytes.size()) != type.num_bytes()) {
        return error(where, fmt::format("{} data must be base64 of {} bytes",
                                        dtype_name(type.dtype), type.num_bytes()));
      }
      const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
      std::vector<std::byte> values(p, p + bytes.size());
      // A 4-bit integer per byte (int4 sign-extended).
      if (is_4bit(type.dtype) &&
          std::ranges::any_of(values, [&](std::byte b) {
            return four_bit_byte(type.dtype, std::to_integer<unsigned>(b)) != b;
          }))
        return error(where, fmt::format("{} data must hold one {} value per byte ({})",
                                        dtype_name(type.dtype), dtype_name(type.dtype),
                                        type.dtype == DType::kInt4 ? "-8 to 7" : "0 to 15"));
      return std::make_shared<const Tensor>(type, std::move(values));
    }
    if (!d.is_array() || static_cast<std::int64_t>(d.size()) != type.num_elements()) {
      return error(where, fmt::format("data must be a list of {} {}", type.num_elements(),
                                      type.dtype == DType::kString ? "strings" : "numbers"));
    }
    if (type.dtype == DType::kString) {
      std::vector<std::string> values;
      for (const Json& v : d) {
        if (!v.is_string()) return error(where, "string data must hold strings");
        values.push_back(v.get<std::string>());
      }
      return std::make_shared<const Tensor>(type, std::move(values));
    }
    if (type.dtype == DType::kFloat32) {
      std::vector<float> values;
      for (const Json& v : d) {
        if (!v.is_number()) return error(where, "data must hold numbers");
        values.push_back(v.get<float>());
      }
      return std::make_shared<const Tensor>(type, std::move(values));
    }
    std::vector<std::int64_t> values;
    for (const Json& v : d) {
      if (!v.is_number_integer()) return error(where, "int64 data must hold integers");
      values.push_back(v.get<std::int64_t>());
    }
    return std::make_shared<const Tensor>(type, std::move(values));
  }

  absl::StatusOr<WeightInit> read_init(const Json& item, const TensorType& type,
                                       const std::string& where) const {
    WeightInit init;
    init.seed = stable_hash(item["name"].get<std::string>());
    if (auto d = item.find("data"); d != item.end()) {
      absl::StatusOr<std::shared_ptr<const Tensor>> data = read_data(*d, type, where);
      if (!data.ok()) return data.status();
      init.data = *std::move(data);
      return init;
    }
    if (auto s = item.find("seed"); s != item.end()) {
      if (!s->is_number_unsigned()) return error(where, "seed must be a non-negative integer");
      init.seed = s->get<std::uint64_t>();
    }
    for (auto [key, field] : {std::pair{"low", &init.low}, std::pair{"high", &init.high}}) {
      if (auto v = item.find(key); v != item.end()) {
        if (!v->is_number()) return error(where, fmt::format("{} must be a number", key));
        *field = v->get<float>();
      }
    }
    if (!(init.low < init.high)) return error(where, "low must be below high");
    return init;
  }

  absl::StatusOr<AttrValue> read_attribute(const Json& v, const std::string& where) const {
    if (v.is_number_integer()) return AttrValue(v.get<std::int64_t>());
    if (v.is_number_float()) return AttrValue(v.get<double>());
    if (v.is_string()) return AttrValue(v.get<std::string>());
    if (v.is_array()) {
      absl::StatusOr<Dims> ints = read_dims(v, where);
      if (!ints.ok()) return ints.status();
      return AttrValue(std::move(*ints));
    }
    return error(where, "must be a number, a string or a list of integers");
  }

  absl::Status read_node(const Json& j, std::string where) {
    if (!j.is_object()) return error(where, "must be an object");
    if (j.contains("name") && j["name"].is_string())
      where += fmt::format(" ({})", j["name"].get<std::string>());
    for (const auto& [k, v] : j.items()) {
      if (k != "op" && k != "name" && k != "inputs" && k != "outputs" && k != "attributes") {
        return error(where, fmt::format("unknown field '{}'", k));
      }
    }
    if (!j.contains("op") || !j["op"].is_string()) return error(where, "needs an \"op\" string");
    std::string op_text = j["op"].get<std::string>();
    std::optional<Op> op = find_op(op_text);
    if (!op || *op == Op::kInput || *op == Op::kWeight || *op == Op::kTupleGet) {
      return error(
          where,
          fmt::format(
              "unknown operator '{}' (unknown operators are written as \"Opaque\" with an op_type)",
              op_text));
    }
    absl::StatusOr<std::string> name = string_field(j, "name", "", where);
    if (!name.ok()) return name.status();
    Node node{*op, {}, {}, *std::move(name)};
    if (j.contains("inputs")) {
      if (!j["inputs"].is_array()) return error(where, "inputs must be a list of value names");
      for (const Json& in : j["inputs"]) {
        if (!in.is_string()) return error(where, "inputs must be a list of value names");
        auto it = values_.find(in.get<std::string>());
        if (it == values_.end())
          return error(where, fmt::format("unknown input value '{}'", in.get<std::string>()));
        node.inputs.push_back(it->second);
      }
    }
    if (j.contains("attributes")) {
      if (!j["attributes"].is_object()) return error(where, "attributes must be an object");
      for (const auto& [k, v] : j["attributes"].items()) {
        absl::StatusOr<AttrValue> a =
            read_attribute(v, fmt::format("{}: attribute '{}'", where, k));
        if (!a.ok()) return a.status();
        node.attributes.set(k, std::move(*a));
      }
    }
    if (!j.contains("outputs") || !j["outputs"].is_array() || j["outputs"].empty()) {
      return error(where, "needs \"outputs\", a non-empty list of value names");
    }
    std::vector<std::string> outputs;
    for (const Json& o : j["outputs"]) {
      if (!o.is_string()) return error(where, "outputs must be value names");
      outputs.push_back(o.get<std::string>());
    }
    if (outputs.size() == 1 && node.name.empty()) node.name = outputs[0];
    // Whether the node yields a tuple decides how its outputs are bound.
    absl::StatusOr<ValueType> type = append(std::move(node), where, std::nullopt);
    if (!type.ok()) return type.status();
    const std::size_t count = type->is_tuple ? type->parts.size() : 1;
    if (count != outputs.size()) {
      return error(where, fmt::format("{} yields {} value(s), {} output name(s) given", op_text,
                                      count, outputs.size()));
    }
    const int index = graph_.size() - 1;
    if (!type->is_tuple) return define(outputs[0], index, where);
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      Node get{
          Op::kTupleGet, Attributes{{"index", static_cast<std::int64_t>(k)}}, {index}, outputs[k]};
      if (absl::StatusOr<ValueType> t = append(std::move(get), where, outputs[k]); !t.ok())
        return t.status();
    }
    return absl::OkStatus();
  }

  std::string_view file_;
  Graph graph_;
  std::vector<ValueType> types_;
  absl::flat_hash_map<std::string, int> values_;
};

// A tensor's values as read_data reads them.
OrderedJson data_json(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kFloat32:
      return std::vector<float>(t.floats().begin(), t.floats().end());
    case DType::kInt64:
      return std::vector<std::int64_t>(t.ints().begin(), t.ints().end());
    case DType::kString:
      return std::vector<std::string>(t.strings().begin(), t.strings().end());
    default:
      return absl::Base64Escape(
          absl::string_view(reinterpret_cast<const char*>(t.bytes().data()), t.bytes().size()));
  }
}

OrderedJson attribute_json(const AttrValue& v) {
  return std::visit([](const auto& x) { return OrderedJson(x); }, v);
}

// The names to_json_model gives values.
struct ValueNames {
  std::vector<std::string> names;  // per node
  // parts[i][k]: the name of part k of tuple node i (its first TupleGet's).
  absl::flat_hash_map<int, std::vector<std::string>> parts;
};

// Leaves by their name, other nodes by their own name when it is unique,
// otherwise a fresh "%<index>"; tuple parts by the name of their TupleGet.
ValueNames value_names(const Graph& graph, const absl::StatusOr<std::vector<ValueType>>& types) {
  ValueNames v;
  std::vector<std::string>& names = v.names;
  names.resize(graph.nodes.size());
  absl::flat_hash_set<std::string> taken;
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    std::string name =
        (n.op == Op::kInput || n.op == Op::kWeight) ? *n.attributes.get_string("name") : n.name;
    if (!name.empty() && taken.insert(name).second) names[i] = std::move(name);
  }
  for (int i = 0; i < graph.size(); ++i) {
    if (!names[i].empty()) continue;
    std::string name = fmt::format("%{}", i);
    while (!taken.insert(name).second) name += "'";
    names[i] = std::move(name);
  }
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (n.op != Op::kTupleGet || !types.ok()) continue;
    std::vector<std::string>& p = v.parts[n.inputs[0]];
    p.resize((*types)[n.inputs[0]].parts.size());
    std::string& part = p[static_cast<std::size_t>(*n.attributes.get_int("index"))];
    if (part.empty())
      part = names[i];
    else
      names[i] = part;
  }
  return v;
}

// An Input or Weight node named `name`, as read_leaves reads it.
OrderedJson leaf_json(const Graph& graph, const Node& n, const std::string& name) {
  OrderedJson leaf = {{"name", name},
                      {"shape", *n.attributes.get_ints("shape")},
                      {"dtype", *n.attributes.get_string("dtype")}};
  if (const std::string* t = n.attributes.get_string("onnx_type"); t && !t->empty())
    leaf["onnx_type"] = *t;
  if (n.op == Op::kWeight) {
    auto it = graph.weights.find(name);
    if (it != graph.weights.end() && it->second.data) {
      leaf["data"] = data_json(*it->second.data);
    } else {
      WeightInit init =
          it != graph.weights.end() ? it->second : WeightInit{nullptr, stable_hash(name)};
      leaf["seed"] = init.seed;
      leaf["low"] = init.low;
      leaf["high"] = init.high;
    }
  } else if (auto d = graph.input_defaults.find(name); d != graph.input_defaults.end()) {
    leaf["default"] = data_json(*d->second);
  }
  return leaf;
}

// Node `i` (neither a leaf nor a TupleGet), as read_node reads it.
OrderedJson node_json(const Node& n, int i, const ValueNames& v,
                      const absl::StatusOr<std::vector<ValueType>>& types) {
  const std::vector<std::string>& names = v.names;
  OrderedJson node = {{"op", std::string(op_name(n.op))}};
  if (!n.name.empty() && n.name != names[i]) node["name"] = n.name;
  OrderedJson in = OrderedJson::array();
  for (int x : n.inputs) in.push_back(names[x]);
  node["inputs"] = std::move(in);
  auto p = v.parts.find(i);
  if (types.ok() && (*types)[i].is_tuple) {
    std::vector<std::string> outs = p != v.parts.end() ? p->second : std::vector<std::string>{};
    outs.resize((*types)[i].parts.size());
    for (std::size_t k = 0; k < outs.size(); ++k) {
      if (outs[k].empty()) outs[k] = fmt::format("{}:{}", names[i], k);
    }
    node["outputs"] = outs;
  } else {
    node["outputs"] = {names[i]};
  }
  if (!n.attributes.empty()) {
    OrderedJson attrs = OrderedJson::object();
    for (const Attribute& a : n.attributes.entries()) attrs[a.key] = attribute_json(a.value);
    node["attributes"] = std::move(attrs);
  }
  return node;
}

// The graph's outputs: a name, or the name and the value it gives.
OrderedJson outputs_json(const Graph& graph, const std::vector<std::string>& names) {
  OrderedJson outputs = OrderedJson::array();
  for (const GraphOutput& o : graph.outputs) {
    if (o.name == names[o.node])
      outputs.push_back(o.name);
    else
      outputs.push_back({{"name", o.name}, {"value", names[o.node]}});
  }
  return outputs;
}

}  // namespace

absl::StatusOr<Graph> parse_json_model(std::string_view text, std::string_view file) {
  absl::StatusOr<Json> root = parse_json(text, file);
  if (!root.ok()) return root.status();
  return ModelReader(file).read(*root);
}

absl::StatusOr<Graph> load_json_model(const std::string& path) {
  absl::StatusOr<std::string> text = read_text_file(path);
  if (!text.ok()) return text.status();
  return parse_json_model(*text, path);
}

std::string to_json_model(const Graph& graph) {
  absl::StatusOr<std::vector<ValueType>> types = infer_types(graph);
  const ValueNames names = value_names(graph, types);
  OrderedJson inputs = OrderedJson::array(), weights = OrderedJson::array(),
              nodes = OrderedJson::array();
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (n.op == Op::kInput)
      inputs.push_back(leaf_json(graph, n, names.names[i]));
    else if (n.op == Op::kWeight)
      weights.push_back(leaf_json(graph, n, names.names[i]));
    else if (n.op != Op::kTupleGet)
      nodes.push_back(node_json(n, i, names, types));
  }
  OrderedJson root = {{"format", kFormat},
                      {"version", kVersion},
                      {"name", graph.name},
                      {"inputs", std::move(inputs)},
                      {"weights", std::move(weights)},
                      {"nodes", std::move(nodes)},
                      {"outputs", outputs_json(graph, names.names)}};
  if (!graph.opsets.empty()) {
    OrderedJson opsets = OrderedJson::object();
    for (const auto& [domain, version] : graph.opsets) opsets[domain] = version;
    root["opsets"] = std::move(opsets);
  }
  if (graph.ir_version > 0) root["ir_version"] = graph.ir_version;
  return root.dump(1) + "\n";
}

absl::Status save_json_model(const Graph& graph, const std::string& path) {
  return write_text_file(path, to_json_model(graph));
}

}  // namespace saturn::tensor

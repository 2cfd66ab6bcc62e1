// ONNX → IR. See onnx.h for what is mapped and what is kept opaque.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "egraph/file.h"
#include "egraph/status.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "nlohmann/json.hpp"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "tensor/infer.h"
#include "tensor/onnx.h"
#include "tensor/onnx_proto.h"

namespace saturn::tensor {

namespace {

using namespace onnx_io;  // NOLINT: the internal helpers of this module
using Ints = std::vector<std::int64_t>;

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// Reads a node's attributes and remembers which were read, so a node with an
// attribute the mapping does not understand stays opaque.
class AttrReader {
 public:
  explicit AttrReader(const onnx::NodeProto& node) : node_(node) {}

  const onnx::AttributeProto* find(std::string_view name) {
    for (const onnx::AttributeProto& a : node_.attribute()) {
      if (a.name() == name) {
        read_.insert(a.name());
        return &a;
      }
    }
    return nullptr;
  }
  std::optional<std::int64_t> i(std::string_view name) {
    const auto* a = find(name);
    if (a == nullptr || a->type() != onnx::AttributeProto::INT) return std::nullopt;
    return a->i();
  }
  std::optional<double> f(std::string_view name) {
    const auto* a = find(name);
    if (a == nullptr || a->type() != onnx::AttributeProto::FLOAT) return std::nullopt;
    return a->f();
  }
  std::optional<std::string> s(std::string_view name) {
    const auto* a = find(name);
    if (a == nullptr || a->type() != onnx::AttributeProto::STRING) return std::nullopt;
    return a->s();
  }
  std::optional<Ints> ints(std::string_view name) {
    const auto* a = find(name);
    if (a == nullptr || a->type() != onnx::AttributeProto::INTS) return std::nullopt;
    return Ints(a->ints().begin(), a->ints().end());
  }
  // Whether every attribute of the node was read.
  bool all_read() const { return static_cast<int>(read_.size()) == node_.attribute_size(); }

 private:
  const onnx::NodeProto& node_;
  std::set<std::string> read_;
};

// What a known ONNX node becomes: one IR operator over IR values.
struct Mapped {
  Op op;
  Attributes attributes;
  std::vector<int> inputs;
};

bool is_random_op(const std::string& op_type) {
  return op_type.starts_with("Random") || op_type == "Bernoulli" || op_type == "Multinomial";
}

absl::Status load_external_data(onnx::TensorProto& t, const std::filesystem::path& dir) {
  std::string location;
  std::int64_t offset = 0, length = -1;
  auto bad = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        fmt::format("initializer '{}': external data {}", t.name(), what));
  };
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") location = e.value();
    if (e.key() == "offset" || e.key() == "length") {
      std::int64_t v = 0;
      const char* end = e.value().data() + e.value().size();
      auto [ptr, ec] = std::from_chars(e.value().data(), end, v);
      if (ec != std::errc() || ptr != end || v < 0)
        return bad(fmt::format("{} '{}' is not a non-negative integer", e.key(), e.value()));
      (e.key() == "offset" ? offset : length) = v;
    }
  }
  std::filesystem::path rel(location);
  if (location.empty() || rel.is_absolute() ||
      std::any_of(rel.begin(), rel.end(), [](const auto& part) { return part == ".."; })) {
    return bad(fmt::format("location '{}' must be a relative path inside the model's directory",
                           location));
  }
  const std::filesystem::path file = dir / rel;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    return absl::NotFoundError(fmt::format("initializer '{}': cannot open external data file {}",
                                           t.name(), file.string()));
  const auto size = static_cast<std::int64_t>(std::filesystem::file_size(file, ec));
  if (ec) return bad(fmt::format("file {}: {}", file.string(), ec.message()));
  if (length < 0) length = size - offset;
  if (offset > size || length < 0 || length > size - offset)
    return bad(fmt::format("{} has {} bytes; the model reads {} at offset {}", location, size,
                           length, offset));
  std::ifstream in(file, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) return bad(fmt::format("reading {} failed", file.string()));
  t.set_raw_data(std::move(bytes));
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  return absl::OkStatus();
}

// Reads every external initializer of `model` (relative to `dir`) into it.
absl::Status inline_external_data(onnx::ModelProto& model, const std::filesystem::path& dir) {
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    if (absl::Status s = load_external_data(t, dir); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Gives the symbolic dimensions of the graph inputs their sizes.
absl::Status resolve_input_dims(onnx::ModelProto& model, const OnnxImportOptions& options) {
  for (onnx::ValueInfoProto& v : *model.mutable_graph()->mutable_input()) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
    int axis = 0;
    for (auto& d : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (!d.has_dim_value()) {
        auto it = options.dims.find(d.dim_param());
        if (d.dim_param().empty() || it == options.dims.end()) {
          return absl::InvalidArgumentError(fmt::format(
              "input '{}' has a dynamic dimension {} ('{}'); give its size (saturn: --dim "
              "NAME=SIZE)",
              v.name(), axis, d.dim_param()));
        }
        d.set_dim_value(it->second);
      }
      ++axis;
    }
  }
  return absl::OkStatus();
}

// The weights a model names under `saturn.seeded_weights`: name -> [low, high).
using SeededWeights = absl::flat_hash_map<std::string, std::pair<float, float>>;

absl::StatusOr<SeededWeights> seeded_weights(const onnx::ModelProto& model) {
  SeededWeights out;
  for (const auto& entry : model.metadata_props()) {
    if (entry.key() != kSeededWeights) continue;
    nlohmann::json j = nlohmann::json::parse(entry.value(), nullptr, false);
    if (!j.is_object())
      return absl::InvalidArgumentError(
          fmt::format("metadata '{}' must be a JSON object", kSeededWeights));
    for (const auto& [name, range] : j.items()) {
      if (!range.is_object() || !range.contains("low") || !range.contains("high") ||
          !range["low"].is_number() || !range["high"].is_number())
        return absl::InvalidArgumentError(
            fmt::format("metadata '{}': '{}' needs numbers low and high", kSeededWeights, name));
      out[name] = {range["low"].get<float>(), range["high"].get<float>()};
    }
  }
  return out;
}

class Importer {
 public:
  Importer(std::string file, const OnnxImportOptions& options)
      : file_(std::move(file)), options_(options) {}

  absl::StatusOr<Graph> run(onnx::ModelProto& model) {
    if (absl::Status s = prepare(model); !s.ok()) return s;
    const onnx::GraphProto& g = model.graph();
    // Exporters name graphs generically ("torch_jit", "main_graph"): the file names the model.
    graph_.name = std::filesystem::path(file_).stem().string();
    for (const auto& op : model.opset_import())
      graph_.opsets.emplace_back(op.domain(), op.version());

    for (const auto& v : g.input()) types_by_name_[v.name()] = v.type();
    for (const auto& v : g.value_info()) types_by_name_[v.name()] = v.type();
    for (const auto& v : g.output()) types_by_name_[v.name()] = v.type();

    // Before IR 4 every initializer had to be listed as a graph input too:
    // those are weights. From IR 4 on, an initializer named like a graph
    // input is the input's default, which a caller may override.
    const bool defaults = model.ir_version() >= 4;
    std::set<std::string> initializer_names, input_names;
    for (const auto& t : g.initializer()) initializer_names.insert(t.name());
    for (const auto& v : g.input()) {
      if (initializer_names.contains(v.name()) && !defaults) continue;
      if (absl::Status s = add_input(v); !s.ok()) return s;
      input_names.insert(v.name());
    }
    for (const auto& t : g.initializer()) {
      absl::StatusOr<Tensor> value = tensor_from_proto(t);
      if (!value.ok()) return error("initializer '{}': {}", t.name(), message(value.status()));
      if (input_names.contains(t.name())) {
        if (absl::Status s = add_input_default(t.name(), *value); !s.ok()) return s;
      } else {
        add_weight(t.name(), *value);
      }
    }
    if (g.sparse_initializer_size() > 0)
      return error("sparse initializers are not supported (initializer '{}')",
                   g.sparse_initializer(0).values().name());
    for (int k = 0; k < g.node_size(); ++k) {
      if (absl::Status s = add_node(g.node(k), k); !s.ok()) return s;
    }
    for (const auto& v : g.output()) {
      auto it = values_.find(v.name());
      if (it == values_.end()) return error("graph output '{}' is never computed", v.name());
      graph_.outputs.push_back({it->second, v.name()});
    }
    prune();
    return std::move(graph_);
  }

 private:
  template <typename... Args>
  absl::Status error(fmt::format_string<Args...> format, Args&&... args) const {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", file_, fmt::format(format, std::forward<Args>(args)...)));
  }

  // Checks the opset, reads external data and seeded-weight metadata, fixes
  // symbolic input dimensions, runs the ONNX checker and shape inference.
  absl::Status prepare(onnx::ModelProto& model) {
    if (!model.has_graph() || model.ir_version() <= 0 || model.opset_import_size() == 0)
      return error("not an ONNX model (no graph, IR version or opset)");
    for (const auto& op : model.opset_import()) {
      if (!is_default_domain(op.domain())) continue;
      opset_ = op.version();
      if (opset_ < 1 || opset_ > max_onnx_opset()) {
        return error("ONNX opset {} is not supported (this build reads opsets 1 to {})", opset_,
                     max_onnx_opset());
      }
    }
    if (model.functions_size() > 0)
      return error("model-local functions are not supported (function '{}')",
                   model.functions(0).name());
    if (absl::Status st = inline_external_data(model, std::filesystem::path(file_).parent_path());
        !st.ok())
      return error("{}", message(st));
    absl::StatusOr<SeededWeights> seeded = seeded_weights(model);
    if (!seeded.ok()) return error("{}", message(seeded.status()));
    seeded_ = std::move(*seeded);
    if (absl::Status st = resolve_input_dims(model, options_); !st.ok())
      return error("{}", message(st));
    try {
      onnx::checker::check_model(model);
    } catch (const std::exception& e) {
      return error("the ONNX checker rejects the model: {}", e.what());
    }
    try {
      onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict_mode=*/0,
                                          /*data_prop=*/true);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
      return error("ONNX shape inference fails: {}", e.what());
    }
    return absl::OkStatus();
  }

  template <typename... Args>
  static absl::Status plain(fmt::format_string<Args...> format, Args&&... args) {
    return absl::InvalidArgumentError(fmt::format(format, std::forward<Args>(args)...));
  }

  absl::StatusOr<TensorType> tensor_type(const onnx::TypeProto& type, const std::string& name,
                                         bool need_static) const {
    const auto& tt = type.tensor_type();
    std::optional<DType> dtype = dtype_from_onnx(tt.elem_type());
    if (!dtype) return plain("'{}' has an unsupported element type ({})", name, tt.elem_type());
    TensorType out{*dtype, {}};
    if (!tt.has_shape()) {
      if (need_static) return plain("the shape of '{}' is unknown (not even its rank)", name);
      return out;
    }
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value()) {
        if (need_static)
          return plain("the shape of '{}' is not static (dimension '{}' is unresolved)", name,
                       d.dim_param());
        out.dims.push_back(-1);
        continue;
      }
      out.dims.push_back(d.dim_value());
    }
    return out;
  }

  // The ONNX type of a value: a tensor (dimensions that depend on the data
  // are kUnknownDim), or kOther for sequences, maps and tensors of unknown
  // rank.
  absl::StatusOr<TensorType> value_type(const std::string& name) const {
    auto it = types_by_name_.find(name);
    if (it == types_by_name_.end() || it->second.value_case() == onnx::TypeProto::VALUE_NOT_SET)
      return plain("the type of '{}' cannot be inferred", name);
    if (!it->second.has_tensor_type() || !it->second.tensor_type().has_shape())
      return TensorType{DType::kOther, {}};
    return tensor_type(it->second, name, /*need_static=*/false);
  }

  absl::StatusOr<int> append(Op op, Attributes attributes, std::vector<int> inputs,
                             std::string name) {
    absl::StatusOr<Attributes> a = normalize_attributes(op, std::move(attributes));
    if (!a.ok()) return a.status();
    std::vector<ValueType> in;
    for (int i : inputs) in.push_back(types_[i]);
    absl::StatusOr<ValueType> t = infer_type(op, *a, in);
    if (!t.ok()) return t.status();
    graph_.nodes.push_back(Node{op, std::move(*a), std::move(inputs), std::move(name)});
    types_.push_back(std::move(*t));
    return graph_.size() - 1;
  }

  absl::Status add_input(const onnx::ValueInfoProto& v) {
    if (auto it = seeded_.find(v.name()); it != seeded_.end()) {
      absl::StatusOr<TensorType> t = tensor_type(v.type(), v.name(), true);
      if (!t.ok()) return error("{}", message(t.status()));
      graph_.weights[v.name()] =
          WeightInit{nullptr, stable_hash(v.name()), it->second.first, it->second.second};
      return define(v.name(), append(Op::kWeight, leaf_attributes(v.name(), t->dims, t->dtype), {},
                                     v.name()));
    }
    if (v.type().value_case() == onnx::TypeProto::VALUE_NOT_SET)
      return error("input '{}' has no type", v.name());
    Attributes a;
    if (v.type().has_tensor_type()) {
      absl::StatusOr<TensorType> t = tensor_type(v.type(), v.name(), true);
      if (!t.ok()) return error("{}", message(t.status()));
      a = leaf_attributes(v.name(), t->dims, t->dtype);
    } else {
      a = leaf_attributes(v.name(), {}, DType::kOther);
      a.set("onnx_type", serialize_base64(v.type()));
    }
    return define(v.name(), append(Op::kInput, std::move(a), {}, v.name()));
  }

  // The default of graph input `name` (ONNX's shape inference has checked
  // that its type fits).
  absl::Status add_input_default(const std::string& name, const Tensor& value) {
    if (graph_.nodes[static_cast<std::size_t>(values_.at(name))].op != Op::kInput)
      return error("initializer '{}' and seeded-weight metadata both define '{}'", name, name);
    graph_.input_defaults[name] = std::make_shared<const Tensor>(value);
    return absl::OkStatus();
  }

  void add_weight(const std::string& name, const Tensor& value) {
    constants_[name] = value;
    // A float scalar becomes a Constant node, which carries its value, so
    // that rules can match it (the 0.5 and sqrt 2 of an exported GELU).
    if (value.dtype() == DType::kFloat32 && value.size() == 1) {
      values_[name] = *append(Op::kConstant,
                              {{"value", static_cast<double>(value.floats()[0])},
                               {"shape", Ints(value.dims().begin(), value.dims().end())}},
                              {}, name);
      return;
    }
    graph_.weights[name] = WeightInit{std::make_shared<const Tensor>(value)};
    absl::StatusOr<int> id =
        append(Op::kWeight, leaf_attributes(name, value.dims(), value.dtype()), {}, name);
    values_[name] = *id;  // a weight always type-checks
  }

  absl::Status define(const std::string& name, absl::StatusOr<int> id) {
    if (!id.ok()) return error("'{}': {}", name, message(id.status()));
    values_[name] = *id;
    return absl::OkStatus();
  }

  std::string where(const onnx::NodeProto& n, int k) const {
    return fmt::format("node {} ({}{})", k, n.op_type(), n.name().empty() ? "" : ", " + n.name());
  }

  absl::Status add_node(const onnx::NodeProto& n, int k) {
    for (const std::string& in : n.input()) {
      if (!in.empty() && !values_.contains(in))
        return error("{}: input '{}' is not computed before it", where(n, k), in);
    }
    if (is_default_domain(n.domain()) && n.op_type() == "Constant") {
      if (std::optional<Tensor> value = constant_value(n)) {
        add_weight(n.output(0), *value);
        return absl::OkStatus();
      }
    }
    if (is_default_domain(n.domain())) {
      absl::StatusOr<bool> mapped = add_known(n);
      if (!mapped.ok()) return error("{}: {}", where(n, k), message(mapped.status()));
      if (*mapped) return absl::OkStatus();
    }
    absl::Status s = add_opaque(n, k);
    return s.ok() ? s : error("{}: {}", where(n, k), message(s));
  }

  // A Constant node's value as a tensor (null for sparse values).
  std::optional<Tensor> constant_value(const onnx::NodeProto& n) const {
    if (n.attribute_size() != 1) return std::nullopt;
    const onnx::AttributeProto& a = n.attribute(0);
    auto floats = [](Dims dims, std::vector<float> v) {
      return Tensor(TensorType{DType::kFloat32, std::move(dims)}, std::move(v));
    };
    auto ints = [](Dims dims, std::vector<std::int64_t> v) {
      return Tensor(TensorType{DType::kInt64, std::move(dims)}, std::move(v));
    };
    if (a.name() == "value" && a.has_t()) {
      absl::StatusOr<Tensor> t = tensor_from_proto(a.t());
      return t.ok() ? std::optional<Tensor>(*t) : std::nullopt;
    }
    if (a.name() == "value_float") return floats({}, {a.f()});
    if (a.name() == "value_floats")
      return floats({a.floats_size()}, std::vector<float>(a.floats().begin(), a.floats().end()));
    if (a.name() == "value_int") return ints({}, {a.i()});
    if (a.name() == "value_ints")
      return ints({a.ints_size()}, std::vector<std::int64_t>(a.ints().begin(), a.ints().end()));
    if (a.name() == "value_string")
      return Tensor(TensorType{DType::kString, {}}, std::vector<std::string>{a.s()});
    if (a.name() == "value_strings")
      return Tensor(TensorType{DType::kString, {a.strings_size()}},
                    std::vector<std::string>(a.strings().begin(), a.strings().end()));
    return std::nullopt;
  }

  // The integer values of a constant input (int64 or int32), if known.
  std::optional<Ints> constant_ints(const std::string& name) const {
    auto it = constants_.find(name);
    if (it == constants_.end()) return std::nullopt;
    const Tensor& t = it->second;
    if (t.dtype() == DType::kInt64) return Ints(t.ints().begin(), t.ints().end());
    if (t.dtype() == DType::kInt32) {
      Ints out;
      for (std::size_t i = 0; i < t.bytes().size(); i += 4) {
        std::int32_t v;
        std::memcpy(&v, t.bytes().data() + i, 4);
        out.push_back(v);
      }
      return out;
    }
    return std::nullopt;
  }
  std::optional<double> constant_scalar(const std::string& name) const {
    auto it = constants_.find(name);
    if (it == constants_.end() || it->second.dtype() != DType::kFloat32 || it->second.size() != 1)
      return std::nullopt;
    return it->second.floats()[0];
  }

  static std::string input(const onnx::NodeProto& n, int i) {
    return i < n.input_size() ? n.input(i) : std::string();
  }

  // Convolution and pooling padding from auto_pad, or the pads attribute.
  std::optional<Ints> window_pads(AttrReader& r, const Dims& in, const Ints& kernel,
                                  const Ints& strides, const Ints& dilations) {
    const auto ok = [&](const Ints& v) {
      return v.size() == kernel.size() &&
             std::ranges::all_of(v, [](std::int64_t x) { return x > 0; });
    };
    if (!ok(strides) || !ok(dilations) || !ok(kernel) || in.size() != kernel.size() + 2)
      return std::nullopt;
    std::string mode = r.s("auto_pad").value_or("NOTSET");
    if (mode == "NOTSET") {
      Ints pads = r.ints("pads").value_or(Ints(2 * kernel.size(), 0));
      if (pads.size() != 2 * kernel.size()) return std::nullopt;
      return pads;
    }
    if (r.find("pads") != nullptr) return std::nullopt;
    Ints begin(kernel.size(), 0), end(kernel.size(), 0);
    if (mode == "VALID") {
      begin.insert(begin.end(), end.begin(), end.end());
      return begin;
    }
    if (mode != "SAME_UPPER" && mode != "SAME_LOWER") return std::nullopt;
    for (std::size_t i = 0; i < kernel.size(); ++i) {
      std::int64_t size = in[2 + i], stride = strides[i];
      std::int64_t out = (size + stride - 1) / stride;
      std::int64_t span = dilations[i] * (kernel[i] - 1) + 1;
      std::int64_t total = std::max<std::int64_t>(0, (out - 1) * stride + span - size);
      begin[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    }
    begin.insert(begin.end(), end.begin(), end.end());
    return begin;
  }

  // Maps a default-domain node onto an IR operator when the IR computes the
  // same thing; nullopt keeps it opaque.
  std::optional<Mapped> map_known(const onnx::NodeProto& n) {
    AttrReader r(n);
    const std::string& t = n.op_type();
    std::vector<int> in;
    for (const std::string& name : n.input()) in.push_back(name.empty() ? -1 : values_.at(name));
    auto dims = [&](int i) -> const Dims& { return types_[in[i]].parts[0].dims; };
    auto present = [&](int i) { return i < static_cast<int>(in.size()) && in[i] >= 0; };
    auto first = [&](int count) { return std::vector<int>(in.begin(), in.begin() + count); };
    if (n.output_size() != 1 && t != "Split") return std::nullopt;
    if (in.empty() || in[0] < 0) return std::nullopt;
    for (int i : in) {
      if (i >= 0 && (types_[i].is_tuple || types_[i].parts[0].dtype == DType::kOther ||
                     !types_[i].parts[0].is_static()))
        return std::nullopt;
    }

    static const std::pair<std::string_view, Op> kSame[] = {
        {"Relu", Op::kRelu},         {"Sigmoid", Op::kSigmoid},
        {"Tanh", Op::kTanh},         {"Sqrt", Op::kSqrt},
        {"Erf", Op::kErf},           {"Add", Op::kAdd},
        {"Sub", Op::kSub},           {"Mul", Op::kMul},
        {"Div", Op::kDiv},           {"Pow", Op::kPow},
        {"MatMul", Op::kMatMul},     {"GlobalAveragePool", Op::kGlobalAveragePool},
        {"Identity", Op::kIdentity},
    };
    std::optional<Mapped> m;
    for (const auto& [name, op] : kSame) {
      if (t == name) m = Mapped{op, {}, in};
    }
    if (m) {
      // Old opsets' broadcast/consumed_inputs attributes keep a node opaque.
    } else if (t == "Gemm") {
      if (!present(0) || !present(1)) return std::nullopt;
      m = Mapped{Op::kGemm, {}, present(2) ? first(3) : first(2)};
      if (auto v = r.f("alpha")) m->attributes.set("alpha", *v);
      if (auto v = r.f("beta")) m->attributes.set("beta", *v);
      if (auto v = r.i("transA")) m->attributes.set("transA", *v);
      if (auto v = r.i("transB")) m->attributes.set("transB", *v);
    } else if (t == "Conv") {
      if (!present(0) || !present(1) || dims(1).size() != 4 || dims(0).size() != 4)
        return std::nullopt;
      Ints kernel(dims(1).begin() + 2, dims(1).end());
      if (auto k = r.ints("kernel_shape"); k && *k != kernel) return std::nullopt;
      Ints strides = r.ints("strides").value_or(Ints{1, 1});
      Ints dilations = r.ints("dilations").value_or(Ints{1, 1});
      std::optional<Ints> pads = window_pads(r, dims(0), kernel, strides, dilations);
      if (!pads) return std::nullopt;
      m = Mapped{Op::kConv, {}, present(2) ? first(3) : first(2)};
      m->attributes.set("strides", strides);
      m->attributes.set("dilations", dilations);
      m->attributes.set("pads", *pads);
      m->attributes.set("group", r.i("group").value_or(1));
    } else if (t == "MaxPool" || t == "AveragePool") {
      if (dims(0).size() != 4) return std::nullopt;
      std::optional<Ints> kernel = r.ints("kernel_shape");
      if (!kernel || kernel->size() != 2) return std::nullopt;
      Ints strides = r.ints("strides").value_or(Ints{1, 1});
      Ints dilations = r.ints("dilations").value_or(Ints{1, 1});
      if (dilations != Ints{1, 1}) return std::nullopt;
      std::optional<Ints> pads = window_pads(r, dims(0), *kernel, strides, dilations);
      if (!pads) return std::nullopt;
      // ceil_mode rounds the output size up: the same windows as the IR's
      // (which rounds down) exactly when the division is exact.
      if (r.i("ceil_mode").value_or(0) != 0) {
        for (std::size_t k = 0; k < 2; ++k) {
          const std::int64_t span = (*kernel)[k],
                             padded = dims(0)[2 + k] + (*pads)[k] + (*pads)[k + 2];
          if (padded < span || (padded - span) % strides[k] != 0) return std::nullopt;
        }
      }
      m = Mapped{t == "MaxPool" ? Op::kMaxPool : Op::kAveragePool, {}, in};
      m->attributes.set("kernel_shape", *kernel);
      m->attributes.set("strides", strides);
      m->attributes.set("pads", *pads);
      if (t == "MaxPool") {
        r.i("storage_order");  // only affects the indices output
      } else {
        m->attributes.set("count_include_pad", r.i("count_include_pad").value_or(0));
      }
    } else if (t == "Clip") {
      m = Mapped{Op::kClip, {}, first(1)};
      if (opset_ < 11) {
        if (auto v = r.f("min")) m->attributes.set("min", *v);
        if (auto v = r.f("max")) m->attributes.set("max", *v);
      } else {
        for (int i = 1; i < 3; ++i) {
          if (!present(i)) continue;
          std::optional<double> v = constant_scalar(n.input(i));
          if (!v) return std::nullopt;
          m->attributes.set(i == 1 ? "min" : "max", *v);
        }
      }
    } else if (t == "Softmax") {
      std::int64_t axis = r.i("axis").value_or(opset_ < 13 ? 1 : -1);
      std::optional<std::int64_t> a = normalize_axis(axis, dims(0).size());
      // Before opset 13 Softmax flattened to 2-D at `axis`: the same only
      // when `axis` is the last one.
      if (!a || (opset_ < 13 && *a + 1 != static_cast<std::int64_t>(dims(0).size())))
        return std::nullopt;
      m = Mapped{Op::kSoftmax, {{"axis", axis}}, in};
    } else if (t == "LayerNormalization") {
      if (!present(2) || r.i("stash_type").value_or(1) != 1) return std::nullopt;
      m = Mapped{Op::kLayerNorm, {}, in};
      m->attributes.set("axis", r.i("axis").value_or(-1));
      m->attributes.set("epsilon", r.f("epsilon").value_or(1e-5));
    } else if (t == "BatchNormalization") {
      if (opset_ < 7 || r.i("training_mode").value_or(0) != 0 || r.i("spatial").value_or(1) != 1)
        return std::nullopt;
      r.f("momentum");  // training only
      m = Mapped{Op::kBatchNorm, {{"epsilon", r.f("epsilon").value_or(1e-5)}}, in};
    } else if (t == "ReduceMean") {
      m = Mapped{Op::kReduceMean, {}, in};
      m->attributes.set("axes", r.ints("axes").value_or(Ints{}));
      m->attributes.set("keepdims", r.i("keepdims").value_or(1));
    } else if (t == "Transpose") {
      m = Mapped{Op::kTranspose, {{"perm", r.ints("perm").value_or(Ints{})}}, in};
    } else if (t == "Reshape") {
      std::optional<Ints> shape = opset_ < 5 ? r.ints("shape") : constant_ints(input(n, 1));
      if (opset_ >= 5 && !shape) {
        // A computed shape: the inferred output shape, when it is static.
        absl::StatusOr<TensorType> out = value_type(n.output(0));
        if (!out.ok() || out->dtype == DType::kOther || !out->is_static()) return std::nullopt;
        shape = out->dims;
      }
      if (!shape) return std::nullopt;
      if (r.i("allowzero").value_or(0) != 0 && std::ranges::count(*shape, 0) > 0)
        return std::nullopt;
      m = Mapped{Op::kReshape, {{"shape", *shape}}, first(1)};
    } else if (t == "Flatten") {
      m = Mapped{Op::kFlatten, {{"axis", r.i("axis").value_or(1)}}, in};
    } else if (t == "Concat") {
      std::optional<std::int64_t> axis = r.i("axis");
      if (!axis) return std::nullopt;
      m = Mapped{Op::kConcat, {{"axis", *axis}}, in};
    } else if (t == "Split") {
      std::int64_t axis = r.i("axis").value_or(0);
      std::optional<std::int64_t> a = normalize_axis(axis, dims(0).size());
      if (!a) return std::nullopt;
      std::optional<Ints> split = opset_ < 13 ? r.ints("split") : constant_ints(input(n, 1));
      if (opset_ >= 13 && present(1) && !split) return std::nullopt;
      if (!split) {
        std::int64_t parts = n.output_size(), size = dims(0)[*a];
        if (size % parts != 0) return std::nullopt;
        split = Ints(static_cast<std::size_t>(parts), size / parts);
      }
      m = Mapped{Op::kSplit, {{"axis", axis}, {"split", *split}}, first(1)};
    } else if (t == "Slice") {
      m = Mapped{Op::kSlice, {}, first(1)};
      std::optional<Ints> starts, ends, axes, steps;
      if (opset_ < 10) {
        starts = r.ints("starts"), ends = r.ints("ends"), axes = r.ints("axes");
      } else {
        starts = constant_ints(input(n, 1)), ends = constant_ints(input(n, 2));
        if (present(3) && !(axes = constant_ints(n.input(3)))) return std::nullopt;
        if (present(4) && !(steps = constant_ints(n.input(4)))) return std::nullopt;
      }
      if (!starts || !ends) return std::nullopt;
      m->attributes.set("starts", *starts);
      m->attributes.set("ends", *ends);
      m->attributes.set("axes", axes.value_or(Ints{}));
      m->attributes.set("steps", steps.value_or(Ints{}));
    } else if (t == "Gather") {
      m = Mapped{Op::kGather, {{"axis", r.i("axis").value_or(0)}}, in};
    } else if (t == "Pad") {
      // Float tensors only: the IR's pad value is a float.
      if (r.s("mode").value_or("constant") != "constant" ||
          types_[in[0]].parts[0].dtype != DType::kFloat32)
        return std::nullopt;
      std::optional<Ints> pads;
      std::optional<double> value = 0.0;
      if (opset_ < 11) {
        pads = r.ints("pads");
        value = r.f("value").value_or(0.0);
      } else {
        pads = constant_ints(input(n, 1));
        if (present(2)) value = constant_scalar(n.input(2));
        if (present(3)) return std::nullopt;  // axes (opset 18)
      }
      if (!pads || !value) return std::nullopt;
      m = Mapped{Op::kPad, {{"pads", *pads}, {"value", *value}}, first(1)};
    } else if (t == "Dropout") {
      // Inference: the identity, unless training_mode is (or may be) true.
      if (opset_ < 7) return std::nullopt;
      if (present(2)) {
        auto it = constants_.find(n.input(2));
        if (it == constants_.end() || it->second.dtype() != DType::kBool ||
            it->second.size() != 1 || it->second.bytes()[0] != std::byte{0})
          return std::nullopt;
      }
      r.f("ratio");
      r.i("seed");
      m = Mapped{Op::kDropout, {}, first(1)};
    } else {
      return std::nullopt;
    }
    if (!r.all_read()) return std::nullopt;
    for (int i : m->inputs) {
      if (i < 0) return std::nullopt;
    }
    return m;
  }

  // Adds a known operator; false when it stays opaque (not mappable, or the
  // IR's type for it differs from ONNX's).
  absl::StatusOr<bool> add_known(const onnx::NodeProto& n) {
    std::optional<Mapped> m = map_known(n);
    if (!m) return false;
    absl::StatusOr<Attributes> a = normalize_attributes(m->op, m->attributes);
    if (!a.ok()) return false;
    std::vector<ValueType> in;
    for (int i : m->inputs) in.push_back(types_[i]);
    absl::StatusOr<ValueType> ir = infer_type(m->op, *a, in);
    if (!ir.ok() || ir->parts.size() != static_cast<std::size_t>(n.output_size())) return false;
    for (int o = 0; o < n.output_size(); ++o) {
      if (!agrees(ir->parts[o], n.output(o))) return false;
    }
    std::string name = ir->is_tuple ? n.output(0) + "_parts" : n.output(0);
    absl::StatusOr<int> id = append(m->op, std::move(*a), std::move(m->inputs), name);
    if (!id.ok()) return id.status();
    if (!types_[*id].is_tuple) {
      values_[n.output(0)] = *id;
      return true;
    }
    return add_tuple_gets(n, *id).ok();  // Split: a tuple, even of one part
  }

  absl::Status add_tuple_gets(const onnx::NodeProto& n, int tuple) {
    for (int o = 0; o < n.output_size(); ++o) {
      if (n.output(o).empty()) continue;
      absl::StatusOr<int> get =
          append(Op::kTupleGet, {{"index", std::int64_t{o}}}, {tuple}, n.output(o));
      if (!get.ok()) return get.status();
      values_[n.output(o)] = *get;
    }
    return absl::OkStatus();
  }

  // Whether the IR's type for a value agrees with what ONNX inferred for it
  // (dimensions ONNX left unknown agree with anything).
  bool agrees(const TensorType& ir, const std::string& name) const {
    auto it = types_by_name_.find(name);
    if (it == types_by_name_.end() || !it->second.has_tensor_type()) return true;
    absl::StatusOr<TensorType> onnx_type = tensor_type(it->second, name, /*need_static=*/false);
    if (!onnx_type.ok() || onnx_type->dtype != ir.dtype) return false;
    if (!it->second.tensor_type().has_shape()) return true;
    if (onnx_type->dims.size() != ir.dims.size()) return false;
    for (std::size_t i = 0; i < ir.dims.size(); ++i) {
      if (onnx_type->dims[i] >= 0 && onnx_type->dims[i] != ir.dims[i]) return false;
    }
    return true;
  }

  absl::Status add_opaque(const onnx::NodeProto& n, int k) {
    Attributes a{{"op_type", n.op_type()}, {"domain", n.domain()}};
    std::vector<int> inputs;
    Ints absent_in, absent_out;
    for (int i = 0; i < n.input_size(); ++i) {
      if (n.input(i).empty())
        absent_in.push_back(i);
      else
        inputs.push_back(values_.at(n.input(i)));
    }
    const std::set<std::string> outer = node_outer_names(n);
    if (!outer.empty()) a.set(kExplicitInputs, static_cast<std::int64_t>(inputs.size()));
    for (const std::string& name : outer) {
      auto it = values_.find(name);
      if (it == values_.end())
        return absl::InvalidArgumentError(
            fmt::format("a subgraph reads '{}', which is not computed before the node", name));
      inputs.push_back(it->second);
    }
    std::vector<TensorType> outputs;
    for (int o = 0; o < n.output_size(); ++o) {
      if (n.output(o).empty()) {
        absent_out.push_back(o);
        outputs.push_back(TensorType{DType::kOther, {}});
        continue;
      }
      absl::StatusOr<TensorType> t = value_type(n.output(o));
      if (!t.ok()) return t.status();
      if (t->dtype == DType::kOther)
        a.set(fmt::format("{}{}", kOutTypePrefix, o),
              serialize_base64(types_by_name_.at(n.output(o))));
      outputs.push_back(std::move(*t));
    }
    if (outputs.empty()) return absl::InvalidArgumentError("the node has no outputs");
    set_opaque_outputs(a, outputs);
    if (n.attribute_size() > 0) {
      onnx::NodeProto only_attributes;
      *only_attributes.mutable_attribute() = n.attribute();
      a.set(kAttrBlob, serialize_base64(only_attributes));
    }
    if (!absent_in.empty()) a.set(kAbsentInputs, absent_in);
    if (!absent_out.empty()) a.set(kAbsentOutputs, absent_out);
    if (is_random_op(n.op_type())) a.set(kInstance, fmt::format("{}#{}", n.name(), k));
    std::string name = n.output_size() == 1 ? n.output(0) : fmt::format("{}_parts", n.output(0));
    absl::StatusOr<int> id = append(Op::kOpaque, std::move(a), std::move(inputs), name);
    if (!id.ok()) return id.status();
    if (n.output_size() == 1) {
      values_[n.output(0)] = *id;
      return absl::OkStatus();
    }
    return add_tuple_gets(n, *id);
  }

  // Drops nodes no output depends on (graph inputs stay: they are the
  // model's interface).
  void prune() {
    const std::vector<bool> live = live_nodes(graph_);
    std::vector<int> remap(graph_.nodes.size(), -1);
    std::vector<Node> kept;
    for (int i = 0; i < graph_.size(); ++i) {
      if (!live[i]) {
        if (graph_.nodes[i].op == Op::kWeight)
          graph_.weights.erase(*graph_.nodes[i].attributes.get_string("name"));
        continue;
      }
      Node n = std::move(graph_.nodes[i]);
      for (int& in : n.inputs) in = remap[in];
      remap[i] = static_cast<int>(kept.size());
      kept.push_back(std::move(n));
    }
    graph_.nodes = std::move(kept);
    for (GraphOutput& o : graph_.outputs) o.node = remap[o.node];
  }

  std::string file_;
  const OnnxImportOptions& options_;
  std::int64_t opset_ = 0;
  Graph graph_;
  std::vector<ValueType> types_;
  absl::flat_hash_map<std::string, int> values_;
  absl::flat_hash_map<std::string, Tensor> constants_;
  absl::flat_hash_map<std::string, onnx::TypeProto> types_by_name_;
  SeededWeights seeded_;
};

}  // namespace

std::int64_t max_onnx_opset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 0 : it->second.second;
}

absl::StatusOr<Graph> parse_onnx_model(std::string_view bytes, const std::string& file,
                                       const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty()) return absl::InvalidArgumentError(fmt::format("{}: the file is empty", file));
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        fmt::format("{}: not an ONNX model (the protobuf does not parse; truncated or another "
                    "format?)",
                    file));
  }
  return Importer(file, options).run(model);
}

absl::StatusOr<Graph> load_onnx_model(const std::string& path, const OnnxImportOptions& options) {
  absl::StatusOr<std::string> bytes = read_text_file(path);
  if (!bytes.ok()) return bytes.status();
  return parse_onnx_model(*bytes, path, options);
}

absl::StatusOr<std::string> runtime_onnx_model(const std::string& path,
                                               const OnnxImportOptions& options) {
  absl::StatusOr<std::string> bytes = read_text_file(path);
  if (!bytes.ok()) return bytes.status();
  onnx::ModelProto model;
  if (!model.ParseFromString(*bytes))
    return absl::InvalidArgumentError(fmt::format("{}: not an ONNX model", path));
  // The copy may live elsewhere: external data goes inline; symbolic input
  // dimensions take the sizes the import gave them.
  if (absl::Status s = inline_external_data(model, std::filesystem::path(path).parent_path());
      !s.ok())
    return with_context(s, path);
  if (absl::Status s = resolve_input_dims(model, options); !s.ok()) return with_context(s, path);
  absl::StatusOr<SeededWeights> seeded = seeded_weights(model);
  if (!seeded.ok()) return with_context(seeded.status(), path);
  onnx::GraphProto* g = model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (const onnx::ValueInfoProto& v : g->input()) {
    auto it = seeded->find(v.name());
    if (it == seeded->end()) {
      *inputs.Add() = v;
      continue;
    }
    // The values the importer's weight gets (materialize_weight).
    std::optional<DType> dtype = onnx_io::dtype_from_onnx(v.type().tensor_type().elem_type());
    TensorType type{dtype.value_or(DType::kFloat32), {}};
    for (const auto& d : v.type().tensor_type().shape().dim()) type.dims.push_back(d.dim_value());
    Tensor value = random_tensor(type, stable_hash(v.name()), it->second.first, it->second.second);
    onnx_io::tensor_to_proto(value, v.name(), g->add_initializer());
  }
  *g->mutable_input() = std::move(inputs);
  auto* props = model.mutable_metadata_props();
  for (int i = props->size() - 1; i >= 0; --i) {
    if (props->Get(i).key() == kSeededWeights) props->DeleteSubrange(i, 1);
  }
  std::string out;
  model.SerializeToString(&out);
  return out;
}

absl::Status check_onnx_model(std::string_view bytes, const std::string& file) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return absl::InvalidArgumentError(fmt::format("{}: not an ONNX model", file));
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        fmt::format("{}: the ONNX checker rejects the model: {}", file, e.what()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> load_onnx_tensor(const std::string& path) {
  absl::StatusOr<std::string> bytes = read_text_file(path);
  if (!bytes.ok()) return bytes.status();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(*bytes))
    return absl::InvalidArgumentError(fmt::format("{}: not an ONNX tensor", path));
  absl::StatusOr<Tensor> t = onnx_io::tensor_from_proto(proto);
  if (!t.ok()) return with_context(t.status(), path);
  return t;
}

}  // namespace saturn::tensor

// The Python module `saturn` (pybind11) over the library API and the search
// environment:
//
//   import saturn
//   r = saturn.optimize(saturn.load("model.onnx"), search="mcts", budget_nodes=2000)
//   (the options of `saturn optimize`, optimize/options.h, as keywords)
//   r.save("model.opt.onnx"); print(r.cost_before, r.cost_after, r.rules_applied)
//
//   env = saturn.Environment(saturn.load("squeezenet"), cost="roofline")
//   obs = env.reset(); reward, done, info = env.step(env.legal_actions()[0])
//
// Errors in saturn (a bad file, an unknown option, an impossible budget)
// raise ValueError with saturn's message. Searches release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/base/status.h"
#include "saturn/saturn.h"

namespace py = pybind11;

namespace saturn::python {

namespace {

// A saturn error as a Python ValueError.
[[noreturn]] void raise(const absl::Status& status) {
  throw py::value_error(std::string(message(status)));
}

template <typename T>
T take(absl::StatusOr<T> value) {
  if (!value.ok()) raise(value.status());
  return *std::move(value);
}

void check(const absl::Status& status) {
  if (!status.ok()) raise(status);
}

// A model: a tensor graph, shared so that results and environments can hold
// the graph they came from.
struct Model {
  std::shared_ptr<const tensor::Graph> graph;

  static Model of(tensor::Graph g) {
    return Model{std::make_shared<const tensor::Graph>(std::move(g))};
  }
  std::map<std::string, int> op_counts() const {
    std::map<std::string, int> out;
    for (const auto& [op, n] : tensor::op_counts(*graph)) out[std::string(tensor::op_name(op))] = n;
    return out;
  }
};

// Whether numpy holds tensors of this element type byte for byte under the
// same name (the integers but int64, bool, float64).
bool numpy_bytes(tensor::DType dtype) {
  return tensor::is_plain_number(dtype) && dtype != tensor::DType::kFloat32 &&
         dtype != tensor::DType::kFloat16 && dtype != tensor::DType::kInt64;
}

// A tensor as a numpy array (float16 widened to float32).
py::array to_numpy(const tensor::Tensor& t) {
  std::vector<py::ssize_t> shape(t.dims().begin(), t.dims().end());
  if (t.dtype() == tensor::DType::kInt64) return py::array_t<std::int64_t>(shape, t.ints().data());
  if (numpy_bytes(t.dtype())) {
    py::array out(py::dtype(std::string(tensor::dtype_name(t.dtype()))), shape);
    const std::span<const std::byte> bytes = t.bytes();
    std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
    return out;
  }
  const tensor::Tensor f = tensor::widened(t);
  if (f.dtype() != tensor::DType::kFloat32)
    throw py::value_error(fmt::format("a {} tensor has no numpy form here", to_string(f.type())));
  return py::array_t<float>(shape, f.floats().data());
}

// A numpy array as a tensor of `like`'s element type (float32 and float16 from
// floats, every other plain type as numpy holds it).
tensor::Tensor from_numpy(const py::array& a, const tensor::TensorType& like,
                          const std::string& name) {
  tensor::Dims dims(a.shape(), a.shape() + a.ndim());
  if (dims != like.dims)
    throw py::value_error(fmt::format("input '{}' must have shape {}, has {}", name,
                                      tensor::to_string(like.dims), tensor::to_string(dims)));
  if (like.dtype == tensor::DType::kInt64) {
    auto v = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
    return tensor::Tensor(like, std::vector<std::int64_t>(v.data(), v.data() + v.size()));
  }
  if (numpy_bytes(like.dtype)) {
    const py::array v = py::module_::import("numpy").attr("ascontiguousarray")(
        a, py::dtype(std::string(tensor::dtype_name(like.dtype))));
    const auto* first = static_cast<const std::byte*>(v.data());
    return tensor::Tensor(like, std::vector<std::byte>(first, first + v.nbytes()));
  }
  auto v = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
  tensor::Tensor t(tensor::TensorType{tensor::DType::kFloat32, dims},
                   std::vector<float>(v.data(), v.data() + v.size()));
  return tensor::narrowed(t, like.dtype);
}

Model load(const std::string& name, const std::map<std::string, std::int64_t>& dims) {
  tensor::OnnxImportOptions onnx;
  for (const auto& [symbol, size] : dims) onnx.dims[symbol] = size;
  return Model::of(take(tensor::load_model(name, onnx)));
}

std::shared_ptr<const CostModel> cost_model(const std::string& spec) {
  return take(cost_model_by_name(spec));
}

struct Result {
  Model model;  // the optimized graph (result.graph moved here)
  Model input;
  OptimizeResult result;
  OptimizeOptions options;

  // The report `saturn optimize --report` writes, as a dict.
  py::object report() const {
    OptimizeResult view = result;
    view.graph = *model.graph;
    const std::string text = optimize_report(*input.graph, view, options).dump();
    return py::module_::import("json").attr("loads")(text);
  }
  std::vector<std::pair<std::string, std::size_t>> rules_applied() const {
    std::vector<std::pair<std::string, std::size_t>> out;
    for (const RuleApplication& r : result.rules_applied) out.emplace_back(r.name, r.count);
    return out;
  }
  void save(const std::string& path) const {
    OptimizeResult view;
    view.decision = result.decision;
    view.graph = *model.graph;
    check(save_result(view, path));
  }
};

// One keyword argument as the option table's text: a flag from a bool, a
// list option from a list of strings (or one string), a value from its str().
void set_keyword(OptimizeOptions& options, const std::string& keyword, const py::handle& value) {
  std::string name = keyword;
  std::replace(name.begin(), name.end(), '_', '-');
  const OptionInfo* info = find_option(name);
  if (info == nullptr) raise(set_option(options, keyword, ""));  // names the options
  auto set = [&](const std::string& text) { check(set_option(options, name, text)); };
  if (info->kind == OptionInfo::Kind::kFlag) {
    if (!py::isinstance<py::bool_>(value))
      throw py::value_error(fmt::format("option {} takes True or False", keyword));
    set(value.cast<bool>() ? "true" : "false");
  } else if (info->kind == OptionInfo::Kind::kList && !py::isinstance<py::str>(value)) {
    for (const py::handle& item : value) set(py::str(item));
  } else {
    if (py::isinstance<py::bool_>(value) || value.is_none())
      throw py::value_error(fmt::format("option {} takes a value, got {}", keyword,
                                        std::string(py::str(py::repr(value)))));
    set(py::str(value));
  }
}

Result optimize_model(const Model& model, const py::kwargs& keywords) {
  OptimizeOptions options;
  for (const auto& [key, value] : keywords) set_keyword(options, py::str(key), value);
  absl::StatusOr<OptimizeResult> r;
  {
    py::gil_scoped_release release;
    r = optimize(*model.graph, options);
  }
  OptimizeResult result = take(std::move(r));
  Model out = Model::of(std::move(result.graph));  // Result::model holds it
  return Result{std::move(out), model, std::move(result), std::move(options)};
}

// The docstring of optimize(): the option table's names and help.
std::string optimize_doc() {
  std::string doc =
      "optimize(model, **options): optimizes a model as `saturn optimize` does, with the same "
      "options and defaults (NAME=VALUE for --NAME VALUE, underscores for dashes; a flag takes "
      "True or False, rules a list of files). The GIL is released while it runs.\n\nOptions:\n";
  for (const OptionInfo& o : optimize_options()) {
    std::string name(o.name);
    std::replace(name.begin(), name.end(), '-', '_');
    doc += fmt::format("  {}: {}\n", name, option_help(o));
  }
  return doc;
}

// The search environment, with what it needs kept alive beside it.
class PyEnvironment {
 public:
  PyEnvironment(const Model& model, const std::vector<std::string>& rule_files,
                const std::string& cost, std::size_t budget_nodes, double time_limit)
      : graph_(model.graph), cost_(cost_model(cost)) {
    if (!rule_files.empty())
      check(
          check_rule_files(rule_files, language_, conditions_, default_rule_cache_dir()).status());
    rules_ = take(rule_files.empty() ? load_tensor_rules(language_, conditions_)
                                     : load_tensor_rule_files(rule_files, language_, conditions_));
    EnvironmentConfig config{.graph = graph_.get(), .rules = &rules_, .cost_model = cost_.get()};
    config.budget.max_nodes = budget_nodes;
    config.budget.time_limit_seconds = time_limit;
    env_ = take(Environment::create(config));
  }

  py::dict reset() {
    env_->reset();  // forgets the checkpoints too
    checkpoints_ = 0;
    return observation();
  }
  std::vector<std::size_t> legal_actions() {
    py::gil_scoped_release release;
    return env_->legal_actions();
  }
  py::tuple step(std::size_t action) {
    if (action > env_->stop_action())
      throw py::value_error(
          fmt::format("action {} is not a rule index (0 to {}) or the stop "
                      "action {}",
                      action, env_->num_rules() - 1, env_->stop_action()));
    StepResult r;
    {
      py::gil_scoped_release release;
      r = env_->step(action);
    }
    py::dict info;
    info["applied"] = r.applied;
    info["filtered"] = r.filtered;
    info["conflicts"] = r.conflicts;
    return py::make_tuple(r.reward, r.done, info);
  }

  // Op counts, e-graph size, costs, and the current best graph as arrays:
  // `node_ops` (each node's operator index, tensor/ops.h order) and
  // `edge_index` (2 x E: input node, consumer node).
  py::dict observation() {
    Observation o;
    absl::StatusOr<tensor::Graph> best;
    {
      py::gil_scoped_release release;
      o = env_->observe(&best);
    }
    py::dict d;
    d["op_counts"] =
        py::array_t<int>(static_cast<py::ssize_t>(o.op_counts.size()), o.op_counts.data());
    d["nodes"] = o.nodes;
    d["classes"] = o.classes;
    d["bytes"] = o.bytes;
    d["cost"] = o.cost;
    d["initial_cost"] = o.initial_cost;
    d["steps"] = o.steps;
    const tensor::Graph& g = take(std::move(best));
    py::array_t<std::int32_t> ops(static_cast<py::ssize_t>(g.nodes.size()));
    std::vector<std::int64_t> from, to;
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      ops.mutable_at(static_cast<py::ssize_t>(i)) = static_cast<std::int32_t>(g.nodes[i].op);
      for (int in : g.nodes[i].inputs) {
        from.push_back(in);
        to.push_back(static_cast<std::int64_t>(i));
      }
    }
    py::array_t<std::int64_t> edges({py::ssize_t{2}, static_cast<py::ssize_t>(from.size())});
    for (std::size_t e = 0; e < from.size(); ++e) {
      edges.mutable_at(0, static_cast<py::ssize_t>(e)) = from[e];
      edges.mutable_at(1, static_cast<py::ssize_t>(e)) = to[e];
    }
    d["node_ops"] = ops;
    d["edge_index"] = edges;
    return d;
  }

  void checkpoint() {
    env_->checkpoint();
    ++checkpoints_;
  }
  void restore() {
    if (checkpoints_ == 0) throw py::value_error("restore() without a checkpoint()");
    env_->restore();
    --checkpoints_;
  }

  std::size_t num_actions() const { return env_->num_rules() + 1; }
  std::size_t stop_action() const { return env_->stop_action(); }
  // Applies `rules` to every match, `iterations` times or until nothing
  // changes (a pass of the default order: search/search.h). The reward is the
  // pass's cost reduction over the input's cost.
  py::tuple step_rules(const std::vector<std::size_t>& rules, std::size_t iterations) {
    for (std::size_t r : rules)
      if (r >= env_->num_rules())
        throw py::value_error(
            fmt::format("rule {} is not a rule index (0 to {})", r, env_->num_rules() - 1));
    SaturationResult pass;
    double before = 0, after = 0;
    {
      py::gil_scoped_release release;
      before = env_->cost();
      pass = saturate(*env_, rules, iterations, iterations);
      after = env_->cost();
    }
    const double initial = env_->initial_cost();
    py::dict info;
    info["applied"] = pass.applied;
    info["conflicts"] = pass.conflicts;
    info["iterations"] = pass.iterations;
    info["stop_reason"] = std::string(to_string(pass.stop));
    return py::make_tuple(initial > 0 ? (before - after) / initial : 0.0, !env_->has_budget(),
                          info);
  }
  std::vector<std::string> rule_groups() const {
    std::vector<std::string> groups;
    for (std::size_t r = 0; r < env_->num_rules(); ++r) groups.push_back(env_->rule(r).group);
    return groups;
  }
  std::vector<std::string> rule_names() const {
    std::vector<std::string> names;
    for (std::size_t r = 0; r < env_->num_rules(); ++r) names.push_back(env_->rule(r).name);
    return names;
  }
  double cost() {
    py::gil_scoped_release release;
    return env_->cost();
  }
  Model best_model() {
    absl::StatusOr<tensor::Graph> g;
    {
      py::gil_scoped_release release;
      env_->observe(&g);  // the graph observation() describes
    }
    return Model::of(take(std::move(g)));
  }

 private:
  std::shared_ptr<const tensor::Graph> graph_;
  tensor::TensorLanguage language_;
  ConditionRegistry conditions_ = tensor_conditions();
  RuleSet rules_;
  std::shared_ptr<const CostModel> cost_;
  std::unique_ptr<Environment> env_;
  std::size_t checkpoints_ = 0;  // taken and not yet restored
};

}  // namespace

PYBIND11_MODULE(_saturn, m) {
  m.doc() = "saturn: a superoptimizer for tensor computation graphs (the package's extension)";
  m.attr("__version__") = SATURN_VERSION;

  py::class_<Model>(m, "Model", "A tensor graph (ONNX, saturn JSON or a zoo model)")
      .def_static(
          "from_onnx_bytes",
          [](const py::bytes& bytes, const std::string& name,
             const std::map<std::string, std::int64_t>& dims) {
            tensor::OnnxImportOptions onnx;
            for (const auto& [symbol, size] : dims) onnx.dims[symbol] = size;
            return Model::of(take(tensor::parse_onnx_model(std::string(bytes), name, onnx)));
          },
          py::arg("data"), py::arg("name") = "model.onnx",
          py::arg("dims") = std::map<std::string, std::int64_t>{},
          "A model from serialized ONNX (onnx.ModelProto.SerializeToString())")
      .def("to_onnx_bytes",
           [](const Model& model) { return py::bytes(take(tensor::to_onnx_model(*model.graph))); })
      .def("save", [](const Model& model,
                      const std::string& path) { check(tensor::save_model(*model.graph, path)); })
      .def(
          "random_inputs",
          [](const Model& model, std::uint64_t seed) {
            py::dict out;
            for (const auto& [name, t] : tensor::random_inputs(*model.graph, seed))
              out[py::str(name)] = to_numpy(t);
            return out;
          },
          py::arg("seed") = 0, "Seeded random values for every graph input, by name")
      .def(
          "run",
          [](const Model& model, const py::dict& inputs) {
            tensor::Inputs in;
            for (const tensor::Node& n : model.graph->nodes) {
              if (n.op != tensor::Op::kInput) continue;
              const std::string name = *n.attributes.get_string("name");
              if (!inputs.contains(name))
                throw py::value_error(fmt::format("no value given for input '{}'", name));
              const tensor::TensorType like{tensor::parse_dtype(*n.attributes.get_string("dtype"))
                                                .value_or(tensor::DType::kFloat32),
                                            *n.attributes.get_ints("shape")};
              in[name] = from_numpy(py::array::ensure(inputs[py::str(name)]), like, name);
            }
            absl::StatusOr<std::vector<tensor::Tensor>> out;
            {
              py::gil_scoped_release release;
              out = tensor::evaluate(*model.graph, in);
            }
            py::dict results;
            const std::vector<tensor::Tensor> values = take(std::move(out));
            for (std::size_t i = 0; i < values.size(); ++i)
              results[py::str(model.graph->outputs[i].name)] = to_numpy(values[i]);
            return results;
          },
          py::arg("inputs"), "Runs the model in saturn's interpreter: outputs by name")
      .def_property_readonly("name", [](const Model& model) { return model.graph->name; })
      .def_property_readonly("num_ops",
                             [](const Model& model) { return tensor::total_ops(*model.graph); })
      .def_property_readonly("op_counts", &Model::op_counts)
      .def("__repr__", [](const Model& model) {
        return fmt::format("<saturn.Model '{}': {} ops>", model.graph->name,
                           tensor::total_ops(*model.graph));
      });

  m.def("load", &load, py::arg("path"), py::arg("dims") = std::map<std::string, std::int64_t>{},
        "An ONNX file (dims sizes its symbolic dimensions), a saturn JSON file, or a zoo model");

  py::class_<Result>(m, "Result", "What optimize() found")
      .def_readonly("model", &Result::model)
      .def_property_readonly("cost_before", [](const Result& r) { return r.result.cost_before; })
      .def_property_readonly("cost_after", [](const Result& r) { return r.result.cost_after; })
      .def_property_readonly("kept_input", [](const Result& r) { return r.result.kept_input(); })
      .def_property_readonly("rules_applied", &Result::rules_applied)
      .def_property_readonly("report", &Result::report)
      .def("save", &Result::save,
           "Writes the model (.onnx or .json); a kept ONNX input as a copy of its file");

  m.def("optimize", &optimize_model, py::arg("model"), optimize_doc().c_str());
  std::vector<std::string> names;
  for (const OptionInfo& o : optimize_options()) names.emplace_back(o.name);
  m.attr("OPTIONS") = names;
  m.attr("DEFAULT_ORDER") = DefaultOrderOptions{}.groups;
  std::vector<std::string> op_names;
  for (tensor::Op op : tensor::all_ops()) op_names.emplace_back(tensor::op_name(op));
  m.attr("OP_NAMES") = op_names;  // the order of an observation's op_counts and node_ops
  m.attr("DEFAULT_PASS_ITERATIONS") = DefaultOrderOptions{}.iterations_per_group;

  py::class_<PyEnvironment>(m, "Environment",
                            "The search environment: rule applications as actions")
      .def(py::init<const Model&, const std::vector<std::string>&, const std::string&, std::size_t,
                    double>(),
           py::arg("model"), py::arg("rules") = std::vector<std::string>{},
           py::arg("cost") = std::string(kDefaultCost), py::arg("budget_nodes") = kDefaultMaxNodes,
           py::arg("time_limit") = kDefaultTimeLimitSeconds)
      .def("reset", &PyEnvironment::reset)
      .def("step", &PyEnvironment::step, py::arg("action"),
           "Applies a rule (or stops): (reward, done, info)")
      .def("step_rules", &PyEnvironment::step_rules, py::arg("rules"), py::arg("iterations") = 1,
           "Applies the rules to every match, `iterations` times or until nothing changes: "
           "(reward, done, info), info with the pass's applied matches, conflicts, "
           "iterations and stop_reason")
      .def("legal_actions", &PyEnvironment::legal_actions)
      .def("observation", &PyEnvironment::observation)
      .def("checkpoint", &PyEnvironment::checkpoint, "Remembers the state (checkpoints nest)")
      .def("restore", &PyEnvironment::restore, "Back to the latest checkpoint, which is forgotten")
      .def("cost", &PyEnvironment::cost)
      .def("best_model", &PyEnvironment::best_model)
      .def_property_readonly("num_actions", &PyEnvironment::num_actions)
      .def_property_readonly("stop_action", &PyEnvironment::stop_action)
      .def_property_readonly("rule_names", &PyEnvironment::rule_names)
      .def_property_readonly("rule_groups", &PyEnvironment::rule_groups);
}

}  // namespace saturn::python

#include "saturn/tensor/interpreter/interpreter.h"

#include "saturn/base/status.h"
#include "fmt/format.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels.h"

namespace saturn::tensor {

namespace {

std::string input_name(const Node& n) { return *n.attributes.get_string("name"); }

}  // namespace

absl::StatusOr<std::vector<Tensor>> evaluate(const Graph& graph, const Inputs& inputs) {
  absl::StatusOr<std::vector<ValueType>> types = infer_types(graph);
  if (!types.ok()) return types.status();
  // Remaining uses of each node, so values can be dropped early.
  std::vector<int> uses(graph.nodes.size(), 0);
  for (const Node& n : graph.nodes) {
    for (int in : n.inputs) ++uses[in];
  }
  for (const GraphOutput& o : graph.outputs) ++uses[o.node];

  std::vector<std::vector<Tensor>> values(graph.nodes.size());
  std::vector<Tensor> args;
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    auto where = [&] { return fmt::format("node {} ({})", node_label(graph, i), op_name(n.op)); };
    if (n.op == Op::kInput) {
      auto it = inputs.find(input_name(n));
      if (it == inputs.end())
        return absl::InvalidArgumentError(
            fmt::format("no value given for input '{}'", input_name(n)));
      if (it->second.type() != (*types)[i].tensor()) {
        return absl::InvalidArgumentError(fmt::format("input '{}' must be {}, is {}", input_name(n),
                                                      to_string((*types)[i]),
                                                      to_string(it->second.type())));
      }
      values[i] = {it->second};
    } else if (n.op == Op::kWeight) {
      absl::StatusOr<Tensor> w = materialize_weight(graph, n);
      if (!w.ok()) return with_context(w.status(), where());
      values[i] = {std::move(*w)};
    } else if (n.op == Op::kTupleGet) {
      values[i] = {values[n.inputs[0]][*n.attributes.get_int("index")]};
    } else if (n.op == Op::kTuple) {
      for (int in : n.inputs) values[i].push_back(values[in][0]);
    } else {
      args.clear();
      for (int in : n.inputs) args.push_back(values[in][0]);
      absl::StatusOr<std::vector<Tensor>> out = evaluate_op(n.op, n.attributes, args);
      if (!out.ok()) return with_context(out.status(), where());
      values[i] = std::move(*out);
    }
    for (int in : n.inputs) {
      if (--uses[in] == 0) values[in].clear();
    }
  }
  std::vector<Tensor> result;
  for (const GraphOutput& o : graph.outputs) {
    if (values[o.node].size() != 1) {
      return absl::InvalidArgumentError(
          fmt::format("output '{}' is a tuple, not a tensor", o.name));
    }
    result.push_back(values[o.node][0]);
  }
  return result;
}

Inputs random_inputs(const Graph& graph, std::uint64_t seed) {
  // Upper bounds for int64 inputs that index a Gather.
  absl::flat_hash_map<int, std::int64_t> index_bound;
  absl::StatusOr<std::vector<ValueType>> types = infer_types(graph);
  if (types.ok()) {
    for (const Node& n : graph.nodes) {
      if (n.op != Op::kGather) continue;
      const Dims& data = (*types)[n.inputs[0]].tensor().dims;
      std::optional<std::int64_t> axis = normalize_axis(*n.attributes.get_int("axis"), data.size());
      if (axis) index_bound[n.inputs[1]] = data[*axis];
    }
  }
  Inputs inputs;
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (n.op != Op::kInput) continue;
    TensorType t{parse_dtype(*n.attributes.get_string("dtype")).value_or(DType::kFloat32),
                 *n.attributes.get_ints("shape")};
    std::uint64_t s = seed ^ stable_hash(input_name(n));
    if (auto known = graph.size_values.find(input_name(n));
        known != graph.size_values.end() && known->second->type() == t) {
      inputs[input_name(n)] = *known->second;
    } else if (is_float(t.dtype)) {
      inputs[input_name(n)] = random_tensor(t, s, -1.0f, 1.0f);
    } else {
      auto it = index_bound.find(i);
      inputs[input_name(n)] =
          random_tensor(t, s, 0.0f, static_cast<float>(it == index_bound.end() ? 10 : it->second));
    }
  }
  return inputs;
}

}  // namespace saturn::tensor

// The operator schemas of tools/gen-operator-schemas.py's table, and the
// check libonnx's checker makes with its own.
#include "saturn/onnx/operator_schemas.h"

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"

namespace saturn::tensor::onnx_io {

namespace {

struct OperatorSchema {
  std::string_view domain, op;
  int since_version;
  std::string_view inputs;  // one letter a formal parameter: S single, O optional, V variadic
  int min_inputs, max_inputs;
  std::string_view outputs;
  int min_outputs, max_outputs;
  std::string_view required_attributes;  // separated by spaces
};

constexpr OperatorSchema kSchemas[] = {
#include "operator_schemas.inc"
};

// Each operator's schemas by (domain, operator), oldest first.
using SchemasByOperator = absl::flat_hash_map<std::pair<std::string_view, std::string_view>,
                                              std::vector<const OperatorSchema*>>;

const SchemasByOperator& schemas() {
  static const auto* by_op = [] {
    auto* m = new SchemasByOperator;
    for (const OperatorSchema& s : kSchemas) (*m)[{s.domain, s.op}].push_back(&s);
    for (auto& [key, versions] : *m)
      std::ranges::sort(versions, {}, &OperatorSchema::since_version);
    return m;
  }();
  return *by_op;
}

// The letter of the formal parameter at `index` (a variadic last one
// stands for all after it).
char formal_at(std::string_view formals, int index) {
  if (formals.empty()) return 'V';
  return index < static_cast<int>(formals.size()) ? formals[index] : formals.back();
}

absl::Status check_values(const google::protobuf::RepeatedPtrField<std::string>& names,
                          std::string_view formals, int fewest, int most, std::string_view what,
                          std::string_view schema) {
  const int count = names.size();
  if (count < fewest || count > most) {
    const std::string range = fewest == most ? fmt::format("{}", fewest)
                              : most == std::numeric_limits<int>::max()
                                  ? fmt::format("at least {}", fewest)
                                  : fmt::format("{} to {}", fewest, most);
    return absl::InvalidArgumentError(
        fmt::format("{} takes {} {}{}, the node has {}", schema, range, what,
                    most == 1 ? "" : "s", count));
  }
  for (int i = 0; i < count; ++i) {
    if (names[i].empty() && formal_at(formals, i) == 'S')
      return absl::InvalidArgumentError(fmt::format("{} {} of {} is required but empty", what, i, schema));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status check_operator_schema(const onnx::NodeProto& n, std::string_view domain,
                                   std::int64_t opset) {
  if (domain == "ai.onnx") domain = "";
  auto it = schemas().find(std::pair{domain, std::string_view(n.op_type())});
  if (it == schemas().end()) return absl::OkStatus();
  const OperatorSchema* in_force = nullptr;
  for (const OperatorSchema* s : it->second)
    if (s->since_version <= opset) in_force = s;
  if (in_force == nullptr) return absl::OkStatus();
  const OperatorSchema& s = *in_force;
  const std::string schema =
      domain.empty() ? fmt::format("{}-{}", s.op, s.since_version)
                     : fmt::format("{} {}-{}", domain, s.op, s.since_version);
  if (absl::Status st =
          check_values(n.input(), s.inputs, s.min_inputs, s.max_inputs, "input", schema);
      !st.ok())
    return st;
  if (absl::Status st =
          check_values(n.output(), s.outputs, s.min_outputs, s.max_outputs, "output", schema);
      !st.ok())
    return st;
  std::string_view required = s.required_attributes;
  while (!required.empty()) {
    const std::size_t end = std::min(required.find(' '), required.size());
    const std::string_view name = required.substr(0, end);
    required.remove_prefix(std::min(end + 1, required.size()));
    const auto named = [&](const onnx::AttributeProto& a) { return a.name() == name; };
    if (!name.empty() && std::ranges::none_of(n.attribute(), named))
      return absl::InvalidArgumentError(
          fmt::format("{} requires attribute {}, which the node lacks", schema, name));
  }
  return absl::OkStatus();
}

}  // namespace saturn::tensor::onnx_io

// ONNX import and export: Debian's libonnx-testdata node models round-trip
// without loss and, where the interpreter runs them, reproduce the reference
// outputs; the fixtures import, export and evaluate to the same outputs;
// malformed files fail with their error.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "egraph/file.h"
#include "egraph/status.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "tensor/interpreter.h"
#include "tensor/onnx.h"

namespace saturn::tensor {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> testdata_models() {
  std::vector<fs::path> out;
  const fs::path root = SATURN_ONNX_TESTDATA;
  if (!fs::exists(root)) return out;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (fs::exists(entry.path() / "model.onnx")) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What must survive a round trip: the interface, and each opaque operator
// with its attributes.
std::vector<std::string> signature(const Graph& g) {
  std::vector<std::string> out;
  absl::StatusOr<std::vector<ValueType>> types = infer_types(g);
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == Op::kInput)
      out.push_back(fmt::format("input {} {}", *n.attributes.get_string("name"),
                                types.ok() ? to_string((*types)[i]) : "?"));
    if (n.op == Op::kOpaque) {
      std::string line = fmt::format("opaque {} {}", *n.attributes.get_string("op_type"),
                                     n.attributes.to_string());
      out.push_back(line);
    }
  }
  for (const GraphOutput& o : g.outputs)
    out.push_back(fmt::format("output {} {}", o.name, types.ok() ? to_string((*types)[o.node]) : "?"));
  std::sort(out.begin(), out.end());
  return out;
}

bool has_opaque(const Graph& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(),
                     [](const Node& n) { return n.op == Op::kOpaque; });
}

// Compares a graph's outputs on the reference inputs with the reference
// outputs; "" when they match.
std::string check_reference(const Graph& g, const fs::path& dir) {
  const fs::path data = dir / "test_data_set_0";
  Inputs inputs;
  int k = 0;
  for (const Node& n : g.nodes) {
    if (n.op != Op::kInput) continue;
    absl::StatusOr<Tensor> t = load_onnx_tensor((data / fmt::format("input_{}.pb", k++)).string());
    if (!t.ok()) return std::string(t.status().message());
    inputs[*n.attributes.get_string("name")] = *t;
  }
  absl::StatusOr<std::vector<Tensor>> out = evaluate(g, inputs);
  if (!out.ok()) return std::string(out.status().message());
  for (std::size_t i = 0; i < out->size(); ++i) {
    absl::StatusOr<Tensor> want = load_onnx_tensor((data / fmt::format("output_{}.pb", i)).string());
    if (!want.ok()) return std::string(want.status().message());
    double err = max_error_ratio((*out)[i], *want, 1e-3, 1e-4);
    if (!(err <= 1.0))
      return fmt::format("output {} differs from the reference (error ratio {})", i, err);
  }
  return "";
}

TEST(OnnxTestdata, EveryNodeModelRoundTripsAndMatchesTheReference) {
  std::vector<fs::path> models = testdata_models();
  if (models.empty()) GTEST_SKIP() << "libonnx-testdata is not installed at " << SATURN_ONNX_TESTDATA;
  int evaluated = 0, opaque = 0;
  std::vector<std::string> failures;
  for (const fs::path& dir : models) {
    const std::string name = dir.filename().string();
    absl::StatusOr<Graph> g = load_onnx_model((dir / "model.onnx").string());
    if (!g.ok()) {
      failures.push_back(fmt::format("{}: import: {}", name, message(g.status())));
      continue;
    }
    absl::StatusOr<std::string> bytes = to_onnx_model(*g);
    if (!bytes.ok()) {
      failures.push_back(fmt::format("{}: export: {}", name, message(bytes.status())));
      continue;
    }
    absl::StatusOr<Graph> back = parse_onnx_model(*bytes, name + " (exported)");
    if (!back.ok()) {
      failures.push_back(fmt::format("{}: re-import: {}", name, message(back.status())));
      continue;
    }
    if (signature(*g) != signature(*back)) {
      failures.push_back(fmt::format("{}: the round trip changed the interface or an opaque node", name));
      continue;
    }
    if (has_opaque(*g)) {
      ++opaque;
      continue;
    }
    ++evaluated;
    for (const Graph* graph : {&*g, &*back}) {
      std::string problem = check_reference(*graph, dir);
      if (!problem.empty()) {
        failures.push_back(fmt::format("{}{}: {}", name, graph == &*g ? "" : " (round trip)", problem));
        break;
      }
    }
  }
  std::string report;
  for (const std::string& f : failures) report += f + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << models.size() << " models fail:\n"
                                << report;
  std::printf("libonnx-testdata: %zu models round-trip; %d evaluated against the reference "
              "outputs, %d keep opaque operators\n",
              models.size(), evaluated, opaque);
}

}  // namespace
}  // namespace saturn::tensor

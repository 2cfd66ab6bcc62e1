// ONNX import and export: Debian's libonnx-testdata node models round-trip
// without loss and, where the interpreter runs them, reproduce the reference
// outputs; malformed files fail with their error. (The fixtures' optimization
// is in onnx_fixture_test.cc: this binary needs no search, so that it is cheap
// to build under the sanitizers.)
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <sys/wait.h>

#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/json/json_model.h"
#include "saturn/onnx/importer.h"
#include "saturn/onnx/onnx.h"
#include "saturn/tests/onnx_models.h"

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
    out.push_back(
        fmt::format("output {} {}", o.name, types.ok() ? to_string((*types)[o.node]) : "?"));
  std::sort(out.begin(), out.end());
  return out;
}

// Sizes for the symbolic input dimensions of a test model, read from its
// reference inputs (a user gives them on the command line).
OnnxImportOptions reference_dims(const fs::path& dir) {
  OnnxImportOptions options;
  onnx::ModelProto model;
  std::ifstream in(dir / "model.onnx", std::ios::binary);
  if (!model.ParseFromIstream(&in)) return options;
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  int k = 0;
  for (const auto& v : model.graph().input()) {
    if (initializers.contains(v.name())) continue;
    const fs::path data = dir / "test_data_set_0" / fmt::format("input_{}.pb", k++);
    if (!v.type().has_tensor_type()) continue;
    absl::StatusOr<Tensor> t = load_onnx_tensor(data.string());
    if (!t.ok()) continue;
    const auto& dims = v.type().tensor_type().shape().dim();
    for (int d = 0; d < dims.size() && d < static_cast<int>(t->dims().size()); ++d) {
      if (!dims[d].dim_param().empty()) options.dims[dims[d].dim_param()] = t->dims()[d];
    }
  }
  return options;
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
    absl::StatusOr<Tensor> want =
        load_onnx_tensor((data / fmt::format("output_{}.pb", i)).string());
    if (!want.ok()) return std::string(want.status().message());
    double err = max_error_ratio((*out)[i], *want, 1e-3, 1e-4);
    if (!(err <= 1.0))
      return fmt::format("output {} differs from the reference (error ratio {})", i, err);
  }
  return "";
}

// Node tests whose reference outputs onnxruntime does not give either; the
// interpreter computes what onnxruntime computes, since the values it
// folds into a written model must be the runtime's. Resize by scales with
// align_corners where the scale does not give a whole length: the
// reference maps coordinates through the unfloored length (input * scale),
// onnxruntime 1.30 through the output's (4 -> 2 at 0.6, linear: 1, 3.14
// against onnxruntime's 1, 4).
bool runtime_differs_from_reference(const std::string& name) {
  return name == "test_resize_downsample_scales_linear_align_corners" ||
         name == "test_resize_downsample_scales_cubic_align_corners";
}

TEST(OnnxTestdata, EveryNodeModelRoundTripsAndMatchesTheReference) {
  std::vector<fs::path> models = testdata_models();
  if (models.empty())
    GTEST_SKIP() << "libonnx-testdata is not installed at " << SATURN_ONNX_TESTDATA;
  int evaluated = 0, opaque = 0;
  std::vector<std::string> failures;
  for (const fs::path& dir : models) {
    const std::string name = dir.filename().string();
    absl::StatusOr<Graph> g = load_onnx_model((dir / "model.onnx").string(), reference_dims(dir));
    if (!g.ok()) {
      failures.push_back(fmt::format("{}: import: {}", name, message(g.status())));
      continue;
    }
    absl::StatusOr<std::string> bytes = to_onnx_model(*g);
    if (!bytes.ok()) {
      failures.push_back(fmt::format("{}: export: {}", name, message(bytes.status())));
      continue;
    }
    absl::StatusOr<Graph> back =
        parse_onnx_model(*bytes, name + " (exported)", reference_dims(dir));
    if (!back.ok()) {
      failures.push_back(fmt::format("{}: re-import: {}", name, message(back.status())));
      continue;
    }
    if (const std::vector<std::string> before = signature(*g), after = signature(*back);
        before != after) {
      std::vector<std::string> lost, gained;
      std::ranges::set_difference(before, after, std::back_inserter(lost));
      std::ranges::set_difference(after, before, std::back_inserter(gained));
      failures.push_back(fmt::format(
          "{}: the round trip changed the interface or an opaque node: lost [{}], gained [{}]",
          name, fmt::join(lost, "; "), fmt::join(gained, "; ")));
      continue;
    }
    if (has_opaque(*g)) {
      ++opaque;
      continue;
    }
    if (runtime_differs_from_reference(name)) continue;
    ++evaluated;
    for (const Graph* graph : {&*g, &*back}) {
      std::string problem = check_reference(*graph, dir);
      if (!problem.empty()) {
        failures.push_back(
            fmt::format("{}{}: {}", name, graph == &*g ? "" : " (round trip)", problem));
        break;
      }
    }
  }
  std::string report;
  for (const std::string& f : failures) report += f + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << models.size() << " models fail:\n"
                                << report;
  std::printf(
      "libonnx-testdata: %zu models round-trip; %d evaluated against the reference "
      "outputs, %d keep opaque operators\n",
      models.size(), evaluated, opaque);
}

void expect_error(const absl::StatusOr<Graph>& g, std::string_view text) {
  ASSERT_FALSE(g.ok());
  const std::string_view m = message(g.status());
  EXPECT_NE(m.find(text), std::string_view::npos) << m;
  EXPECT_NE(m.find("bad.onnx"), std::string_view::npos) << m;
}

TEST(OnnxErrors, ValidSmallModelImports) {
  absl::StatusOr<Graph> g = parse_onnx_model(bytes_of(relu_model()), "bad.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(op_counts(*g).at(Op::kRelu), 1);
}

TEST(OnnxErrors, TruncatedFile) {
  std::string bytes = *read_text_file(std::string(SATURN_FIXTURES) + "/squeezenet1_1.onnx");
  expect_error(parse_onnx_model(bytes.substr(0, bytes.size() / 2), "bad.onnx"),
               "not an ONNX model");
}

TEST(OnnxErrors, WrongMagicAndEmptyFile) {
  expect_error(parse_onnx_model("{\"format\": \"saturn-model\"}", "bad.onnx"), "not an ONNX model");
  expect_error(parse_onnx_model("", "bad.onnx"), "empty");
}

// Reads `bytes` as "bad.onnx": true for a model that type-checks; an error
// must name the file, and nothing may throw.
bool reads_or_names_the_file(const std::string& bytes) {
  absl::StatusOr<Graph> g;
  EXPECT_NO_THROW(g = parse_onnx_model(bytes, "bad.onnx"));
  if (!g.ok()) {
    EXPECT_NE(message(g.status()).find("bad.onnx"), std::string_view::npos) << message(g.status());
    return false;
  }
  absl::StatusOr<std::vector<ValueType>> types = infer_types(*g);
  EXPECT_TRUE(types.ok()) << message(types.status());
  return true;
}

// Corrupted files never crash the reader: each gives a model that
// type-checks, or an error that names the file. (Byte edits of a real model
// and of a one-node one: most break the protobuf encoding, some change a
// field's value, a dimension or an attribute.)
TEST(OnnxErrors, CorruptedBytesGiveAModelOrANamedError) {
  const std::string squeezenet =
      *read_text_file(std::string(SATURN_FIXTURES) + "/squeezenet1_1.onnx");
  std::mt19937_64 rng(11);
  int parsed = 0, checked = 0;
  for (const auto& [original, trials] :
       {std::pair{bytes_of(relu_model()), 300}, std::pair{squeezenet, 150}}) {
    for (int trial = 0; trial < trials; ++trial) {
      std::string bytes = original;
      for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
        const std::size_t at = rng() % bytes.size();
        switch (rng() % 4) {
          case 0:
            bytes[at] = static_cast<char>(rng());
            break;
          case 1:
            bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
            break;
          case 2:
            bytes.erase(at, 1 + rng() % 4);
            break;
          default:
            bytes.insert(at, 1, static_cast<char>(rng()));
            break;
        }
        if (bytes.empty()) bytes.push_back('x');
      }
      parsed += reads_or_names_the_file(bytes) ? 1 : 0;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 450);
  EXPECT_LT(parsed, checked);
}

// A well-formed file with odd content: a node's operator, inputs or
// attributes, an initializer's dimensions or data, or an input's dimension
// changed. Each gives a model that type-checks or an error naming the file.
TEST(OnnxErrors, ChangedFieldsGiveAModelOrANamedError) {
  onnx::ModelProto original;
  ASSERT_TRUE(original.ParseFromString(
      *read_text_file(std::string(SATURN_FIXTURES) + "/squeezenet1_1.onnx")));
  const std::vector<std::int64_t> odd = {0, -1, 1, 3, std::int64_t{1} << 40};
  std::mt19937_64 rng(5);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  int parsed = 0;
  for (int trial = 0; trial < 150; ++trial) {
    onnx::ModelProto m = original;
    onnx::GraphProto* g = m.mutable_graph();
    onnx::NodeProto* node = g->mutable_node(pick(g->node_size()));
    switch (trial % 6) {
      case 0:
        node->set_op_type(g->node(pick(g->node_size())).op_type());
        break;
      case 1:
        if (node->input_size() > 0)
          node->set_input(pick(node->input_size()), g->node(pick(g->node_size())).output(0));
        break;
      case 2:
        if (node->input_size() > 0) node->mutable_input()->RemoveLast();
        break;
      case 3:
        if (node->attribute_size() > 0) {
          onnx::AttributeProto* a = node->mutable_attribute(pick(node->attribute_size()));
          if (a->ints_size() > 0)
            a->set_ints(pick(a->ints_size()), odd[pick(static_cast<int>(odd.size()))]);
          else
            a->set_i(odd[pick(static_cast<int>(odd.size()))]);
        }
        break;
      case 4: {
        onnx::TensorProto* t = g->mutable_initializer(pick(g->initializer_size()));
        if (t->dims_size() > 0)
          t->set_dims(pick(t->dims_size()), odd[pick(static_cast<int>(odd.size()))]);
        if (t->has_raw_data()) t->mutable_raw_data()->resize(t->raw_data().size() / 2);
        break;
      }
      default: {
        auto* shape = g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
        shape->mutable_dim(pick(shape->dim_size()))
            ->set_dim_value(odd[pick(static_cast<int>(odd.size()))]);
        break;
      }
    }
    parsed += reads_or_names_the_file(bytes_of(m)) ? 1 : 0;
  }
  // Some changes keep a valid model (a dimension of 1 where 1 was), most do not.
  EXPECT_GT(parsed, 0);
  EXPECT_LT(parsed, 150);
}

TEST(OnnxErrors, CheckerFailure) {
  onnx::ModelProto m = relu_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, "undefined_value");
  expect_error(parse_onnx_model(bytes_of(m), "bad.onnx"), "the ONNX checker rejects the model");
}

// A node with fewer inputs or outputs than its operator has gets the
// checker's error, not a read past them in the walks before it (a Conv
// without inputs crashed the import's look for convolutions onnxruntime
// fuses; tests/fuzz/corpus/onnx_model/crash-qdq-* hold the other cases).
TEST(OnnxErrors, NodeWithoutItsInputsIsNamed) {
  onnx::ModelProto m = relu_model();
  onnx::NodeProto* conv = m.mutable_graph()->mutable_node(0);
  conv->set_op_type("Conv");
  conv->clear_input();
  expect_error(parse_onnx_model(bytes_of(m), "bad.onnx"), "input size 0");
}

// libonnx's checker passes onnxruntime's own domains; the import checks
// their nodes against onnxruntime's schemas (onnx/operator_schemas.inc) as
// onnxruntime does at load, where it kept them opaque and wrote the file
// back with exit 0.
TEST(OnnxErrors, RuntimeOperatorOutsideItsSchemaIsNamed) {
  const auto contrib = [](std::string_view op, std::vector<std::string> inputs) {
    onnx::ModelProto m = relu_model();
    auto* ms = m.add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
    onnx::NodeProto* n = m.mutable_graph()->mutable_node(0);
    n->set_name("contrib");
    n->set_domain("com.microsoft");
    n->set_op_type(std::string(op));
    n->clear_input();
    for (const std::string& in : inputs) n->add_input(in);
    return m;
  };
  EXPECT_TRUE(parse_onnx_model(bytes_of(contrib("Gelu", {"x"})), "bad.onnx").ok());
  expect_error(parse_onnx_model(bytes_of(contrib("QLinearAdd", {"x"})), "bad.onnx"),
               "node 'contrib' (com.microsoft QLinearAdd): com.microsoft QLinearAdd-1 takes 7 "
               "to 8 inputs, the node has 1");
  expect_error(parse_onnx_model(bytes_of(contrib("FusedConv", {"x", ""})), "bad.onnx"),
               "input 1 of com.microsoft FusedConv-1 is required but empty");
  expect_error(parse_onnx_model(bytes_of(contrib("BiasSoftmax", {"x", "x"})), "bad.onnx"),
               "com.microsoft BiasSoftmax-1 requires attribute is_inner_broadcast");
  onnx::ModelProto no_output = contrib("Gelu", {"x"});
  no_output.mutable_graph()->mutable_node(0)->set_output(0, "");
  expect_error(parse_onnx_model(bytes_of(no_output), "bad.onnx"),
               "output 0 of com.microsoft Gelu-1 is required but empty");
}

TEST(OnnxErrors, UnknownOpset) {
  onnx::ModelProto m = relu_model();
  m.mutable_opset_import(0)->set_version(99);
  expect_error(parse_onnx_model(bytes_of(m), "bad.onnx"), "opset 99 is not supported");
}

// y = x + b, with b a graph input that also has an initializer. From IR 4
// on the initializer is b's default, which a caller may override: b stays an
// input, and every path (export, saturn JSON, optimization: see
// onnx_fixture_test.cc) keeps the default. Before IR 4 every initializer was
// listed as an input: b is a weight.
TEST(OnnxImport, InitializerNamedLikeAnInputIsItsDefault) {
  onnx::ModelProto m = add_with_default_model();
  onnx::TensorProto* b = m.mutable_graph()->mutable_initializer(0);
  auto inputs_of = [](const Graph& graph) {
    int count = 0;
    for (const Node& n : graph.nodes) count += n.op == Op::kInput;
    return count;
  };
  auto default_of = [](const Graph& graph) {
    auto it = graph.input_defaults.find("b");
    if (it == graph.input_defaults.end()) return std::vector<float>{};
    return std::vector<float>(it->second->floats().begin(), it->second->floats().end());
  };
  const std::vector<float> want = {1, 2, 3, 4, 5, 6};

  absl::StatusOr<Graph> graph = parse_onnx_model(bytes_of(m), "defaults.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_FALSE(graph->weights.contains("b"));
  EXPECT_EQ(inputs_of(*graph), 2);
  EXPECT_EQ(default_of(*graph), want);

  absl::StatusOr<std::string> bytes = to_onnx_model(*graph);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<Graph> back = parse_onnx_model(*bytes, "defaults (exported).onnx");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(inputs_of(*back), 2);
  EXPECT_EQ(default_of(*back), want);

  absl::StatusOr<Graph> json = parse_json_model(to_json_model(*graph), "defaults.json");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(default_of(*json), want);

  m.set_ir_version(3);
  absl::StatusOr<Graph> old = parse_onnx_model(bytes_of(m), "defaults.onnx");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE(old->weights.contains("b"));
  EXPECT_EQ(inputs_of(*old), 1);
  EXPECT_TRUE(old->input_defaults.empty());

  // A default that does not fit its input is an error (ONNX's shape
  // inference finds it).
  m.set_ir_version(8);
  b->set_dims(0, 3);
  b->set_dims(1, 2);
  expect_error(parse_onnx_model(bytes_of(m), "bad.onnx"), "differ in dimension 0: (3) vs (2)");
}

// A Dropout exported with its mask (torchvision's classifiers): at inference
// the identity, its mask all true. A mask nothing reads is left out; one
// that is read keeps the node as the file has it.
TEST(OnnxImport, ADropoutsUnreadMaskIsLeftOut) {
  onnx::ModelProto m = relu_model();
  onnx::NodeProto* dropout = m.mutable_graph()->mutable_node(0);
  dropout->set_op_type("Dropout");
  dropout->add_output("mask");
  absl::StatusOr<Graph> g = parse_onnx_model(bytes_of(m), "dropout.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->opaque_reasons.empty());
  const Inputs in = random_inputs(*g, 1);
  absl::StatusOr<std::vector<Tensor>> out = evaluate(*g, in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(max_error_ratio((*out)[0], in.at("x"), 0, 0), 0);
  absl::StatusOr<std::string> bytes = to_onnx_model(*g);
  ASSERT_TRUE(bytes.ok()) << bytes.status();

  onnx::ValueInfoProto* mask = m.mutable_graph()->add_output();
  *mask = m.graph().output(0);
  mask->set_name("mask");
  mask->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  g = parse_onnx_model(bytes_of(m), "dropout.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->opaque_reasons.size(), 1u);
  EXPECT_NE(g->opaque_reasons.begin()->second.find("2 outputs"), std::string::npos)
      << g->opaque_reasons.begin()->second;
}

TEST(OnnxErrors, UnknownOperatorIsKeptOpaqueNotDropped) {
  onnx::ModelProto m = relu_model();
  m.mutable_graph()->mutable_node(0)->set_op_type("Softsign");  // not in the IR
  absl::StatusOr<Graph> g = parse_onnx_model(bytes_of(m), "bad.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(op_counts(*g).at(Op::kOpaque), 1);
  absl::StatusOr<std::string> out = to_onnx_model(*g);
  ASSERT_TRUE(out.ok()) << out.status();
  onnx::ModelProto back;
  ASSERT_TRUE(back.ParseFromString(*out));
  ASSERT_EQ(back.graph().node_size(), 1);
  EXPECT_EQ(back.graph().node(0).op_type(), "Softsign");
  EXPECT_EQ(back.graph().output(0).name(), "y");
  ASSERT_EQ(back.opset_import_size(), 1);
  EXPECT_EQ(back.opset_import(0).version(), 13) << "the original opset is kept";
}

}  // namespace
}  // namespace saturn::tensor

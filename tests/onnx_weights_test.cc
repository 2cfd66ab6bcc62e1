// ONNX weights: initializers in external data files (read, or mapped and
// read in place), and the large weights of a single-file model left in the
// file and mapped.
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "saturn/onnx/exporter.h"
#include "saturn/onnx/importer.h"
#include "saturn/onnx/onnx.h"
#include "saturn/tests/onnx_models.h"

namespace saturn::tensor {
namespace {

namespace fs = std::filesystem;

// n values from `start` on, `step` apart.
std::vector<float> ramp(int n, float start, float step) {
  std::vector<float> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = start + step * static_cast<float>(i);
  return out;
}

// y = (x + b) + c over x [2, cols]; b and c are left for the caller to add.
onnx::ModelProto two_adds_model(int cols) {
  onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  for (auto* v : {g->mutable_input(0), g->mutable_output(0)})
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(cols);
  g->mutable_node(0)->set_op_type("Add");
  g->mutable_node(0)->add_input("b");
  g->mutable_node(0)->set_output(0, "xb");
  auto* second = g->add_node();
  second->set_op_type("Add");
  second->add_input("xb");
  second->add_input("c");
  second->add_output("y");
  return m;
}

// y = x + b, with b's values in an external data file next to the model.
TEST(OnnxExternalData, WeightsAreReadFromTheDataFile) {
  const fs::path dir = fs::temp_directory_path() / "saturn-onnx-test-external";
  fs::create_directories(dir);
  onnx::ModelProto m = relu_model();
  auto* node = m.mutable_graph()->mutable_node(0);
  node->set_op_type("Add");
  node->add_input("b");
  onnx::TensorProto* b = m.mutable_graph()->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(2);
  b->add_dims(3);
  b->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [key, value] : {std::pair{"location", "b.bin"}, {"offset", "8"}, {"length", "24"}}) {
    auto* e = b->add_external_data();
    e->set_key(key);
    e->set_value(value);
  }
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  std::string data(8, '\0');  // the tensor starts at offset 8
  data.append(reinterpret_cast<const char*>(values.data()), 24);
  ASSERT_TRUE(write_text_file((dir / "b.bin").string(), data).ok());
  const std::string path = (dir / "model.onnx").string();
  ASSERT_TRUE(write_text_file(path, bytes_of(m)).ok());

  absl::StatusOr<Graph> g = load_onnx_model(path);
  ASSERT_TRUE(g.ok()) << g.status();
  // onnxruntime is given a self-contained copy to time, not the file.
  EXPECT_EQ(runs_as_written(path).value_or(true), false);
  ASSERT_TRUE(g->weights.contains("b"));
  ASSERT_TRUE(g->weights.at("b").data);
  const auto f = g->weights.at("b").data->floats();
  EXPECT_EQ(std::vector<float>(f.begin(), f.end()), values);

  // A copy elsewhere (what a run that keeps its input writes) takes the
  // data file along, byte for byte; in the same folder it reuses it.
  const fs::path elsewhere = dir / "copy";
  fs::create_directories(elsewhere);
  ASSERT_TRUE(copy_onnx_model(path, (elsewhere / "kept.onnx").string()).ok());
  EXPECT_EQ(*read_text_file((elsewhere / "kept.onnx").string()), bytes_of(m));
  EXPECT_EQ(*read_text_file((elsewhere / "b.bin").string()), data);
  absl::StatusOr<Graph> copied = load_onnx_model((elsewhere / "kept.onnx").string());
  ASSERT_TRUE(copied.ok()) << copied.status();
  ASSERT_TRUE(copy_onnx_model(path, (dir / "same.onnx").string()).ok());
  EXPECT_EQ(*read_text_file((dir / "same.onnx").string()), bytes_of(m));

  // Staged (begun while a search runs) and dropped: nothing is left of it.
  const fs::path dropped = dir / "dropped";
  fs::create_directories(dropped);
  {
    absl::StatusOr<StagedCopy> staged = stage_onnx_copy(path, (dropped / "kept.onnx").string());
    ASSERT_TRUE(staged.ok()) << staged.status();
    staged->start();
    staged->stop();
  }
  EXPECT_TRUE(fs::is_empty(dropped));

  fs::remove(dir / "b.bin");
  EXPECT_FALSE(copy_onnx_model(path, (elsewhere / "again.onnx").string()).ok());
  absl::StatusOr<Graph> missing = load_onnx_model(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(message(missing.status()).find("initializer 'b': cannot open external data file"),
            std::string_view::npos)
      << missing.status();
  fs::remove_all(dir);
}

// A copy of several 64 MB chunks, halted and taken up again on another
// thread, is the file byte for byte; what cannot be read or written is
// named before anything is copied.
TEST(StagedCopyTest, CopiesInTheBackgroundAndFinishesOnCommit) {
  const fs::path dir = fs::temp_directory_path() / "saturn-staged-copy-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string bytes(std::size_t{150} << 20, '\0');
  for (std::size_t i = 0; i < bytes.size(); i += 4093) bytes[i] = static_cast<char>(i / 4093);
  const std::string from = (dir / "from.bin").string(), to = (dir / "to.bin").string();
  ASSERT_TRUE(write_text_file(from, bytes).ok());
  ASSERT_TRUE(write_text_file(to, "an older file").ok());
  absl::StatusOr<StagedCopy> copy = StagedCopy::open({{from, to}});
  ASSERT_TRUE(copy.ok()) << copy.status();
  copy->start();
  copy->stop();
  EXPECT_EQ(*read_text_file(to), "an older file");  // nothing in place before the commit
  copy->start();
  ASSERT_TRUE(copy->commit().ok());
  EXPECT_TRUE(*read_text_file(to) == bytes);
  fs::remove(from);
  fs::remove(to);
  EXPECT_TRUE(fs::is_empty(dir));

  absl::StatusOr<StagedCopy> missing = StagedCopy::open({{from, to}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(message(missing.status()).find(from + ": cannot open file"), std::string_view::npos)
      << missing.status();
  ASSERT_TRUE(write_text_file(from, "x").ok());
  const std::string nowhere = (dir / "no-such-folder" / "to.bin").string();
  absl::StatusOr<StagedCopy> unwritable = StagedCopy::open({{from, nowhere}});
  ASSERT_FALSE(unwritable.ok());
  EXPECT_NE(message(unwritable.status()).find(nowhere + ": cannot open file for writing"),
            std::string_view::npos)
      << unwritable.status();
  fs::remove_all(dir);
}

// y = (x + b) + c with b and c past the size that is read into the model
// (kMaxShapeValueElements): their file is mapped and read in place, b at an
// offset aligned for floats, c at one that is not (so c is copied when read).
TEST(OnnxExternalData, LargeWeightsAreReadFromTheMappedFile) {
  const fs::path dir = fs::temp_directory_path() / "saturn-onnx-test-external-large";
  fs::create_directories(dir);
  constexpr int kCols = 9000;
  onnx::ModelProto m = two_adds_model(kCols);
  auto* g = m.mutable_graph();
  const std::vector<float> b = ramp(2 * kCols, 0, 0.5f), c = ramp(2 * kCols, 0, -1);
  const std::size_t bytes = b.size() * sizeof(float);
  std::string data(4, '\0');  // b at offset 4, c at 4 + bytes + 2
  data.append(reinterpret_cast<const char*>(b.data()), bytes);
  data.append(2, '\0');
  data.append(reinterpret_cast<const char*>(c.data()), bytes);
  for (auto [name, offset] : {std::pair{"b", std::size_t{4}}, {"c", 4 + bytes + 2}}) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(2);
    t->add_dims(kCols);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [key, value] : {std::pair{std::string("location"), std::string("w.bin")},
                              {"offset", std::to_string(offset)},
                              {"length", std::to_string(bytes)}}) {
      auto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
  }
  ASSERT_TRUE(write_text_file((dir / "w.bin").string(), data).ok());
  const std::string path = (dir / "model.onnx").string();
  ASSERT_TRUE(write_text_file(path, bytes_of(m)).ok());

  absl::StatusOr<Graph> loaded = load_onnx_model(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  for (const auto& [name, want] : {std::pair{"b", &b}, {"c", &c}}) {
    const auto f = loaded->weights.at(name).data->floats();
    EXPECT_EQ(std::vector<float>(f.begin(), f.end()), *want) << name;
  }
  // The external files of a model, found without reading its weights.
  absl::StatusOr<onnx::ModelProto> stubs = onnx_io::initializer_stubs(bytes_of(m));
  ASSERT_TRUE(stubs.ok()) << stubs.status();
  absl::StatusOr<std::vector<fs::path>> files = onnx_io::external_data_files(*stubs);
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, std::vector<fs::path>{"w.bin"});
  EXPECT_FALSE(onnx_io::initializer_stubs(bytes_of(m).substr(0, 40)).ok());
  fs::remove_all(dir);
}

// y = (x + b) + c in one file, b and c inline past the size the import keeps
// mapped, and a small initializer: b and c are read where they lie in the
// file (external data of the file itself), every other field as protobuf
// reads it; the import, and the model written from it, hold the same values.
TEST(OnnxWeightsInPlace, LargeInlineWeightsAreReadWhereTheyLieInTheFile) {
  const fs::path dir = fs::temp_directory_path() / "saturn-onnx-test-in-place";
  fs::create_directories(dir);
  constexpr int kCols = 9000;
  onnx::ModelProto m = two_adds_model(kCols);
  auto* g = m.mutable_graph();
  const std::vector<float> b = ramp(2 * kCols, 0, 0.25f), c = ramp(2 * kCols, 3, -1);
  for (auto [name, values] : {std::pair{"b", &b}, {"c", &c}}) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(2);
    t->add_dims(kCols);
    t->set_raw_data(values->data(), values->size() * sizeof(float));
  }
  onnx::TensorProto* small = g->add_initializer();  // unused, inline, kept
  small->set_name("small");
  small->set_data_type(onnx::TensorProto::FLOAT);
  small->add_dims(2);
  small->set_raw_data(std::string(8, '\0'));
  m.set_producer_name("saturn-test");
  m.set_doc_string("after the graph");
  const std::string file = bytes_of(m);

  constexpr std::uint32_t kMinBytes = 4 * 1024;
  absl::StatusOr<onnx::ModelProto> left = onnx_io::parse_leaving_weights(file, "model.onnx", kMinBytes);
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_EQ(left->producer_name(), "saturn-test");
  EXPECT_EQ(left->doc_string(), "after the graph");
  EXPECT_EQ(left->graph().node_size(), 2);
  ASSERT_EQ(left->graph().initializer_size(), 3);
  for (int k = 0; k < 2; ++k) {
    const onnx::TensorProto& t = left->graph().initializer(k);
    EXPECT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL) << t.name();
    EXPECT_FALSE(t.has_raw_data()) << t.name();
    std::map<std::string, std::string> e;
    for (const auto& entry : t.external_data()) e[entry.key()] = entry.value();
    EXPECT_EQ(e["location"], "model.onnx");
    EXPECT_EQ(file.substr(std::stoul(e["offset"]), std::stoul(e["length"])),
              m.graph().initializer(k).raw_data())
        << t.name();
  }
  EXPECT_EQ(left->graph().initializer(2).raw_data(), small->raw_data());
  EXPECT_FALSE(
      onnx_io::parse_leaving_weights(file.substr(0, file.size() / 2), "model.onnx", kMinBytes).ok());

  const std::string path = (dir / "model.onnx").string();
  ASSERT_TRUE(write_text_file(path, file).ok());
  // Self-contained: onnxruntime times the file itself, no copy is made; a
  // model with seeded weights is not (its weights are made for the copy).
  EXPECT_EQ(runs_as_written(path).value_or(false), true);
  EXPECT_EQ(runs_as_written(std::string(SATURN_FIXTURES) + "/resnet50.onnx").value_or(true), false);
  EXPECT_FALSE(runs_as_written((dir / "missing.onnx").string()).ok());
  absl::StatusOr<Graph> loaded = load_onnx_model(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const std::string written = (dir / "written.onnx").string();
  ASSERT_TRUE(save_onnx_model(*loaded, written).ok());
  absl::StatusOr<Graph> reloaded = load_onnx_model(written);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  // The file holds the model's serialization, byte for byte, though its
  // weights went from the mapped input to the file without a proto between.
  absl::StatusOr<std::string> serialized = to_onnx_model(*loaded);
  ASSERT_TRUE(serialized.ok()) << serialized.status();
  EXPECT_EQ(read_text_file(written).value_or(""), *serialized);
  onnx_io::Exporter exporter(*loaded, /*defer_weights=*/true);
  absl::StatusOr<onnx::ModelProto> deferred = exporter.run();
  ASSERT_TRUE(deferred.ok()) << deferred.status();
  EXPECT_EQ(exporter.deferred_weights().size(), 2u);
  // Past protobuf's limit the same weights go to an external data file.
  const fs::path external = dir / "external.onnx";
  ASSERT_TRUE(onnx_io::write_external_data(*deferred, exporter.deferred_weights(),
                                           external_data_file(external.string()))
                  .ok());
  ASSERT_TRUE(write_file_with(external.string(), [&](int fd) {
                return onnx_io::write_model(*deferred, {}, fd);
              }).ok());
  absl::StatusOr<Graph> from_external = load_onnx_model(external.string());
  ASSERT_TRUE(from_external.ok()) << from_external.status();
  for (const Graph* graph : {&*loaded, &*reloaded, &*from_external}) {
    for (const auto& [name, want] : {std::pair{"b", &b}, {"c", &c}}) {
      const auto f = graph->weights.at(name).data->floats();
      EXPECT_EQ(std::vector<float>(f.begin(), f.end()), *want) << name;
    }
  }
  // Data inline and marked external at once is read as it is written, and
  // the error names the initializer.
  onnx::ModelProto both = m;
  both.mutable_graph()->mutable_initializer(0)->set_data_location(onnx::TensorProto::EXTERNAL);
  ASSERT_TRUE(write_text_file(path, bytes_of(both)).ok());
  absl::StatusOr<Graph> malformed = load_onnx_model(path);
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(message(malformed.status()).find("initializer 'b': external data location"),
            std::string::npos)
      << malformed.status();
  ASSERT_TRUE(write_text_file(path, file.substr(0, file.size() - 100)).ok());
  absl::StatusOr<Graph> truncated = load_onnx_model(path);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(message(truncated.status()).find(path + ": not an ONNX model"), std::string::npos)
      << truncated.status();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace saturn::tensor

// ONNX model files: reading one into the IR (the importer's entry points),
// checking, copying and staging them, and the copy onnxruntime runs.
#include <climits>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "saturn/onnx/importer.h"
#include "saturn/onnx/onnx.h"
#include "saturn/onnx/proto.h"
#include "saturn/onnx/shape_values.h"
#include "saturn/tensor/graph.h"
#include "saturn/tensor/tensor.h"

namespace saturn::tensor {

std::int64_t max_onnx_opset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 0 : it->second.second;
}

namespace {

// An empty file, or one past protobuf's limit: it reads one message of at
// most 2 GiB, and ONNX keeps larger models' weights in external data files.
absl::Status check_size(const std::string& file, std::uintmax_t bytes) {
  if (bytes == 0) return absl::InvalidArgumentError(fmt::format("{}: the file is empty", file));
  if (bytes <= static_cast<std::uintmax_t>(INT_MAX)) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "{}: the file holds {:.2f} GiB, past protobuf's 2 GiB limit for an ONNX model file; a "
      "model this large keeps its weights in external data files (in Python: "
      "onnx.save_model(model, path, save_as_external_data=True))",
      file, static_cast<double>(bytes) / (1 << 30)));
}

// The protobuf does not parse.
absl::Status not_onnx(const std::string& file) {
  return absl::InvalidArgumentError(fmt::format(
      "{}: not an ONNX model (the protobuf does not parse; truncated or another format?)", file));
}

// The IR of a parsed model read from `file`.
absl::StatusOr<Graph> import_model(std::shared_ptr<onnx::ModelProto> model, const std::string& file,
                                   const OnnxImportOptions& options) {
  onnx_io::Importer importer(file, options);
  absl::StatusOr<Graph> graph = importer.run(std::move(model));
  if (std::vector<std::string> unsized = importer.unsized_symbols();
      !graph.ok() && !unsized.empty())
    return absl::Status(graph.status().code(),
                        fmt::format("{} (with the symbolic dimension{} {} at the default size {}; "
                                    "--dim NAME=SIZE sizes them)",
                                    message(graph.status()), unsized.size() == 1 ? "" : "s",
                                    fmt::join(unsized, ", "), kDefaultSymbolSize));
  return graph;
}

}  // namespace

absl::StatusOr<Graph> parse_onnx_model(std::string_view bytes, const std::string& file,
                                       const OnnxImportOptions& options) {
  auto model = std::make_shared<onnx::ModelProto>();
  if (absl::Status s = check_size(file, bytes.size()); !s.ok()) return s;
  if (!model->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return not_onnx(file);
  return import_model(std::move(model), file, options);
}

absl::StatusOr<Graph> load_onnx_model(const std::string& path, const OnnxImportOptions& options) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec) {
    if (absl::Status s = check_size(path, size); !s.ok()) return s;
  }
  absl::StatusOr<MappedFile> file = MappedFile::open(path);
  if (!file.ok()) return file.status();
  // The weights stay in the file, mapped as external data of the file
  // itself: from the smallest float32 tensor the import keeps mapped.
  constexpr auto kMinBytes = static_cast<std::uint32_t>(4 * (onnx_io::kMaxShapeValueElements + 1));
  absl::StatusOr<onnx::ModelProto> model = onnx_io::parse_leaving_weights(
      file->bytes(), std::filesystem::path(path).filename().string(), kMinBytes);
  if (!model.ok()) return not_onnx(path);
  absl::StatusOr<Graph> graph =
      import_model(std::make_shared<onnx::ModelProto>(*std::move(model)), path, options);
  if (graph.ok()) graph->source = path;
  return graph;
}

absl::StatusOr<StagedCopy> stage_onnx_copy(const std::string& from, const std::string& to) {
  onnx::ModelProto model;
  {
    absl::StatusOr<MappedFile> file = MappedFile::open(from);
    if (!file.ok()) return file.status();
    absl::StatusOr<onnx::ModelProto> stubs = onnx_io::initializer_stubs(file->bytes());
    if (!stubs.ok()) return absl::InvalidArgumentError(fmt::format("{}: not an ONNX model", from));
    model = *std::move(stubs);
  }
  absl::StatusOr<std::vector<std::filesystem::path>> files = onnx_io::external_data_files(model);
  if (!files.ok()) return with_context(files.status(), from);
  const std::filesystem::path from_dir = std::filesystem::path(from).parent_path();
  const std::filesystem::path to_dir = std::filesystem::path(to).parent_path();
  std::vector<StagedCopy::File> copies;
  for (const std::filesystem::path& rel : *files) {
    std::error_code ec;
    const std::filesystem::path source = from_dir / rel, target = to_dir / rel;
    if (std::filesystem::exists(target, ec) && std::filesystem::equivalent(source, target, ec))
      continue;  // the same folder: the file is already there
    std::filesystem::create_directories(target.parent_path(), ec);
    copies.push_back({source.string(), target.string()});
  }
  // The model last: it never stands where the data it reads is missing.
  copies.push_back({from, to});
  return StagedCopy::open(copies);
}

absl::Status copy_onnx_model(const std::string& from, const std::string& to) {
  absl::StatusOr<StagedCopy> copy = stage_onnx_copy(from, to);
  if (!copy.ok()) return copy.status();
  return copy->commit();
}

absl::StatusOr<std::string> runtime_onnx_model(const std::string& path,
                                               const OnnxImportOptions& options,
                                               InputSizes sizes) {
  absl::StatusOr<std::string> bytes = read_text_file(path);
  if (!bytes.ok()) return bytes.status();
  onnx::ModelProto model;
  if (!model.ParseFromString(*bytes))
    return absl::InvalidArgumentError(fmt::format("{}: not an ONNX model", path));
  // The copy may live elsewhere: external data goes inline; symbolic input
  // dimensions take the sizes the import gave them.
  if (absl::Status s =
          onnx_io::inline_external_data(model, std::filesystem::path(path).parent_path());
      !s.ok())
    return with_context(s, path);
  if (sizes == InputSizes::kFixed) {
    if (absl::StatusOr<Symbols> s = onnx_io::resolve_input_dims(model, options); !s.ok())
      return with_context(s.status(), path);
  }
  absl::StatusOr<onnx_io::SeededWeights> seeded = onnx_io::seeded_weights(model);
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
    if (props->Get(i).key() == onnx_io::kSeededWeights) props->DeleteSubrange(i, 1);
  }
  std::string out;
  if (!model.SerializeToString(&out))
    return absl::ResourceExhaustedError(fmt::format(
        "{}: with its weights inline the model holds {:.2f} GiB, past protobuf's 2 GiB limit", path,
        static_cast<double>(model.ByteSizeLong()) / (1 << 30)));
  return out;
}

absl::StatusOr<bool> runs_as_written(const std::string& path) {
  absl::StatusOr<MappedFile> file = MappedFile::open(path);
  if (!file.ok()) return file.status();
  // Its weights are left in the file (not copied) to look at the rest.
  const std::string location = std::filesystem::path(path).filename().string();
  absl::StatusOr<onnx::ModelProto> model =
      onnx_io::parse_leaving_weights(file->bytes(), location, /*min_bytes=*/1024);
  if (!model.ok()) return not_onnx(path);
  for (const auto& p : model->metadata_props())
    if (p.key() == onnx_io::kSeededWeights) return false;
  for (const onnx::TensorProto& t : model->graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    for (const auto& e : t.external_data())
      if (e.key() == "location" && e.value() != location) return false;
  }
  return true;
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

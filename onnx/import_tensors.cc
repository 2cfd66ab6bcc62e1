// ONNX → IR: tensor data. External data files, the seeded-weight metadata,
// initializers (weights and graph inputs' defaults) and Constant nodes.
#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "saturn/tensor/graph.h"
#include "saturn/onnx/importer.h"
#include "saturn/onnx/proto.h"

namespace saturn::tensor::onnx_io {

namespace {

absl::Status bad_external_data(const onnx::TensorProto& t, std::string_view what) {
  return absl::InvalidArgumentError(
      fmt::format("initializer '{}': external data {}", t.name(), what));
}

// The file an external initializer reads, relative to the model's folder.
absl::StatusOr<std::filesystem::path> external_location(const onnx::TensorProto& t) {
  std::string location;
  for (const auto& e : t.external_data())
    if (e.key() == "location") location = e.value();
  std::filesystem::path rel(location);
  if (location.empty() || rel.is_absolute() ||
      std::any_of(rel.begin(), rel.end(), [](const auto& part) { return part == ".."; })) {
    return bad_external_data(
        t, fmt::format("location '{}' must be a relative path inside the model's directory",
                       location));
  }
  return rel;
}

// The external data files a model reads, mapped once each.
using MappedFiles = std::map<std::filesystem::path, std::shared_ptr<const MappedFile>>;

// The bytes external initializer `t` reads, inside its file's mapping (which
// the second member keeps alive).
using ExternalBytes = std::pair<std::string_view, std::shared_ptr<const MappedFile>>;

absl::StatusOr<ExternalBytes> external_bytes(const onnx::TensorProto& t,
                                             const std::filesystem::path& dir, MappedFiles& files) {
  std::int64_t offset = 0, length = -1;
  auto bad = [&](std::string_view what) { return bad_external_data(t, what); };
  absl::StatusOr<std::filesystem::path> rel = external_location(t);
  if (!rel.ok()) return rel.status();
  const std::string location = rel->string();
  for (const auto& e : t.external_data()) {
    if (e.key() == "offset" || e.key() == "length") {
      std::int64_t v = 0;
      const char* end = e.value().data() + e.value().size();
      auto [ptr, ec] = std::from_chars(e.value().data(), end, v);
      if (ec != std::errc() || ptr != end || v < 0)
        return bad(fmt::format("{} '{}' is not a non-negative integer", e.key(), e.value()));
      (e.key() == "offset" ? offset : length) = v;
    }
  }
  const std::filesystem::path file = dir / *rel;
  auto mapped = files.find(file);
  if (mapped == files.end()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
      return absl::NotFoundError(fmt::format(
          "initializer '{}': cannot open external data file {}", t.name(), file.string()));
    absl::StatusOr<MappedFile> m = MappedFile::open(file.string());
    if (!m.ok()) return bad(fmt::format("file {}: {}", file.string(), message(m.status())));
    mapped = files.emplace(file, std::make_shared<const MappedFile>(*std::move(m))).first;
  }
  const std::string_view all = mapped->second->bytes();
  const auto size = static_cast<std::int64_t>(all.size());
  if (length < 0) length = size - offset;
  if (offset > size || length < 0 || length > size - offset)
    return bad(fmt::format("{} has {} bytes; the model reads {} at offset {}", location, size,
                           length, offset));
  return ExternalBytes{all.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(length)),
                       mapped->second};
}

// Moves external initializer `t`'s bytes into the proto.
absl::Status inline_one(onnx::TensorProto& t, const std::filesystem::path& dir, MappedFiles& files) {
  absl::StatusOr<ExternalBytes> bytes = external_bytes(t, dir, files);
  if (!bytes.ok()) return bytes.status();
  t.set_raw_data(bytes->first.data(), bytes->first.size());
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  return absl::OkStatus();
}

}  // namespace

absl::Status inline_external_data(onnx::ModelProto& model, const std::filesystem::path& dir) {
  MappedFiles files;
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    if (absl::Status s = inline_one(t, dir, files); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, Tensor>> map_external_data(onnx::ModelProto& model,
                                                                const std::filesystem::path& dir,
                                                                std::int64_t inline_up_to) {
  MappedFiles files;
  std::map<std::string, Tensor> mapped;
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    absl::StatusOr<TensorType> type = tensor_proto_type(t);
    if (!type.ok()) return type.status();
    if (type->num_elements() <= inline_up_to || type->dtype == DType::kString) {
      if (absl::Status s = inline_one(t, dir, files); !s.ok()) return s;
      continue;
    }
    absl::StatusOr<ExternalBytes> bytes = external_bytes(t, dir, files);
    if (!bytes.ok()) return bytes.status();
    if (static_cast<std::int64_t>(bytes->first.size()) != stored_bytes(*type))
      return bad_external_data(t, fmt::format("holds {} bytes; a {} needs {}", bytes->first.size(),
                                              to_string(*type), stored_bytes(*type)));
    mapped.emplace(t.name(), tensor_from_stored(*type, std::as_bytes(std::span(bytes->first)),
                                                bytes->second));
  }
  return mapped;
}

absl::StatusOr<std::vector<std::filesystem::path>> external_data_files(
    const onnx::ModelProto& model) {
  std::vector<std::filesystem::path> files;
  for (const onnx::TensorProto& t : model.graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    absl::StatusOr<std::filesystem::path> rel = external_location(t);
    if (!rel.ok()) return rel.status();
    if (std::find(files.begin(), files.end(), *rel) == files.end()) files.push_back(*rel);
  }
  return files;
}

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

absl::Status Importer::add_input_default(const std::string& name, const Tensor& value) {
  if (graph_.nodes[static_cast<std::size_t>(values_.at(name))].op != Op::kInput)
    return error("initializer '{}' and seeded-weight metadata both define '{}'", name, name);
  graph_.input_defaults[name] = std::make_shared<const Tensor>(value);
  return absl::OkStatus();
}

void Importer::add_weight(const std::string& name, const Tensor& value) {
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

std::optional<Ints> Importer::constant_ints(const std::string& name) const {
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

std::optional<double> Importer::constant_scalar(const std::string& name) const {
  auto it = constants_.find(name);
  if (it == constants_.end() || it->second.dtype() != DType::kFloat32 || it->second.size() != 1)
    return std::nullopt;
  return it->second.floats()[0];
}

}  // namespace saturn::tensor::onnx_io

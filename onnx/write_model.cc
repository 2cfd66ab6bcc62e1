// An exported model written to its file with the weights taken from their
// tensors (exporter.h): the proto the exporter builds holds the large
// initializers without their bytes, and the writer emits the protobuf wire
// format around them, so a model's weights are never copied into a proto
// (nor into one large buffer for an external data file).
//
// The bytes are those of the model's own serialization with the weights
// filled in (protobuf writes fields in number order; the writer writes the
// fields before and after the graph, the initializers and their raw data in
// the same order).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/wire_format_lite.h"
#include "saturn/base/file.h"
#include "saturn/onnx/exporter.h"

namespace saturn::tensor::onnx_io {

namespace {

using google::protobuf::io::CodedOutputStream;
using google::protobuf::internal::WireFormatLite;

constexpr int kModelGraph = 7;        // ModelProto.graph
constexpr int kGraphInitializer = 5;  // GraphProto.initializer
constexpr int kTensorRawData = 9;     // TensorProto.raw_data
// External data lie at offsets aligned as onnxruntime maps them.
constexpr std::size_t kExternalAlignment = 4096;

std::size_t length_delimited_size(int field, std::size_t body) {
  return CodedOutputStream::VarintSize32(WireFormatLite::MakeTag(
             field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) +
         CodedOutputStream::VarintSize64(body) + body;
}

void write_header(CodedOutputStream& out, int field, std::size_t body) {
  out.WriteTag(WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  out.WriteVarint64(body);
}

// A message's fields split around one repeated or nested field: those
// numbered below it and those above, each serialized as the message would.
template <typename Message>
std::pair<Message, Message> split_at(const Message& m, int field) {
  std::pair<Message, Message> parts{m, m};
  const auto* reflection = m.GetReflection();
  for (Message* part : {&parts.first, &parts.second}) {
    std::vector<const google::protobuf::FieldDescriptor*> fields;
    reflection->ListFields(*part, &fields);
    for (const auto* f : fields) {
      const bool below = f->number() < field;
      if (f->number() == field || below != (part == &parts.first))
        reflection->ClearField(part, f);
    }
  }
  return parts;
}

// One initializer: its fields as the proto holds them, the raw data of its
// tensor among them when it is deferred.
class Initializer {
 public:
  Initializer(const onnx::TensorProto& t, const std::map<std::string, Tensor>& weights)
      : proto_(t), deferred_(weights.find(t.name())) {
    if (deferred_ == weights.end()) return;
    fields_ = split_at(t, kTensorRawData);
    size_ = fields_.first.ByteSizeLong() +
            length_delimited_size(kTensorRawData, deferred_->second.data().size()) +
            fields_.second.ByteSizeLong();
  }

  std::size_t size() const { return is_deferred() ? size_ : proto_.ByteSizeLong(); }

  void write(CodedOutputStream& out) const {
    if (!is_deferred()) {
      proto_.SerializeWithCachedSizes(&out);
      return;
    }
    const std::span<const std::byte> bytes = deferred_->second.data();
    fields_.first.SerializeWithCachedSizes(&out);
    write_header(out, kTensorRawData, bytes.size());
    out.WriteRaw(bytes.data(), static_cast<int>(bytes.size()));
    fields_.second.SerializeWithCachedSizes(&out);
  }

 private:
  bool is_deferred() const { return size_ > 0; }

  const onnx::TensorProto& proto_;
  std::map<std::string, Tensor>::const_iterator deferred_;
  std::pair<onnx::TensorProto, onnx::TensorProto> fields_;
  std::size_t size_ = 0;
};

struct Layout {
  std::pair<onnx::ModelProto, onnx::ModelProto> model;
  std::pair<onnx::GraphProto, onnx::GraphProto> graph;
  std::vector<Initializer> initializers;
  std::size_t graph_size = 0;
  std::size_t size = 0;  // the whole model's

  Layout(const onnx::ModelProto& m, const std::map<std::string, Tensor>& weights)
      : model(split_at(m, kModelGraph)), graph(split_at(m.graph(), kGraphInitializer)) {
    for (const onnx::TensorProto& t : m.graph().initializer()) initializers.emplace_back(t, weights);
    graph_size = graph.first.ByteSizeLong() + graph.second.ByteSizeLong();
    for (const Initializer& i : initializers)
      graph_size += length_delimited_size(kGraphInitializer, i.size());
    size = model.first.ByteSizeLong() + length_delimited_size(kModelGraph, graph_size) +
           model.second.ByteSizeLong();
  }

  void write(CodedOutputStream& out) const {
    model.first.SerializeWithCachedSizes(&out);
    write_header(out, kModelGraph, graph_size);
    graph.first.SerializeWithCachedSizes(&out);
    for (const Initializer& i : initializers) {
      write_header(out, kGraphInitializer, i.size());
      i.write(out);
    }
    graph.second.SerializeWithCachedSizes(&out);
    model.second.SerializeWithCachedSizes(&out);
  }
};

}  // namespace

std::size_t written_size(const onnx::ModelProto& model,
                         const std::map<std::string, Tensor>& weights) {
  return Layout(model, weights).size;
}

bool write_model(const onnx::ModelProto& model, const std::map<std::string, Tensor>& weights,
                 int fd) {
  const Layout layout(model, weights);
  google::protobuf::io::FileOutputStream file(fd);
  {
    CodedOutputStream out(&file);
    layout.write(out);
    if (out.HadError()) return false;
  }
  return file.Flush();
}

absl::Status write_external_data(onnx::ModelProto& model,
                                 const std::map<std::string, Tensor>& weights,
                                 const std::filesystem::path& data_path) {
  const std::string location = data_path.filename().string();
  return write_file_with(data_path.string(), [&](int fd) {
    google::protobuf::io::FileOutputStream file(fd);
    std::size_t end = 0;
    {
      CodedOutputStream out(&file);
      for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
        auto deferred = weights.find(t.name());
        const std::span<const std::byte> bytes =
            deferred != weights.end() ? deferred->second.data()
                                      : std::as_bytes(std::span(t.raw_data()));
        if (bytes.size() < kLargeInitializerBytes || !t.has_raw_data()) continue;
        const std::size_t offset =
            (end + kExternalAlignment - 1) / kExternalAlignment * kExternalAlignment;
        const std::string padding(offset - end, '\0');
        out.WriteRaw(padding.data(), static_cast<int>(padding.size()));
        for (std::size_t done = 0; done < bytes.size();) {  // WriteRaw takes an int
          const std::size_t n = std::min<std::size_t>(bytes.size() - done, 1 << 30);
          out.WriteRaw(bytes.data() + done, static_cast<int>(n));
          done += n;
        }
        end = offset + bytes.size();
        auto entry = [&t](const char* key, std::string value) {
          auto* e = t.add_external_data();
          e->set_key(key);
          e->set_value(std::move(value));
        };
        entry("location", location);
        entry("offset", std::to_string(offset));
        entry("length", std::to_string(bytes.size()));
        t.clear_raw_data();
        t.set_data_location(onnx::TensorProto::EXTERNAL);
      }
      if (out.HadError()) return false;
    }
    return file.Flush();
  });
}

onnx::ModelProto checkable(const onnx::ModelProto& model,
                           const std::map<std::string, Tensor>& weights) {
  onnx::ModelProto copy;
  *copy.mutable_opset_import() = model.opset_import();
  copy.set_ir_version(model.ir_version());
  copy.mutable_functions()->CopyFrom(model.functions());
  onnx::GraphProto* g = copy.mutable_graph();
  *g = model.graph();
  std::set<std::string> inputs;
  for (const onnx::ValueInfoProto& v : g->input()) inputs.insert(v.name());
  auto* initializers = g->mutable_initializer();
  for (int k = initializers->size() - 1; k >= 0; --k) {
    const onnx::TensorProto& t = initializers->Get(k);
    if (!weights.contains(t.name())) continue;
    if (!inputs.contains(t.name())) {
      onnx::ValueInfoProto* v = g->add_input();
      v->set_name(t.name());
      onnx::TypeProto::Tensor* type = v->mutable_type()->mutable_tensor_type();
      type->set_elem_type(t.data_type());
      for (std::int64_t d : t.dims()) type->mutable_shape()->add_dim()->set_dim_value(d);
    }
    initializers->DeleteSubrange(k, 1);
  }
  return copy;
}

}  // namespace saturn::tensor::onnx_io

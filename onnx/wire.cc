// ONNX models read from protobuf's wire format directly (importer.h): the
// initializers' names and locations alone, or a model whose large weights
// stay where they lie in its file.
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "saturn/onnx/importer.h"

namespace saturn::tensor::onnx_io {

namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

bool is_length_delimited(std::uint32_t tag, int field) {
  return WireFormatLite::GetTagFieldNumber(tag) == field &&
         WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
}

// Reads one length-delimited field's body with `read`, inside its limit.
template <typename Read>
bool read_nested(CodedInputStream& in, Read read) {
  std::uint32_t length = 0;
  if (!in.ReadVarint32(&length)) return false;
  const auto limit = in.PushLimit(static_cast<int>(length));
  const bool ok = read() && in.ConsumedEntireMessage();
  in.PopLimit(limit);
  return ok;
}

// Calls `on_field(tag, start)` for each field of the message `in` reads
// (until its limit), `start` the offset of the field's tag in the buffer;
// false when the message is malformed or `on_field` fails.
template <typename OnField>
bool read_fields(CodedInputStream& in, OnField on_field) {
  for (;;) {
    const int start = in.CurrentPosition();
    const std::uint32_t tag = in.ReadTag();
    if (tag == 0) return true;
    if (!on_field(tag, start)) return false;
  }
}

// A stream over a whole serialized message, with protobuf's 2 GiB limit.
class Wire {
 public:
  explicit Wire(std::string_view bytes)
      : bytes_(bytes),
        in_(reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size())) {
    in_.SetTotalBytesLimit(INT_MAX);
  }

  CodedInputStream& in() { return in_; }

  // Skips field `tag`, read at `start`, and appends its bytes (the tag
  // too) to `kept`, to be parsed with the message's other kept fields.
  bool keep(std::uint32_t tag, int start, std::string& kept) {
    return WireFormatLite::SkipField(&in_, tag) && keep_since(start, kept);
  }

  // `length` bytes from `offset`.
  std::string bytes(int offset, std::uint32_t length) const {
    return std::string(bytes_.substr(static_cast<std::size_t>(offset), length));
  }

  // Appends the bytes read since `start` to `kept`.
  bool keep_since(int start, std::string& kept) {
    kept.append(bytes_.substr(static_cast<std::size_t>(start),
                              static_cast<std::size_t>(in_.CurrentPosition() - start)));
    return true;
  }

 private:
  std::string_view bytes_;
  CodedInputStream in_;
};

// A TensorProto's name, data location and external data; its other fields
// (the data) are skipped, not copied.
bool read_tensor_stub(CodedInputStream& in, onnx::TensorProto& t) {
  return read_fields(in, [&](std::uint32_t tag, int) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    if (is_length_delimited(tag, onnx::TensorProto::kNameFieldNumber))
      return WireFormatLite::ReadString(&in, t.mutable_name());
    if (is_length_delimited(tag, onnx::TensorProto::kExternalDataFieldNumber))
      return WireFormatLite::ReadMessage(&in, t.add_external_data());
    if (field == onnx::TensorProto::kDataLocationFieldNumber &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT) {
      std::uint32_t v = 0;
      if (!in.ReadVarint32(&v)) return false;
      t.set_data_location(static_cast<onnx::TensorProto::DataLocation>(v));
      return true;
    }
    return WireFormatLite::SkipField(&in, tag);
  });
}

// Reads a model's files through the wire format, leaving the raw data of
// large initializers in the file (parse_leaving_weights).
class InPlace {
 public:
  InPlace(std::string_view bytes, std::string location, std::uint32_t min_bytes)
      : wire_(bytes), location_(std::move(location)), min_bytes_(min_bytes) {}

  bool model(onnx::ModelProto& m) {
    return read_around(m, onnx::ModelProto::kGraphFieldNumber,
                       [&] { return graph(*m.mutable_graph()); }) &&
           wire_.in().ConsumedEntireMessage();
  }

 private:
  bool graph(onnx::GraphProto& g) {
    return read_around(g, onnx::GraphProto::kInitializerFieldNumber,
                       [&] { return tensor(*g.add_initializer()); });
  }

  // The message `in` reads into `m`: each occurrence of the message field
  // `field` by `read_field`, every other field by protobuf.
  template <typename Message, typename ReadField>
  bool read_around(Message& m, int field, ReadField read_field) {
    std::string kept;
    CodedInputStream& in = wire_.in();
    const bool ok = read_fields(in, [&](std::uint32_t tag, int start) {
      if (!is_length_delimited(tag, field)) return wire_.keep(tag, start, kept);
      return read_nested(in, read_field);
    });
    return ok && m.MergeFromString(kept);
  }

  // An initializer; raw data of at least min_bytes_ becomes a reference
  // to where it lies in the file.
  bool tensor(onnx::TensorProto& t) {
    std::string kept;
    std::optional<std::pair<int, std::uint32_t>> left;  // offset, length
    CodedInputStream& in = wire_.in();
    const bool ok = read_fields(in, [&](std::uint32_t tag, int start) {
      if (!is_length_delimited(tag, onnx::TensorProto::kRawDataFieldNumber))
        return wire_.keep(tag, start, kept);
      std::uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return false;
      // A field given twice takes its last value, as protobuf reads it.
      if (length < min_bytes_) {
        left.reset();
        return in.Skip(static_cast<int>(length)) && wire_.keep_since(start, kept);
      }
      left = {in.CurrentPosition(), length};
      return in.Skip(static_cast<int>(length));
    });
    if (!ok || !t.ParseFromString(kept)) return false;
    if (!left) return true;
    if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0) {
      // Data inline and external at once: read as protobuf would, for the
      // import to name the fault.
      t.set_raw_data(wire_.bytes(left->first, left->second));
      return true;
    }
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](std::string key, std::string value) {
      auto* e = t.add_external_data();
      e->set_key(std::move(key));
      e->set_value(std::move(value));
    };
    add("location", location_);
    add("offset", std::to_string(left->first));
    add("length", std::to_string(left->second));
    return true;
  }

  Wire wire_;
  std::string location_;
  std::uint32_t min_bytes_;
};

}  // namespace

absl::StatusOr<onnx::ModelProto> initializer_stubs(std::string_view bytes) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX))
    return absl::InvalidArgumentError("past protobuf's 2 GiB limit for one message");
  onnx::ModelProto model;
  Wire wire(bytes);
  CodedInputStream& in = wire.in();
  onnx::GraphProto& g = *model.mutable_graph();
  const bool ok = read_fields(in, [&](std::uint32_t tag, int) {
    if (!is_length_delimited(tag, onnx::ModelProto::kGraphFieldNumber))
      return WireFormatLite::SkipField(&in, tag);
    return read_nested(in, [&] {
      return read_fields(in, [&](std::uint32_t t, int) {
        if (!is_length_delimited(t, onnx::GraphProto::kInitializerFieldNumber))
          return WireFormatLite::SkipField(&in, t);
        return read_nested(in, [&] { return read_tensor_stub(in, *g.add_initializer()); });
      });
    });
  });
  if (!ok || !in.ConsumedEntireMessage())
    return absl::InvalidArgumentError("not an ONNX model (the protobuf does not parse)");
  return model;
}

absl::StatusOr<onnx::ModelProto> parse_leaving_weights(std::string_view bytes,
                                                       const std::string& location,
                                                       std::uint32_t min_bytes) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX))
    return absl::InvalidArgumentError("past protobuf's 2 GiB limit for one message");
  onnx::ModelProto model;
  if (!InPlace(bytes, location, min_bytes).model(model))
    return absl::InvalidArgumentError("not an ONNX model (the protobuf does not parse)");
  return model;
}

}  // namespace saturn::tensor::onnx_io

#include "saturn/onnx/proto.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/escaping.h"
#include "fmt/format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace saturn::tensor::onnx_io {

namespace {

using onnx::TensorProto;

struct DTypePair {
  DType dtype;
  int onnx;
};

constexpr DTypePair kPairs[] = {
    {DType::kFloat32, TensorProto::FLOAT},
    {DType::kInt64, TensorProto::INT64},
    {DType::kBool, TensorProto::BOOL},
    {DType::kInt8, TensorProto::INT8},
    {DType::kUInt8, TensorProto::UINT8},
    {DType::kInt16, TensorProto::INT16},
    {DType::kUInt16, TensorProto::UINT16},
    {DType::kInt32, TensorProto::INT32},
    {DType::kUInt32, TensorProto::UINT32},
    {DType::kUInt64, TensorProto::UINT64},
    {DType::kFloat16, TensorProto::FLOAT16},
    {DType::kBFloat16, TensorProto::BFLOAT16},
    {DType::kFloat64, TensorProto::DOUBLE},
    {DType::kComplex64, TensorProto::COMPLEX64},
    {DType::kComplex128, TensorProto::COMPLEX128},
    {DType::kString, TensorProto::STRING},
    // IR 10's 4-bit integers, newer than this build's libonnx (1.12):
    // TensorProto::UINT4 and INT4.
    {DType::kUInt4, 21},
    {DType::kInt4, 22},
};

// Two 4-bit integers per byte, the first in the low half, unpacked one per
// byte (int4 sign-extended).
std::vector<std::byte> unpack_4bit(std::span<const std::byte> packed, DType dtype,
                                   std::int64_t count) {
  std::vector<std::byte> out(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i)
    out[i] = four_bit_byte(dtype, std::to_integer<unsigned>(packed[i / 2]) >> (i % 2 * 4));
  return out;
}

std::string pack_4bit(std::span<const std::byte> unpacked) {
  std::string out((unpacked.size() + 1) / 2, '\0');
  for (std::size_t i = 0; i < unpacked.size(); ++i)
    out[i / 2] = static_cast<char>(static_cast<unsigned char>(out[i / 2]) |
                                   ((std::to_integer<unsigned>(unpacked[i]) & 0xF) << (i % 2 * 4)));
  return out;
}

template <typename T>
void append_le(std::vector<std::byte>& out, T value) {
  std::byte b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));  // x86-64 and the ONNX format are little-endian
  out.insert(out.end(), b, b + sizeof(T));
}

// Typed-field storage: the narrow integer types, bool and the 16-bit floats
// sit in int32_data (one element each, the low bits); uint32 and uint64 in
// uint64_data; float64 and complex128 in double_data; complex64 in
// float_data (two floats per element).
absl::StatusOr<std::vector<std::byte>> typed_bytes(const TensorProto& p, DType dtype,
                                                   std::int64_t count) {
  std::vector<std::byte> out;
  const std::size_t width = dtype_bytes(dtype);
  auto from_ints = [&](const auto& field, std::size_t per_element) -> absl::Status {
    if (static_cast<std::int64_t>(field.size()) != count * static_cast<std::int64_t>(per_element))
      return absl::InvalidArgumentError(fmt::format("tensor '{}' holds {} values, expects {}",
                                                    p.name(), field.size(), count * per_element));
    for (auto v : field) {
      auto u = static_cast<std::uint64_t>(v);
      std::byte b[8];
      std::memcpy(b, &u, 8);
      out.insert(out.end(), b, b + width / per_element);
    }
    return absl::OkStatus();
  };
  absl::Status s;
  switch (dtype) {
    case DType::kFloat64:
      s = p.double_data_size() == count ? absl::OkStatus()
                                        : absl::InvalidArgumentError("double_data size");
      for (double v : p.double_data()) append_le(out, v);
      break;
    case DType::kComplex128:
      s = p.double_data_size() == 2 * count ? absl::OkStatus()
                                            : absl::InvalidArgumentError("double_data size");
      for (double v : p.double_data()) append_le(out, v);
      break;
    case DType::kComplex64:
      s = p.float_data_size() == 2 * count ? absl::OkStatus()
                                           : absl::InvalidArgumentError("float_data size");
      for (float v : p.float_data()) append_le(out, v);
      break;
    case DType::kUInt32:
    case DType::kUInt64:
      s = from_ints(p.uint64_data(), 1);
      break;
    case DType::kInt4:
    case DType::kUInt4: {  // int32_data holds the packed bytes, one per entry
      std::vector<std::byte> packed;
      for (std::int32_t v : p.int32_data()) packed.push_back(static_cast<std::byte>(v & 0xFF));
      if (static_cast<std::int64_t>(packed.size()) != (count + 1) / 2)
        s = absl::InvalidArgumentError(
            fmt::format("{} packed bytes, expects {}", packed.size(), (count + 1) / 2));
      else
        out = unpack_4bit(packed, dtype, count);
      break;
    }
    default:
      s = from_ints(p.int32_data(), 1);
  }
  if (!s.ok())
    return absl::InvalidArgumentError(fmt::format(
        "tensor '{}': the data does not match its shape ({})", p.name(), std::string(s.message())));
  return out;
}

}  // namespace

std::optional<DType> dtype_from_onnx(int elem_type) {
  for (const DTypePair& p : kPairs) {
    if (p.onnx == elem_type) return p.dtype;
  }
  return std::nullopt;
}

int dtype_to_onnx(DType dtype) {
  for (const DTypePair& p : kPairs) {
    if (p.dtype == dtype) return p.onnx;
  }
  return TensorProto::UNDEFINED;
}

absl::StatusOr<TensorType> tensor_proto_type(const TensorProto& p) {
  std::optional<DType> dtype = dtype_from_onnx(p.data_type());
  if (!dtype) {
    return absl::InvalidArgumentError(
        fmt::format("tensor '{}' has an unknown element type ({})", p.name(), p.data_type()));
  }
  TensorType type{*dtype, Dims(p.dims().begin(), p.dims().end())};
  for (std::int64_t d : type.dims) {
    if (d < 0)
      return absl::InvalidArgumentError(
          fmt::format("tensor '{}' has a negative dimension", p.name()));
  }
  if (!within_size_limit(type))
    return absl::InvalidArgumentError(fmt::format("tensor '{}' of type {} holds more than {} TiB",
                                                  p.name(), to_string(type),
                                                  kMaxTensorBytes >> 40));
  return type;
}

std::int64_t stored_bytes(const TensorType& type) {
  return is_4bit(type.dtype) ? (type.num_elements() + 1) / 2 : type.num_bytes();
}

Tensor tensor_from_stored(const TensorType& type, std::span<const std::byte> bytes,
                          std::shared_ptr<const void> owner) {
  if (is_4bit(type.dtype)) return Tensor(type, unpack_4bit(bytes, type.dtype, type.num_elements()));
  return Tensor::borrowing(type, bytes, std::move(owner));
}

namespace {

// The 8-bit integer type libonnx 1.12 knows in place of a 4-bit one.
int eight_bit_kin(int elem_type) {
  if (elem_type == dtype_to_onnx(DType::kInt4)) return TensorProto::INT8;
  if (elem_type == dtype_to_onnx(DType::kUInt4)) return TensorProto::UINT8;
  return elem_type;
}

void disguise_types(onnx::GraphProto& g, FourBitValues& out) {
  auto retype = [&](onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type()) return;
    const int elem = v.type().tensor_type().elem_type();
    if (eight_bit_kin(elem) == elem) return;
    out.types[v.name()] = *dtype_from_onnx(elem);
    v.mutable_type()->mutable_tensor_type()->set_elem_type(eight_bit_kin(elem));
  };
  for (auto* list : {g.mutable_input(), g.mutable_output(), g.mutable_value_info()})
    for (onnx::ValueInfoProto& v : *list) retype(v);
  for (onnx::NodeProto& n : *g.mutable_node()) {
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_g()) disguise_types(*a.mutable_g(), out);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) disguise_types(sub, out);
    }
  }
}

}  // namespace

absl::StatusOr<FourBitValues> disguise_4bit(onnx::ModelProto& model,
                                            const std::map<std::string, Tensor>& external) {
  FourBitValues out;
  for (TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    const int kin = eight_bit_kin(t.data_type());
    if (kin == t.data_type()) continue;
    const DType dtype = *dtype_from_onnx(t.data_type());
    out.types[t.name()] = dtype;
    if (auto mapped = external.find(t.name()); mapped != external.end()) {
      out.initializers.emplace(t.name(), mapped->second);
      t.set_data_type(kin);
      continue;
    }
    absl::StatusOr<Tensor> value = tensor_from_proto(t);
    if (!value.ok()) return value.status();
    t.clear_int32_data();
    t.set_data_type(kin);
    const std::span<const std::byte> bytes = value->data();
    t.set_raw_data(bytes.data(), bytes.size());
    out.initializers.emplace(t.name(), *std::move(value));
  }
  disguise_types(*model.mutable_graph(), out);
  return out;
}

absl::StatusOr<Tensor> tensor_from_proto(const TensorProto& p, std::shared_ptr<const void> owner) {
  absl::StatusOr<TensorType> checked = tensor_proto_type(p);
  if (!checked.ok()) return checked.status();
  const TensorType& type = *checked;
  const DType dtype = type.dtype;
  const std::int64_t count = type.num_elements();
  if (dtype == DType::kString) {
    if (p.string_data_size() != count)
      return absl::InvalidArgumentError(fmt::format("tensor '{}' holds {} strings, expects {}",
                                                    p.name(), p.string_data_size(), count));
    return Tensor(type, std::vector<std::string>(p.string_data().begin(), p.string_data().end()));
  }
  std::vector<std::byte> bytes;
  if (p.has_raw_data()) {
    if (static_cast<std::int64_t>(p.raw_data().size()) != stored_bytes(type))
      return absl::InvalidArgumentError(fmt::format("tensor '{}' holds {} bytes, expects {}",
                                                    p.name(), p.raw_data().size(),
                                                    stored_bytes(type)));
    const auto raw = std::as_bytes(std::span(p.raw_data().data(), p.raw_data().size()));
    if (owner || is_4bit(dtype)) return tensor_from_stored(type, raw, std::move(owner));
    // float32 and int64 are copied once, straight into their typed buffer.
    if (dtype == DType::kFloat32) {
      std::vector<float> v(static_cast<std::size_t>(count));
      if (count > 0) std::memcpy(v.data(), p.raw_data().data(), p.raw_data().size());
      return Tensor(type, std::move(v));
    }
    if (dtype == DType::kInt64) {
      std::vector<std::int64_t> v(static_cast<std::size_t>(count));
      if (count > 0) std::memcpy(v.data(), p.raw_data().data(), p.raw_data().size());
      return Tensor(type, std::move(v));
    }
    const auto* b = reinterpret_cast<const std::byte*>(p.raw_data().data());
    bytes.assign(b, b + p.raw_data().size());
  } else if (dtype == DType::kFloat32) {
    if (p.float_data_size() != count)
      return absl::InvalidArgumentError(fmt::format("tensor '{}' holds {} floats, expects {}",
                                                    p.name(), p.float_data_size(), count));
    return Tensor(type, std::vector<float>(p.float_data().begin(), p.float_data().end()));
  } else if (dtype == DType::kInt64) {
    if (p.int64_data_size() != count)
      return absl::InvalidArgumentError(fmt::format("tensor '{}' holds {} integers, expects {}",
                                                    p.name(), p.int64_data_size(), count));
    return Tensor(type, std::vector<std::int64_t>(p.int64_data().begin(), p.int64_data().end()));
  } else {
    absl::StatusOr<std::vector<std::byte>> typed = typed_bytes(p, dtype, count);
    if (!typed.ok()) return typed.status();
    bytes = std::move(*typed);
  }
  if (dtype == DType::kFloat32) {
    std::vector<float> v(static_cast<std::size_t>(count));
    if (!bytes.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
    return Tensor(type, std::move(v));
  }
  if (dtype == DType::kInt64) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(count));
    if (!bytes.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
    return Tensor(type, std::move(v));
  }
  return Tensor(type, std::move(bytes));
}

void tensor_to_proto(const Tensor& tensor, const std::string& name, TensorProto* proto) {
  proto->set_name(name);
  proto->set_data_type(dtype_to_onnx(tensor.dtype()));
  for (std::int64_t d : tensor.dims()) proto->add_dims(d);
  if (tensor.dtype() == DType::kString) {
    for (const std::string& s : tensor.strings()) proto->add_string_data(s);
    return;
  }
  const std::span<const std::byte> bytes = tensor.data();
  if (is_4bit(tensor.dtype()))
    proto->set_raw_data(pack_4bit(bytes));
  else
    proto->set_raw_data(bytes.data(), bytes.size());
}

std::string serialize_base64(const google::protobuf::MessageLite& message) {
  std::string bytes;
  // Deterministic, so equal attributes give equal text (and equal e-nodes).
  google::protobuf::io::StringOutputStream stream(&bytes);
  {
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return absl::Base64Escape(bytes);
}

bool parse_base64(std::string_view text, google::protobuf::MessageLite* message) {
  std::string bytes;
  return absl::Base64Unescape(absl::string_view(text.data(), text.size()), &bytes) &&
         message->ParseFromString(bytes);
}

namespace {

void collect_outer(const onnx::GraphProto& g, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& t : g.sparse_initializer()) defined.insert(t.values().name());
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.contains(name)) out.insert(name);
  };
  for (const onnx::NodeProto& n : g.node()) {
    for (const std::string& in : n.input()) use(in);
    for (const onnx::AttributeProto& a : n.attribute()) {
      std::set<std::string> inner;
      if (a.has_g()) collect_outer(a.g(), inner);
      for (const auto& sub : a.graphs()) collect_outer(sub, inner);
      for (const std::string& name : inner) use(name);
    }
    for (const std::string& o : n.output()) defined.insert(o);
  }
  for (const auto& v : g.output()) use(v.name());
}

}  // namespace

std::set<std::string> outer_names(const onnx::GraphProto& graph) {
  std::set<std::string> out;
  collect_outer(graph, out);
  return out;
}

std::set<std::string> node_outer_names(const onnx::NodeProto& node) {
  std::set<std::string> out;
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.has_g()) out.merge(outer_names(a.g()));
    for (const auto& sub : a.graphs()) out.merge(outer_names(sub));
  }
  return out;
}

std::optional<Tensor> constant_node_value(const onnx::NodeProto& n) {
  if (n.attribute_size() != 1) return std::nullopt;
  const onnx::AttributeProto& a = n.attribute(0);
  auto floats = [](Dims dims, std::vector<float> v) {
    return Tensor(TensorType{DType::kFloat32, std::move(dims)}, std::move(v));
  };
  auto ints = [](Dims dims, std::vector<std::int64_t> v) {
    return Tensor(TensorType{DType::kInt64, std::move(dims)}, std::move(v));
  };
  if (a.name() == "value" && a.has_t()) {
    absl::StatusOr<Tensor> t = tensor_from_proto(a.t());
    return t.ok() ? std::optional<Tensor>(*t) : std::nullopt;
  }
  if (a.name() == "value_float") return floats({}, {a.f()});
  if (a.name() == "value_floats")
    return floats({a.floats_size()}, std::vector<float>(a.floats().begin(), a.floats().end()));
  if (a.name() == "value_int") return ints({}, {a.i()});
  if (a.name() == "value_ints")
    return ints({a.ints_size()}, std::vector<std::int64_t>(a.ints().begin(), a.ints().end()));
  if (a.name() == "value_string")
    return Tensor(TensorType{DType::kString, {}}, std::vector<std::string>{a.s()});
  if (a.name() == "value_strings")
    return Tensor(TensorType{DType::kString, {a.strings_size()}},
                  std::vector<std::string>(a.strings().begin(), a.strings().end()));
  return std::nullopt;
}

void set_int(onnx::NodeProto* n, const char* key, std::int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_float(onnx::NodeProto* n, const char* key, double v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
}

void set_ints(onnx::NodeProto* n, const char* key, const std::vector<std::int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INTS);
  for (std::int64_t x : v) a->add_ints(x);
}

void set_string(onnx::NodeProto* n, const char* key, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

// An Einsum equation's terms, spaces dropped: {"bhid", "bhjd", "bhij"};
// nullopt for an ellipsis, an implicit output or a repeated letter in a term.
std::optional<std::vector<std::string>> einsum_terms(std::string equation) {
  std::erase(equation, ' ');
  const std::size_t arrow = equation.find("->");
  if (arrow == std::string::npos || equation.find('.') != std::string::npos) return std::nullopt;
  std::vector<std::string> terms;
  std::size_t start = 0;
  for (std::size_t comma; (comma = equation.find(',', start)) < arrow; start = comma + 1)
    terms.push_back(equation.substr(start, comma - start));
  terms.push_back(equation.substr(start, arrow - start));
  terms.push_back(equation.substr(arrow + 2));
  for (const std::string& term : terms) {
    std::string sorted = term;
    std::ranges::sort(sorted);
    if (std::ranges::adjacent_find(sorted) != sorted.end()) return std::nullopt;
  }
  return terms;
}

std::optional<std::map<char, std::int64_t>> einsum_sizes(const std::vector<std::string>& terms,
                                                         std::span<const Dims> dims) {
  if (terms.size() != dims.size() + 1) return std::nullopt;
  std::map<char, std::int64_t> size;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (dims[k].size() != terms[k].size()) return std::nullopt;
    for (std::size_t i = 0; i < dims[k].size(); ++i) {
      if (size.try_emplace(terms[k][i], dims[k][i]).first->second != dims[k][i]) return std::nullopt;
    }
  }
  if (!std::ranges::all_of(terms.back(), [&](char c) { return size.contains(c); }))
    return std::nullopt;
  return size;
}

}  // namespace saturn::tensor::onnx_io

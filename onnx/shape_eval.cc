// The evaluator of shape_values.h: the shape arithmetic's operators on
// small values.
#include "saturn/onnx/shape_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "fmt/format.h"
#include "saturn/tensor/infer.h"
#include "saturn/onnx/proto.h"
#include "saturn/onnx/shape_eval_internal.h"

namespace saturn::tensor::onnx_io {

namespace shape_eval {

// A value held as a double back as int64, saturating: the ends ONNX spells
// as INT64_MAX or INT64_MIN ("to the end") are past a double's exact range,
// and a plain cast of them overflows.
std::int64_t to_int64(double x) {
  constexpr double kLimit = 9.2233720368547758e18;  // 2^63
  if (x >= kLimit) return INT64_MAX;
  if (x <= -kLimit) return INT64_MIN;
  return static_cast<std::int64_t>(x);
}

bool held_as_integer(DType d) {
  return d == DType::kInt64 || d == DType::kInt32 || d == DType::kBool;
}

std::optional<Num> to_num(const Tensor& t) {
  if (t.size() > kMaxShapeValueElements) return std::nullopt;
  Num n{t.dtype(), t.dims(), {}};
  switch (t.dtype()) {
    case DType::kFloat32:
      n.v.assign(t.floats().begin(), t.floats().end());
      return n;
    case DType::kInt64:
      n.v.assign(t.ints().begin(), t.ints().end());
      return n;
    case DType::kInt32:
      for (std::size_t i = 0; i + 4 <= t.bytes().size(); i += 4) {
        std::int32_t x;
        std::memcpy(&x, t.bytes().data() + i, 4);
        n.v.push_back(x);
      }
      return n;
    case DType::kBool:
      for (std::byte b : t.bytes()) n.v.push_back(b != std::byte{0} ? 1 : 0);
      return n;
    case DType::kFloat64:  // a position grid in double (RT-DETR's)
      for (std::size_t i = 0; i + 8 <= t.bytes().size(); i += 8) {
        double x;
        std::memcpy(&x, t.bytes().data() + i, 8);
        n.v.push_back(x);
      }
      return n;
    default:
      return std::nullopt;
  }
}

Tensor to_tensor(const Num& n) {
  TensorType type{n.dtype, n.dims};
  switch (n.dtype) {
    case DType::kFloat32:
      return Tensor(type, std::vector<float>(n.v.begin(), n.v.end()));
    case DType::kFloat64: {
      std::vector<std::byte> bytes(n.v.size() * 8);
      std::memcpy(bytes.data(), n.v.data(), bytes.size());
      return Tensor(type, std::move(bytes));
    }
    case DType::kInt64: {
      std::vector<std::int64_t> ints;
      for (double x : n.v) ints.push_back(to_int64(x));
      return Tensor(type, std::move(ints));
    }
    case DType::kInt32: {
      std::vector<std::byte> bytes(n.v.size() * 4);
      for (std::size_t i = 0; i < n.v.size(); ++i) {
        const auto x = static_cast<std::int32_t>(n.v[i]);
        std::memcpy(bytes.data() + i * 4, &x, 4);
      }
      return Tensor(type, std::move(bytes));
    }
    default: {  // kBool
      std::vector<std::byte> bytes;
      for (double x : n.v) bytes.push_back(std::byte{static_cast<unsigned char>(x != 0)});
      return Tensor(type, std::move(bytes));
    }
  }
}

std::int64_t count(const Dims& dims) { return shape_value_count(dims); }

// Applies `f` elementwise over the broadcast of `inputs`.
template <typename F>
std::optional<Num> elementwise(const std::vector<Num>& inputs, DType dtype, F f) {
  Dims out;
  for (const Num& n : inputs) {
    std::optional<Dims> b = broadcast_dims(out, n.dims);
    if (!b) return std::nullopt;
    out = *b;
  }
  if (count(out) > kMaxShapeValueElements) return std::nullopt;
  Num r{dtype, out, std::vector<double>(static_cast<std::size_t>(count(out)))};
  const Dims out_strides = strides_of(out);
  std::vector<Dims> read;
  for (const Num& n : inputs) read.push_back(broadcast_strides(n.dims, out));
  std::vector<double> args(inputs.size());
  for (std::int64_t i = 0; i < count(out); ++i) {
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      std::int64_t index = 0;
      for (std::size_t a = 0; a < out.size(); ++a)
        index += (i / out_strides[a]) % out[a] * read[k][a];
      args[k] = inputs[k].v[static_cast<std::size_t>(index)];
    }
    r.v[static_cast<std::size_t>(i)] = f(args);
  }
  return r;
}

std::optional<std::int64_t> axis_in(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

Ints as_ints(const Num& n) {
  Ints out;
  for (double x : n.v) out.push_back(to_int64(x));
  return out;
}

std::optional<Num> shape_of(const Dims& dims, const onnx::NodeProto& node) {
  const auto [start, end] = shape_axes(node, static_cast<std::int64_t>(dims.size()));
  Num r{DType::kInt64, {std::max<std::int64_t>(end - start, 0)}, {}};
  for (std::int64_t k = start; k < end; ++k) r.v.push_back(static_cast<double>(dims[k]));
  return r;
}

double integer_division(double a, double b, bool integer) {
  if (!integer) return a / b;
  return b == 0 ? 0 : std::trunc(a / b);
}

double modulo(double a, double b, bool fmod) {
  if (b == 0) return 0;
  if (fmod) return std::fmod(a, b);
  const double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

// The elementwise operators: nullopt when `op` is none of them.
std::optional<std::optional<Num>> evaluate_elementwise(const std::string& op, const Attrs& a,
                                                       const std::vector<Num>& in) {
  using Args = const std::vector<double>&;
  const DType t = in.empty() ? DType::kInt64 : in[0].dtype;
  const bool integer = held_as_integer(t);
  auto binary = [&](auto f) { return elementwise(in, t, [f](Args x) { return f(x[0], x[1]); }); };
  auto compare = [&](auto f) {
    return elementwise(in, DType::kBool, [f](Args x) { return f(x[0], x[1]) ? 1.0 : 0.0; });
  };
  auto unary = [&](auto f) { return elementwise(in, t, [f](Args x) { return f(x[0]); }); };
  if (op == "Add") return binary(std::plus<>());
  if (op == "Sub") return binary(std::minus<>());
  if (op == "Mul") return binary(std::multiplies<>());
  if (op == "Div")
    return binary([integer](double x, double y) { return integer_division(x, y, integer); });
  if (op == "Pow")  // a table's side as the square root of its length (DINOv2)
    return binary([integer](double x, double y) {
      const double p = std::pow(x, y);
      return integer ? std::trunc(p) : p;
    });
  if (op == "Mod") {
    const bool fmod = a.i("fmod").value_or(0) != 0;
    return binary([fmod](double x, double y) { return modulo(x, y, fmod); });
  }
  if (op == "Equal") return compare(std::equal_to<>());
  if (op == "Less") return compare(std::less<>());
  if (op == "Greater") return compare(std::greater<>());
  if (op == "LessOrEqual") return compare(std::less_equal<>());
  if (op == "GreaterOrEqual") return compare(std::greater_equal<>());
  if (op == "And") return compare([](double x, double y) { return x != 0 && y != 0; });
  if (op == "Or") return compare([](double x, double y) { return x != 0 || y != 0; });
  if (op == "Not") return unary([](double x) { return x == 0 ? 1.0 : 0.0; });
  if (op == "Neg") return unary(std::negate<>());
  if (op == "Abs") return unary([](double x) { return std::abs(x); });
  if (op == "Sqrt") return unary([](double x) { return std::sqrt(x); });
  if (op == "Floor") return unary([](double x) { return std::floor(x); });
  if (op == "Ceil") return unary([](double x) { return std::ceil(x); });
  if (op == "Min" || op == "Max") {
    const bool max = op == "Max";
    return elementwise(in, t, [max](Args x) {
      return max ? *std::ranges::max_element(x) : *std::ranges::min_element(x);
    });
  }
  if (op == "Where" && in.size() == 3)
    return elementwise(in, in[1].dtype, [](Args x) { return x[0] != 0 ? x[1] : x[2]; });
  if (op == "Expand" && in.size() == 2) {
    const Dims shape(as_ints(in[1]));
    if (count(shape) > kMaxShapeValueElements) return std::optional<Num>();
    const Num zeros{in[0].dtype, shape, std::vector<double>(count(shape), 0.0)};
    return elementwise({in[0], zeros}, in[0].dtype, [](Args x) { return x[0]; });
  }
  return std::nullopt;
}

}  // namespace shape_eval

std::int64_t shape_value_count(std::span<const std::int64_t> dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  }
  return n;
}

std::pair<std::int64_t, std::int64_t> shape_axes(const onnx::NodeProto& shape, std::int64_t rank) {
  std::int64_t start = 0, end = rank;
  for (const onnx::AttributeProto& a : shape.attribute()) {
    if (a.name() == "start") start = a.i();
    if (a.name() == "end") end = a.i();
  }
  auto clamp = [rank](std::int64_t x) { return std::clamp(x < 0 ? x + rank : x, std::int64_t{0}, rank); };
  return {clamp(start), clamp(end)};
}

std::optional<std::vector<Tensor>> evaluate_shape_node(const onnx::NodeProto& node,
                                                       const ValueLookup& values,
                                                       const DimsLookup& dims) {
  if (!is_default_domain(node.domain()) || node.output_size() != 1) return std::nullopt;
  using namespace shape_eval;  // NOLINT: the evaluator's own helpers
  const Attrs a(node);
  const std::string& op = node.op_type();
  std::optional<Num> out;
  if (op == "Shape" || op == "Size") {
    if (node.input_size() < 1) return std::nullopt;
    std::optional<Dims> d = dims(node.input(0));
    if (!d) return std::nullopt;
    out = op == "Shape" ? shape_of(*d, node) : Num{DType::kInt64, {}, {static_cast<double>(count(*d))}};
  } else {
    std::vector<Num> in;
    for (int k = 0; k < node.input_size(); ++k) {
      const std::string& name = node.input(k);
      if (name.empty()) {
        // An omitted optional input: only trailing ones are understood here.
        for (int rest = k; rest < node.input_size(); ++rest)
          if (!node.input(rest).empty()) return std::nullopt;
        break;
      }
      const Tensor* t = values(name);
      if (t == nullptr) return std::nullopt;
      std::optional<Num> n = to_num(*t);
      if (!n) return std::nullopt;
      in.push_back(*std::move(n));
    }
    if (in.empty()) return std::nullopt;
    std::optional<std::optional<Num>> r = evaluate_elementwise(op, a, in);
    if (!r) r = evaluate_structural(op, a, in);
    if (!r) return std::nullopt;
    out = *std::move(r);
  }
  if (!out || out->size() > kMaxShapeValueElements || count(out->dims) != out->size())
    return std::nullopt;
  return std::vector<Tensor>{to_tensor(*out)};
}

}  // namespace saturn::tensor::onnx_io

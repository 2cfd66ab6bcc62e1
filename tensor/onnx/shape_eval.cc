// The evaluator of shape_values.h: the shape arithmetic's operators on
// small values.
#include "saturn/tensor/onnx/shape_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "fmt/format.h"
#include "saturn/tensor/onnx/proto.h"

namespace saturn::tensor::onnx_io {

namespace {

// A small value computed with: its element type, dimensions and elements
// (a double holds every integer a shape needs exactly).
struct Num {
  DType dtype = DType::kInt64;
  Dims dims;
  std::vector<double> v;

  std::int64_t size() const { return static_cast<std::int64_t>(v.size()); }
};

// A value held as a double back as int64, saturating: the ends ONNX spells
// as INT64_MAX or INT64_MIN ("to the end") are past a double's exact range,
// and a plain cast of them overflows.
std::int64_t to_int64(double x) {
  constexpr double kLimit = 9.2233720368547758e18;  // 2^63
  if (x >= kLimit) return INT64_MAX;
  if (x <= -kLimit) return INT64_MIN;
  return static_cast<std::int64_t>(x);
}

bool is_integer(DType d) {
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
    default:
      return std::nullopt;
  }
}

Tensor to_tensor(const Num& n) {
  TensorType type{n.dtype, n.dims};
  switch (n.dtype) {
    case DType::kFloat32:
      return Tensor(type, std::vector<float>(n.v.begin(), n.v.end()));
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

// Row-major strides of `dims`.
Dims strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (int a = static_cast<int>(dims.size()) - 2; a >= 0; --a) s[a] = s[a + 1] * dims[a + 1];
  return s;
}

// The multidirectional (numpy) broadcast of two shapes.
std::optional<Dims> broadcast(const Dims& a, const Dims& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    const std::int64_t x = k + a.size() >= rank ? a[k + a.size() - rank] : 1;
    const std::int64_t y = k + b.size() >= rank ? b[k + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[k] = x == 1 ? y : x;
  }
  return out;
}

// The element of `n` that position `flat` of the broadcast shape `out` reads.
double at_broadcast(const Num& n, const Dims& out, std::int64_t flat) {
  const Dims out_strides = strides(out), in_strides = strides(n.dims);
  std::int64_t index = 0;
  const std::size_t shift = out.size() - n.dims.size();
  for (std::size_t k = shift; k < out.size(); ++k) {
    const std::int64_t coordinate = (flat / out_strides[k]) % out[k];
    if (n.dims[k - shift] != 1) index += coordinate * in_strides[k - shift];
  }
  return n.v[static_cast<std::size_t>(index)];
}

// Applies `f` elementwise over the broadcast of `inputs`.
template <typename F>
std::optional<Num> elementwise(const std::vector<Num>& inputs, DType dtype, F f) {
  Dims out;
  for (const Num& n : inputs) {
    std::optional<Dims> b = broadcast(out, n.dims);
    if (!b) return std::nullopt;
    out = *b;
  }
  if (count(out) > kMaxShapeValueElements) return std::nullopt;
  Num r{dtype, out, std::vector<double>(static_cast<std::size_t>(count(out)))};
  std::vector<double> args(inputs.size());
  for (std::int64_t i = 0; i < count(out); ++i) {
    for (std::size_t k = 0; k < inputs.size(); ++k) args[k] = at_broadcast(inputs[k], out, i);
    r.v[static_cast<std::size_t>(i)] = f(args);
  }
  return r;
}

// A node's attributes by name.
class Attrs {
 public:
  explicit Attrs(const onnx::NodeProto& node) {
    for (const onnx::AttributeProto& a : node.attribute()) by_name_[a.name()] = &a;
  }
  std::optional<std::int64_t> i(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? std::nullopt : std::optional(it->second->i());
  }
  std::optional<Ints> ints(const std::string& name) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    return Ints(it->second->ints().begin(), it->second->ints().end());
  }
  const onnx::TensorProto* t(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() || !it->second->has_t() ? nullptr : &it->second->t();
  }

 private:
  std::map<std::string, const onnx::AttributeProto*> by_name_;
};

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

std::optional<Num> shape_of(const Dims& dims, const Attrs& a) {
  const auto rank = static_cast<std::int64_t>(dims.size());
  auto clamp = [&](std::int64_t x) { return std::clamp(x < 0 ? x + rank : x, std::int64_t{0}, rank); };
  const std::int64_t start = clamp(a.i("start").value_or(0));
  const std::int64_t end = clamp(a.i("end").value_or(rank));
  Num r{DType::kInt64, {std::max<std::int64_t>(end - start, 0)}, {}};
  for (std::int64_t k = start; k < end; ++k) r.v.push_back(static_cast<double>(dims[k]));
  return r;
}

std::optional<Num> gather(const Num& data, const Num& indices, std::int64_t axis_attr) {
  std::optional<std::int64_t> axis = axis_in(axis_attr, data.dims.size());
  if (!axis) return std::nullopt;
  Dims out(data.dims.begin(), data.dims.begin() + *axis);
  out.insert(out.end(), indices.dims.begin(), indices.dims.end());
  out.insert(out.end(), data.dims.begin() + *axis + 1, data.dims.end());
  const std::int64_t outer = count(Dims(data.dims.begin(), data.dims.begin() + *axis));
  const std::int64_t inner = count(Dims(data.dims.begin() + *axis + 1, data.dims.end()));
  const std::int64_t n = data.dims[*axis];
  Num r{data.dtype, out, {}};
  for (std::int64_t o = 0; o < outer; ++o) {
    for (double x : indices.v) {
      auto k = static_cast<std::int64_t>(x);
      if (k < 0) k += n;
      if (k < 0 || k >= n) return std::nullopt;
      for (std::int64_t i = 0; i < inner; ++i)
        r.v.push_back(data.v[static_cast<std::size_t>((o * n + k) * inner + i)]);
    }
  }
  return r;
}

std::optional<Num> concat(const std::vector<Num>& inputs, std::int64_t axis_attr) {
  if (inputs.empty()) return std::nullopt;
  std::optional<std::int64_t> axis = axis_in(axis_attr, inputs[0].dims.size());
  if (!axis) return std::nullopt;
  Dims out = inputs[0].dims;
  out[*axis] = 0;
  for (const Num& n : inputs) {
    if (n.dims.size() != out.size()) return std::nullopt;
    for (std::size_t k = 0; k < out.size(); ++k)
      if (k != static_cast<std::size_t>(*axis) && n.dims[k] != out[k]) return std::nullopt;
    out[*axis] += n.dims[*axis];
  }
  const std::int64_t outer = count(Dims(out.begin(), out.begin() + *axis));
  Num r{inputs[0].dtype, out, {}};
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const Num& n : inputs) {
      const std::int64_t chunk = count(Dims(n.dims.begin() + *axis, n.dims.end()));
      auto first = n.v.begin() + o * chunk;
      r.v.insert(r.v.end(), first, first + chunk);
    }
  }
  return r;
}

// Slice with starts, ends, axes and steps as ONNX (opset 10 on) reads them.
std::optional<Num> slice(const Num& data, const Ints& starts, const Ints& ends,
                         std::optional<Ints> axes, std::optional<Ints> steps) {
  const std::size_t rank = data.dims.size();
  if (!axes) {
    axes.emplace(starts.size());
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!steps) steps = Ints(starts.size(), 1);
  if (ends.size() != starts.size() || axes->size() != starts.size() ||
      steps->size() != starts.size())
    return std::nullopt;
  Dims begin(rank, 0), step(rank, 1), out = data.dims;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    std::optional<std::int64_t> a = axis_in((*axes)[k], rank);
    if (!a || (*steps)[k] == 0) return std::nullopt;
    const std::int64_t n = data.dims[*a], s = (*steps)[k];
    auto clamp = [&](std::int64_t x, std::int64_t low, std::int64_t high) {
      if (x < 0) x += n;
      return std::clamp(x, low, high);
    };
    const std::int64_t b = s > 0 ? clamp(starts[k], 0, n) : clamp(starts[k], -1, n - 1);
    const std::int64_t e = s > 0 ? clamp(ends[k], 0, n) : clamp(ends[k], -1, n - 1);
    begin[*a] = b;
    step[*a] = s;
    out[*a] = s > 0 ? std::max<std::int64_t>((e - b + s - 1) / s, 0)
                    : std::max<std::int64_t>((b - e - s - 1) / -s, 0);
  }
  Num r{data.dtype, out, {}};
  const Dims in_strides = strides(data.dims), out_strides = strides(out);
  for (std::int64_t i = 0; i < count(out); ++i) {
    std::int64_t index = 0;
    for (std::size_t k = 0; k < rank; ++k)
      index += (begin[k] + ((i / out_strides[k]) % out[k]) * step[k]) * in_strides[k];
    r.v.push_back(data.v[static_cast<std::size_t>(index)]);
  }
  return r;
}

std::optional<Num> reshape(const Num& data, const Ints& shape, bool allowzero) {
  Dims out(shape.begin(), shape.end());
  int unknown = -1;
  std::int64_t known = 1;
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k] == 0 && !allowzero) {
      if (k >= data.dims.size()) return std::nullopt;
      out[k] = data.dims[k];
    }
    if (out[k] == -1) {
      if (unknown >= 0) return std::nullopt;
      unknown = static_cast<int>(k);
    } else {
      known *= out[k];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || data.size() % known != 0) return std::nullopt;
    out[unknown] = data.size() / known;
  }
  if (count(out) != data.size()) return std::nullopt;
  return Num{data.dtype, out, data.v};
}

// Transpose by `perm` (reversed axes when absent).
std::optional<Num> transpose(const Num& data, std::optional<Ints> perm) {
  const std::size_t rank = data.dims.size();
  if (!perm) {
    perm.emplace(rank);
    std::iota(perm->rbegin(), perm->rend(), 0);
  }
  if (perm->size() != rank) return std::nullopt;
  Dims out(rank);
  std::vector<bool> seen(rank, false);
  for (std::size_t k = 0; k < rank; ++k) {
    std::optional<std::int64_t> a = axis_in((*perm)[k], rank);
    if (!a || seen[*a]) return std::nullopt;
    seen[*a] = true;
    (*perm)[k] = *a;
    out[k] = data.dims[*a];
  }
  Num r{data.dtype, out, std::vector<double>(data.v.size())};
  const Dims in_strides = strides(data.dims), out_strides = strides(out);
  for (std::int64_t i = 0; i < count(out); ++i) {
    std::int64_t index = 0;
    for (std::size_t k = 0; k < rank; ++k)
      index += ((i / out_strides[k]) % out[k]) * in_strides[(*perm)[k]];
    r.v[static_cast<std::size_t>(i)] = data.v[static_cast<std::size_t>(index)];
  }
  return r;
}

std::optional<Num> unsqueeze(const Num& data, Ints axes) {
  const std::size_t rank = data.dims.size() + axes.size();
  for (std::int64_t& a : axes) {
    std::optional<std::int64_t> x = axis_in(a, rank);
    if (!x) return std::nullopt;
    a = *x;
  }
  std::ranges::sort(axes);
  Dims out;
  std::size_t next = 0;
  for (std::size_t k = 0; k < rank; ++k) {
    if (std::ranges::binary_search(axes, static_cast<std::int64_t>(k)))
      out.push_back(1);
    else if (next < data.dims.size())
      out.push_back(data.dims[next++]);
  }
  if (out.size() != rank) return std::nullopt;
  return Num{data.dtype, out, data.v};
}

std::optional<Num> squeeze(const Num& data, std::optional<Ints> axes) {
  Dims out;
  for (std::size_t k = 0; k < data.dims.size(); ++k) {
    bool drop = data.dims[k] == 1;
    if (axes) {
      drop = std::ranges::any_of(*axes, [&](std::int64_t a) {
        return axis_in(a, data.dims.size()) == static_cast<std::int64_t>(k);
      });
      if (drop && data.dims[k] != 1) return std::nullopt;
    }
    if (!drop) out.push_back(data.dims[k]);
  }
  return Num{data.dtype, out, data.v};
}

std::optional<Num> cast(Num n, int to) {
  std::optional<DType> d = dtype_from_onnx(to);
  if (!d || (*d != DType::kFloat32 && !is_integer(*d))) return std::nullopt;
  if (is_integer(*d)) {
    for (double& x : n.v) x = *d == DType::kBool ? (x != 0) : std::trunc(x);
  }
  n.dtype = *d;
  return n;
}

std::optional<Num> range(const Num& start, const Num& limit, const Num& delta) {
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1 || delta.v[0] == 0)
    return std::nullopt;
  const double n = std::max(std::ceil((limit.v[0] - start.v[0]) / delta.v[0]), 0.0);
  if (n > kMaxShapeValueElements) return std::nullopt;
  Num r{start.dtype, {static_cast<std::int64_t>(n)}, {}};
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i)
    r.v.push_back(start.v[0] + static_cast<double>(i) * delta.v[0]);
  return r;
}

std::optional<Num> constant_of_shape(const Num& shape, const onnx::TensorProto* value) {
  Num fill{DType::kFloat32, {}, {0.0}};
  if (value != nullptr) {
    absl::StatusOr<Tensor> t = tensor_from_proto(*value);
    if (!t.ok()) return std::nullopt;
    std::optional<Num> n = to_num(*t);
    if (!n || n->size() != 1) return std::nullopt;
    fill = *n;
  }
  const Dims dims(as_ints(shape));
  if (std::ranges::any_of(dims, [](std::int64_t d) { return d < 0; }) ||
      count(dims) > kMaxShapeValueElements)
    return std::nullopt;
  return Num{fill.dtype, dims, std::vector<double>(static_cast<std::size_t>(count(dims)), fill.v[0])};
}

std::optional<Num> reduce(const Num& data, std::optional<Ints> axes, bool keepdims, bool product) {
  const std::size_t rank = data.dims.size();
  std::vector<bool> reduced(rank, !axes || axes->empty());
  if (axes) {
    for (std::int64_t a : *axes) {
      std::optional<std::int64_t> x = axis_in(a, rank);
      if (!x) return std::nullopt;
      reduced[*x] = true;
    }
  }
  Dims kept(rank);
  for (std::size_t k = 0; k < rank; ++k) kept[k] = reduced[k] ? 1 : data.dims[k];
  Num r{data.dtype, kept, std::vector<double>(count(kept), product ? 1.0 : 0.0)};
  const Dims in_strides = strides(data.dims), out_strides = strides(kept);
  for (std::int64_t i = 0; i < data.size(); ++i) {
    std::int64_t o = 0;
    for (std::size_t k = 0; k < rank; ++k)
      if (!reduced[k]) o += ((i / in_strides[k]) % data.dims[k]) * out_strides[k];
    double& acc = r.v[static_cast<std::size_t>(o)];
    acc = product ? acc * data.v[i] : acc + data.v[i];
  }
  if (!keepdims) {
    Dims out;
    for (std::size_t k = 0; k < rank; ++k)
      if (!reduced[k]) out.push_back(data.dims[k]);
    r.dims = out;
  }
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
  const bool integer = is_integer(t);
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
  return std::nullopt;
}

// The operators that move or make values: nullopt when `op` is none of them.
std::optional<std::optional<Num>> evaluate_structural(const std::string& op, const Attrs& a,
                                                      const std::vector<Num>& in) {
  auto input = [&](std::size_t k) -> const Num* { return k < in.size() ? &in[k] : nullptr; };
  auto ints_of = [&](std::size_t k) -> std::optional<Ints> {
    return k < in.size() ? std::optional(as_ints(in[k])) : std::nullopt;
  };
  if (op == "Identity") return *input(0);
  if (op == "Cast") return cast(*input(0), static_cast<int>(a.i("to").value_or(0)));
  if (op == "Gather" && in.size() == 2) return gather(in[0], in[1], a.i("axis").value_or(0));
  if (op == "Concat") return concat(in, a.i("axis").value_or(0));
  if (op == "Unsqueeze") {
    std::optional<Ints> axes = in.size() > 1 ? ints_of(1) : a.ints("axes");
    return axes ? unsqueeze(in[0], *axes) : std::nullopt;
  }
  if (op == "Squeeze") return squeeze(in[0], in.size() > 1 ? ints_of(1) : a.ints("axes"));
  if (op == "Slice" && in.size() >= 3)
    return slice(in[0], as_ints(in[1]), as_ints(in[2]), ints_of(3), ints_of(4));
  if (op == "Transpose") return transpose(in[0], a.ints("perm"));
  if (op == "Reshape" && in.size() == 2)
    return reshape(in[0], as_ints(in[1]), a.i("allowzero").value_or(0) != 0);
  if (op == "Expand" && in.size() == 2) {
    const Dims shape(as_ints(in[1]));
    if (count(shape) > kMaxShapeValueElements) return std::optional<Num>();
    const Num ones{in[0].dtype, shape, std::vector<double>(count(shape), 0.0)};
    return elementwise({in[0], ones}, in[0].dtype,
                       [](const std::vector<double>& x) { return x[0]; });
  }
  if (op == "ConstantOfShape") return constant_of_shape(in[0], a.t("value"));
  if (op == "Range" && in.size() == 3) return range(in[0], in[1], in[2]);
  if (op == "ReduceProd" || op == "ReduceSum") {
    std::optional<Ints> axes = op == "ReduceSum" && in.size() > 1 ? ints_of(1) : a.ints("axes");
    return reduce(in[0], axes, a.i("keepdims").value_or(1) != 0, op == "ReduceProd");
  }
  return std::nullopt;
}

}  // namespace

std::int64_t shape_value_count(std::span<const std::int64_t> dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  }
  return n;
}

std::optional<std::vector<Tensor>> evaluate_shape_node(const onnx::NodeProto& node,
                                                       const ValueLookup& values,
                                                       const DimsLookup& dims) {
  if (!is_default_domain(node.domain()) || node.output_size() != 1) return std::nullopt;
  const Attrs a(node);
  const std::string& op = node.op_type();
  std::optional<Num> out;
  if (op == "Shape" || op == "Size") {
    if (node.input_size() < 1) return std::nullopt;
    std::optional<Dims> d = dims(node.input(0));
    if (!d) return std::nullopt;
    out = op == "Shape" ? shape_of(*d, a) : Num{DType::kInt64, {}, {static_cast<double>(count(*d))}};
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

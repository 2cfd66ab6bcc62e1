#include "saturn/tensor/interpreter/kernels.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "oneapi/tbb/parallel_for.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/interpreter/kernels_internal.h"

namespace saturn::tensor {

namespace kernels {

void parallel(std::int64_t n, std::int64_t grain,
              const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n <= grain) {
    if (n > 0) fn(0, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<std::int64_t>& r) { fn(r.begin(), r.end()); });
}

AxisView view_around(const Dims& dims, std::int64_t axis) {
  AxisView v;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(dims.size()); ++i) {
    (i < axis ? v.outer : i == axis ? v.extent : v.inner) *= dims[i];
  }
  return v;
}

namespace {

// A Constant node's value: its shape, filled with its value.
Tensor constant(const Attributes& a) {
  TensorType t{DType::kFloat32, *a.get_ints("shape")};
  Tensor out(t);
  std::span<float> v = out.mutable_floats();
  std::fill(v.begin(), v.end(), static_cast<float>(*a.get_float("value")));
  return out;
}

}  // namespace

}  // namespace kernels

namespace {

// The operators that move elements without reading them (but Gather's
// indices): computed on any element type but string, float16 included.
bool moves_data(Op op) {
  switch (op) {
    case Op::kTranspose:
    case Op::kReshape:
    case Op::kFlatten:
    case Op::kConcat:
    case Op::kSplit:
    case Op::kSlice:
    case Op::kGather:
    case Op::kPad:
    case Op::kIdentity:
    case Op::kDropout:
    case Op::kEnlarge:
    case Op::kMergeGroups:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::vector<Tensor>> move_data(Op op, const Attributes& a, std::span<const Tensor> in,
                                              const ValueType& type) {
  for (const Tensor& t : in) {
    if (absl::Status s = kernels::movable(op, t); !s.ok()) return s;
  }
  auto one = [](Tensor t) { return std::vector<Tensor>{std::move(t)}; };
  switch (op) {
    case Op::kTranspose:
      return one(kernels::transpose(a, in[0]));
    case Op::kReshape:
    case Op::kFlatten:
      return one(in[0].reshaped(type.tensor().dims));
    case Op::kConcat:
      return one(kernels::concat(a, in));
    case Op::kSplit:
      return kernels::split(a, in[0]);
    case Op::kSlice:
      return one(kernels::slice(a, in[0]));
    case Op::kGather:
    case Op::kPad: {
      absl::StatusOr<Tensor> t =
          op == Op::kGather ? kernels::gather(a, in[0], in[1]) : kernels::pad(a, in[0]);
      if (!t.ok()) return t.status();
      return one(std::move(*t));
    }
    case Op::kEnlarge:
      return one(kernels::enlarge(a, in[0]));
    case Op::kMergeGroups:
      return one(kernels::merge_groups(a, in[0]));
    default:  // Identity, Dropout
      return one(in[0]);
  }
}

absl::StatusOr<std::vector<Tensor>> evaluate_float32(Op op, const Attributes& a,
                                                     std::span<const Tensor> in) {
  for (const Tensor& t : in) {  // inference allows float32 and float16, widened by now
    if (t.dtype() != DType::kFloat32)
      return absl::UnimplementedError(
          fmt::format("{} of {} is not computed", op_name(op), to_string(t.type())));
  }
  auto one = [](Tensor t) { return std::vector<Tensor>{std::move(t)}; };
  if (is_unary_elementwise(op)) return one(kernels::unary(op, a, in[0]));
  if (is_reduction(op)) return one(kernels::reduce(op, a, in[0]));
  if (is_binary_elementwise(op)) return one(kernels::binary(op, in[0], in[1]));
  switch (op) {
    case Op::kConstant:
      return one(kernels::constant(a));
    case Op::kMatMul:
      return one(kernels::matmul(in[0], in[1]));
    case Op::kGemm:
      return one(kernels::gemm(a, in));
    case Op::kConv:
      return one(kernels::conv(a, in));
    case Op::kSoftmax:
      return one(kernels::softmax(a, in[0]));
    case Op::kLayerNorm:
      return one(kernels::layer_norm(a, in));
    case Op::kBatchNorm:
      return one(kernels::batch_norm(a, in));
    case Op::kInstanceNorm:
      return one(kernels::instance_norm(a, in));
    case Op::kSimplifiedLayerNorm:
      return one(kernels::simplified_layer_norm(a, in));
    case Op::kSkipSimplifiedLayerNorm:
    case Op::kSkipLayerNorm:
      return kernels::skip_layer_norm(a, in);
    case Op::kRotaryEmbedding:
      return one(kernels::rotary_embedding(a, in));
    case Op::kGroupQueryAttention:
      return one(kernels::group_query_attention(a, in));
    case Op::kMaxPool:
    case Op::kAveragePool:
      return one(kernels::pool(op, a, in[0]));
    case Op::kGlobalAveragePool:
      return one(kernels::global_average_pool(in[0]));
    default:
      return absl::UnimplementedError(
          fmt::format("{} is not evaluated by a kernel", op_name(op)));
  }
}

absl::StatusOr<std::vector<Tensor>> dispatch(Op op, const Attributes& a, std::span<const Tensor> in,
                                             const ValueType& type) {
  if (op == Op::kTopK) return kernels::top_k(a, in[0], type);  // any plain element type
  if (is_value_op(op)) {  // any plain element type, float16 included
    absl::StatusOr<Tensor> out = kernels::value_op(op, a, in, type.tensor());
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{*std::move(out)};
  }
  if (moves_data(op)) return move_data(op, a, in, type);
  if (is_reduction(op) && is_integer(in[0].dtype()))  // the ones inference types on integers
    return std::vector<Tensor>{kernels::reduce(op, a, in[0])};
  if (op == Op::kMaxPool && is_integer(in[0].dtype()))  // 8-bit, as inference allows
    return std::vector<Tensor>{kernels::pool(op, a, in[0])};
  if (!in.empty() && is_integer(in[0].dtype()) &&
      ((is_binary_elementwise(op) && op != Op::kPow) || op == Op::kNeg || op == Op::kAbs ||
       op == Op::kSign)) {
    absl::StatusOr<Tensor> out = kernels::integer_arithmetic(op, in, type.tensor());
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{*std::move(out)};
  }
  if (is_quantization(op))  // float32 and integers, never float16 (inference)
    return std::vector<Tensor>{kernels::quantization(op, a, in, type.tensor())};
  if (is_integer_operator(op)) return kernels::integer_operator(op, a, in, type);
  if (op == Op::kOpaque) {
    absl::StatusOr<Tensor> t = kernels::onnx_op(a, in);
    if (!t.ok()) return t.status();
    return std::vector<Tensor>{std::move(*t)};
  }
  // float16 is computed in float32 and each result rounded back.
  const auto narrow = std::ranges::find_if(
      in, [](const Tensor& t) { return t.dtype() == DType::kFloat16; });
  if (narrow == in.end()) return evaluate_float32(op, a, in);
  std::vector<Tensor> wide;
  for (const Tensor& t : in) wide.push_back(widened(t));
  absl::StatusOr<std::vector<Tensor>> out = evaluate_float32(op, a, wide);
  if (!out.ok()) return out;
  for (Tensor& t : *out) t = narrowed(t, narrow->dtype());
  return out;
}

// Whether a computed value has the type inference gave: exactly, or, for an
// opaque operator, where the file declared its dimensions.
bool agrees(const TensorType& got, const TensorType& want, bool opaque) {
  if (!opaque) return got == want;
  if (got.dtype != want.dtype || got.rank() != want.rank()) return false;
  for (std::size_t i = 0; i < got.rank(); ++i) {
    if (want.dims[i] != kUnknownDim && want.dims[i] != got.dims[i]) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> evaluate_op(Op op, const Attributes& a,
                                                std::span<const Tensor> in) {
  // Typed by the values at hand, not by what a file declared (an opaque
  // operator's output may differ): every kernel indexes by its inputs'
  // shapes and trusts them to type-check, so none reads outside a tensor.
  // An opaque operator's kernel checks its inputs itself; its outputs are
  // checked against the declared ones where the node declares them.
  if (op == Op::kOpaque && !opaque_outputs(a).ok()) return dispatch(op, a, in, ValueType{});
  std::vector<ValueType> types;
  types.reserve(in.size());
  for (const Tensor& t : in) types.push_back(ValueType::of(t.type()));
  absl::StatusOr<ValueType> type = infer_type(op, a, types);
  if (!type.ok()) return type.status();
  for (const TensorType& part : type->parts) {
    std::int64_t bytes = part.num_bytes();
    const bool over = is_value_op(op) ? __builtin_mul_overflow(part.num_elements(), kValueOpElementBytes, &bytes)
                                      : false;
    if (part.is_static() && (over || bytes > kMaxEvaluatedBytes))
      return absl::ResourceExhaustedError(fmt::format(
          "{} would compute {} (over the {} bytes the interpreter computes)", op_name(op),
          to_string(part), kMaxEvaluatedBytes));
  }
  absl::StatusOr<std::vector<Tensor>> out = dispatch(op, a, in, *type);
  if (!out.ok()) return out;
  if (out->size() != type->parts.size())
    return absl::InternalError(fmt::format("{} computed {} values where its type has {}",
                                           op_name(op), out->size(), type->parts.size()));
  for (std::size_t p = 0; p < out->size(); ++p) {
    if (!agrees((*out)[p].type(), type->parts[p], op == Op::kOpaque))
      return absl::InternalError(fmt::format("{} computed {} where its type is {}", op_name(op),
                                             to_string((*out)[p].type()), to_string(type->parts[p])));
  }
  return out;
}

}  // namespace saturn::tensor

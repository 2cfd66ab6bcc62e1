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

absl::StatusOr<std::vector<Tensor>> evaluate_float32(Op op, const Attributes& a,
                                                     std::span<const Tensor> in) {
  auto one = [](Tensor t) { return std::vector<Tensor>{std::move(t)}; };
  if (is_unary_elementwise(op)) return one(kernels::unary(op, a, in[0]));
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
    case Op::kReduceMean:
      return one(kernels::reduce_mean(a, in[0]));
    case Op::kTranspose:
      return one(kernels::transpose(a, in[0]));
    case Op::kReshape:
    case Op::kFlatten: {
      absl::StatusOr<ValueType> t =
          infer_type(op, a, std::vector<ValueType>{ValueType::of(in[0].type())});
      if (!t.ok()) return t.status();
      return one(in[0].reshaped(t->tensor().dims));
    }
    case Op::kConcat:
      return one(kernels::concat(a, in));
    case Op::kSplit:
      return kernels::split(a, in[0]);
    case Op::kSlice:
      return one(kernels::slice(a, in[0]));
    case Op::kGather: {
      absl::StatusOr<Tensor> t = kernels::gather(a, in[0], in[1]);
      if (!t.ok()) return t.status();
      return one(std::move(*t));
    }
    case Op::kPad:
      return one(kernels::pad(a, in[0]));
    case Op::kMaxPool:
    case Op::kAveragePool:
      return one(kernels::pool(op, a, in[0]));
    case Op::kGlobalAveragePool:
      return one(kernels::global_average_pool(in[0]));
    case Op::kIdentity:
    case Op::kDropout:
      return one(in[0]);
    case Op::kEnlarge:
      return one(kernels::enlarge(a, in[0]));
    case Op::kMergeGroups:
      return one(kernels::merge_groups(a, in[0]));
    case Op::kOpaque: {
      absl::StatusOr<Tensor> t = kernels::onnx_op(a, in);
      if (!t.ok()) return t.status();
      return one(std::move(*t));
    }
    default:
      return absl::InvalidArgumentError(
          fmt::format("{} is not evaluated by a kernel", op_name(op)));
  }
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> evaluate_op(Op op, const Attributes& a,
                                                std::span<const Tensor> in) {
  if (is_value_op(op)) {  // any element type, float16 included
    absl::StatusOr<Tensor> out = kernels::value_op(op, a, in);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{*std::move(out)};
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

}  // namespace saturn::tensor

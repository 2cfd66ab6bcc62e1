// Shape inference rules: matrix products, convolution and pooling,
// normalizations and reductions.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "saturn/tensor/infer.h"
#include "saturn/tensor/inference.h"

namespace saturn::tensor::inference {

absl::StatusOr<ValueType> Inference::matmul() {
  for (std::size_t i = 0; i < 2; ++i) {
    if (auto s = need_float(i); !s.ok()) return s;
    if (t(i).rank() < 2)
      return fail(op_, "input {} must have rank 2 or more, is {}", i, to_string(t(i)));
  }
  const Dims& a = d(0);
  const Dims& b = d(1);
  if (a.back() != b[b.size() - 2]) {
    return fail(op_, "inner dimensions differ: {} x {}", to_string(t(0)), to_string(t(1)));
  }
  std::optional<Dims> batch =
      broadcast_dims(Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2));
  if (!batch)
    return fail(op_, "batch dimensions of {} and {} do not broadcast", to_string(a), to_string(b));
  batch->push_back(a[a.size() - 2]);
  batch->push_back(b.back());
  return like(0, *batch);
}

absl::StatusOr<ValueType> Inference::gemm() {
  for (std::size_t i = 0; i < in_.size(); ++i) {
    if (auto s = need_float(i); !s.ok()) return s;
  }
  for (std::size_t i = 0; i < 2; ++i) {
    if (auto s = need_rank(i, 2); !s.ok()) return s;
  }
  bool ta = int_attr(a_, "transA") != 0, tb = int_attr(a_, "transB") != 0;
  std::int64_t m = d(0)[ta ? 1 : 0], k = d(0)[ta ? 0 : 1];
  std::int64_t kb = d(1)[tb ? 1 : 0], n = d(1)[tb ? 0 : 1];
  if (k != kb)
    return fail(op_, "inner dimensions differ: {} x {}", to_string(t(0)), to_string(t(1)));
  if (in_.size() == 3) {
    std::optional<Dims> c = broadcast_dims(d(2), Dims{m, n});
    if (!c || *c != Dims{m, n})
      return fail(op_, "bias {} does not broadcast to [{},{}]", to_string(d(2)), m, n);
  }
  return like(0, Dims{m, n});
}

absl::StatusOr<ValueType> Inference::conv() {
  for (std::size_t i = 0; i < in_.size(); ++i) {
    if (auto s = need_float(i); !s.ok()) return s;
  }
  if (auto s = need_rank(0, 4); !s.ok()) return s;
  if (auto s = need_rank(1, 4); !s.ok()) return s;
  const Ints& strides = ints(a_, "strides");
  const Ints& dil = ints(a_, "dilations");
  const Ints& pads = ints(a_, "pads");
  std::int64_t group = int_attr(a_, "group");
  if (auto s = need_positive(strides, "strides", 2); !s.ok()) return s;
  if (auto s = need_positive(dil, "dilations", 2); !s.ok()) return s;
  if (auto s = need_pads(pads, 4); !s.ok()) return s;
  const std::string& act = *a_.get_string("activation");
  if (act != "none" && act != "relu" && act != "sigmoid" && act != "tanh") {
    return fail(op_, "unknown activation '{}' (none, relu, sigmoid or tanh)", act);
  }
  const Dims& x = d(0);
  const Dims& w = d(1);
  if (group <= 0 || x[1] % group != 0 || w[0] % group != 0) {
    return fail(op_, "group {} does not divide input channels {} and output channels {}", group,
                x[1], w[0]);
  }
  if (std::int64_t channels = 0;
      __builtin_mul_overflow(w[1], group, &channels) || channels != x[1]) {
    return fail(op_, "weight {} expects {} input channels per group ({} groups), input {} has {}",
                to_string(w), w[1], group, to_string(x), x[1]);
  }
  if (in_.size() == 3 && d(2) != Dims{w[0]}) {
    return fail(op_, "bias must be [{}], is {}", w[0], to_string(d(2)));
  }
  Dims out{x[0], w[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    out[2 + i] = window_output(x[2 + i], w[2 + i], strides[i], pads[i], pads[2 + i], dil[i]);
    if (out[2 + i] <= 0) {
      return fail(op_, "kernel {} does not fit input {} with pads {}", to_string(w), to_string(x),
                  to_string(pads));
    }
  }
  return like(0, out);
}

absl::StatusOr<ValueType> Inference::pool() {
  // MaxPool also picks among 8-bit integers (opset 12), as quantized
  // models run it between integer kernels.
  const bool integer = op_ == Op::kMaxPool &&
                       (t(0).dtype == DType::kInt8 || t(0).dtype == DType::kUInt8);
  if (auto s = integer ? absl::OkStatus() : need_float(0); !s.ok()) return s;
  if (auto s = need_rank(0, 4); !s.ok()) return s;
  const Ints& kernel = ints(a_, "kernel_shape");
  const Ints& strides = ints(a_, "strides");
  const Ints& pads = ints(a_, "pads");
  if (auto s = need_positive(kernel, "kernel_shape", 2); !s.ok()) return s;
  if (auto s = need_positive(strides, "strides", 2); !s.ok()) return s;
  if (auto s = need_pads(pads, 4); !s.ok()) return s;
  Dims out = d(0);
  for (int i = 0; i < 2; ++i) {
    if (pads[i] >= kernel[i] || pads[2 + i] >= kernel[i])
      return fail(op_, "pads must be smaller than the kernel");
    out[2 + i] = window_output(out[2 + i], kernel[i], strides[i], pads[i], pads[2 + i], 1);
    if (out[2 + i] <= 0)
      return fail(op_, "kernel {} does not fit input {}", to_string(kernel), to_string(d(0)));
  }
  return like(0, out);
}

absl::StatusOr<ValueType> Inference::global_average_pool() {
  if (auto s = need_float(0); !s.ok()) return s;
  if (auto s = need_rank(0, 4); !s.ok()) return s;
  return like(0, Dims{d(0)[0], d(0)[1], 1, 1});
}

absl::StatusOr<ValueType> Inference::softmax() {
  if (auto s = need_float(0); !s.ok()) return s;
  if (!normalize_axis(int_attr(a_, "axis"), t(0).rank()))
    return fail(op_, "axis out of range for {}", to_string(t(0)));
  return in_[0];
}

absl::StatusOr<ValueType> Inference::layer_norm() {
  for (std::size_t i = 0; i < 3; ++i) {
    if (auto s = need_float(i); !s.ok()) return s;
  }
  std::optional<std::int64_t> axis = normalize_axis(int_attr(a_, "axis"), t(0).rank());
  if (!axis) return fail(op_, "axis {} out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
  Dims normalized(d(0).begin() + *axis, d(0).end());
  for (std::size_t i = 1; i < 3; ++i) {
    if (d(i) != normalized)
      return fail(op_, "input {} must be {}, is {}", i, to_string(normalized), to_string(d(i)));
  }
  return in_[0];
}

absl::StatusOr<ValueType> Inference::simplified_layer_norm() {
  for (std::size_t i = 0; i < 2; ++i) {
    if (auto s = need_float(i); !s.ok()) return s;
  }
  std::optional<std::int64_t> axis = normalize_axis(int_attr(a_, "axis"), t(0).rank());
  if (!axis) return fail(op_, "axis {} out of range for {}", int_attr(a_, "axis"), to_string(t(0)));
  Dims normalized(d(0).begin() + *axis, d(0).end());
  if (d(1) != normalized)
    return fail(op_, "input 1 must be {}, is {}", to_string(normalized), to_string(d(1)));
  return in_[0];
}

// onnxruntime's kernels normalize the last axis of a rank-2 or rank-3 input
// after adding `skip` (same shape) to it: its scale (and, for
// SkipLayerNormalization, bias) are as long as that axis. The second result
// is the sum.
absl::StatusOr<ValueType> Inference::skip_layer_norm() {
  for (std::size_t i = 0; i < in_.size(); ++i) {
    if (auto s = need_float(i); !s.ok()) return s;
  }
  if (t(0).rank() != 2 && t(0).rank() != 3)
    return fail(op_, "input must have rank 2 or 3, is {}", to_string(t(0)));
  if (d(1) != d(0)) return fail(op_, "skip must be {}, is {}", to_string(t(0)), to_string(t(1)));
  for (std::size_t i = 2; i < in_.size(); ++i) {
    if (d(i) != Dims{d(0).back()})
      return fail(op_, "input {} must be [{}], is {}", i, d(0).back(), to_string(d(i)));
  }
  return ValueType::tuple({t(0), t(0)});
}

// x [batch, heads, sequence, head size] (an even head size), cos and sin
// [sequence or more, head size / 2]: token s reads row s of the tables.
// (onnxruntime also takes position ids; saturn writes positions 0 on.)
absl::StatusOr<ValueType> Inference::rotary_embedding() {
  for (std::size_t i = 0; i < 3; ++i) {
    if (auto s = need_float(i); !s.ok()) return s;
  }
  if (auto s = need_rank(0, 4); !s.ok()) return s;
  const std::int64_t head = d(0)[3];
  if (head % 2 != 0) return fail(op_, "head size must be even, is {}", head);
  for (std::size_t i = 1; i < 3; ++i) {
    if (t(i).rank() != 2 || d(i)[1] != head / 2 || d(i)[0] < d(0)[2])
      return fail(op_, "input {} must be [{} or more, {}], is {}", i, d(0)[2], head / 2,
                  to_string(t(i)));
  }
  return in_[0];
}

// Causal self-attention without a cache: q [batch, sequence, num_heads *
// head], k and v [batch, sequence, kv_num_heads * head]; query head h reads
// key and value head h / (num_heads / kv_num_heads).
absl::StatusOr<ValueType> Inference::group_query_attention() {
  for (std::size_t i = 0; i < 3; ++i) {
    if (auto s = need_float(i); !s.ok()) return s;
    if (auto s = need_rank(i, 3); !s.ok()) return s;
  }
  const std::int64_t heads = int_attr(a_, "num_heads"), kv_heads = int_attr(a_, "kv_num_heads");
  if (heads < 1 || kv_heads < 1 || heads % kv_heads != 0)
    return fail(op_, "num_heads {} must be a positive multiple of kv_num_heads {}", heads, kv_heads);
  if (d(0)[2] % heads != 0)
    return fail(op_, "query width {} is not a multiple of num_heads {}", d(0)[2], heads);
  const Dims kv = {d(0)[0], d(0)[1], d(0)[2] / heads * kv_heads};
  for (std::size_t i = 1; i < 3; ++i) {
    if (d(i) != kv) return fail(op_, "input {} must be {}, is {}", i, to_string(kv), to_string(t(i)));
  }
  return in_[0];
}

absl::StatusOr<ValueType> Inference::batch_norm() {
  for (std::size_t i = 0; i < 5; ++i) {
    if (auto s = need_float(i); !s.ok()) return s;
  }
  if (t(0).rank() < 2) return fail(op_, "input must have rank 2 or more, is {}", to_string(t(0)));
  for (std::size_t i = 1; i < 5; ++i) {
    if (d(i) != Dims{d(0)[1]})
      return fail(op_, "input {} must be [{}], is {}", i, d(0)[1], to_string(d(i)));
  }
  return in_[0];
}

// InstanceNormalization: x [N, C, D1, ...] normalized over D1... per sample
// and channel, then scaled and shifted by scale [C] and bias [C].
absl::StatusOr<ValueType> Inference::instance_norm() {
  for (std::size_t i = 0; i < 3; ++i) {
    if (auto s = need_float(i); !s.ok()) return s;
  }
  if (t(0).rank() < 3)
    return fail(op_, "input must be [N, C, D1, ...] (rank 3 or more), is {}", to_string(t(0)));
  for (std::size_t i = 1; i < 3; ++i) {
    if (d(i) != Dims{d(0)[1]})
      return fail(op_, "input {} must be [{}], is {}", i, d(0)[1], to_string(d(i)));
  }
  return in_[0];
}

absl::StatusOr<ValueType> Inference::reduce() {
  // Sums and products of 32- and 64-bit integers, maxima and minima of any
  // (ONNX's types), as index arithmetic writes them: in the type's width.
  const DType dtype = t(0).dtype;
  const bool wide = dtype == DType::kInt32 || dtype == DType::kInt64 ||
                    dtype == DType::kUInt32 || dtype == DType::kUInt64;
  const bool on_integers = ((op_ == Op::kReduceSum || op_ == Op::kReduceProd) && wide) ||
                           ((op_ == Op::kReduceMax || op_ == Op::kReduceMin) && is_integer(dtype));
  if (!on_integers) {
    if (auto s = need_float(0); !s.ok()) return s;
  }
  const Ints& axes = ints(a_, "axes");
  std::vector<bool> reduced(t(0).rank(), axes.empty());
  for (std::int64_t ax : axes) {
    std::optional<std::int64_t> n = normalize_axis(ax, t(0).rank());
    if (!n || reduced[*n])
      return fail(op_, "axes {} invalid for {}", to_string(axes), to_string(t(0)));
    reduced[*n] = true;
  }
  Dims out;
  for (std::size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i])
      out.push_back(d(0)[i]);
    else if (int_attr(a_, "keepdims") != 0)
      out.push_back(1);
  }
  return like(0, out);
}

absl::StatusOr<ValueType> Inference::quantization() {
  const bool quantize = op_ == Op::kQuantizeLinear;
  auto integer = [&](DType d) {
    return d == DType::kInt8 || d == DType::kUInt8 || d == DType::kInt16 || d == DType::kUInt16 ||
           is_4bit(d) || (!quantize && d == DType::kInt32);
  };
  if (quantize ? t(0).dtype != DType::kFloat32 : !integer(t(0).dtype))
    return fail(op_, "input 0 must be {}, is {}",
                quantize ? "float32" : "int4, uint4, int8, uint8, int16, uint16 or int32",
                to_string(t(0)));
  if (t(1).dtype != DType::kFloat32)
    return fail(op_, "the scale must be float32, is {}", to_string(t(1)));
  // A scale per tensor (a scalar, or one value), per axis (one per index of
  // the axis) or per block (opset 21: input 0's shape with the axis divided
  // into blocks of block_size, the last one possibly shorter); the zero
  // point like the scale.
  const std::int64_t axis = int_attr(a_, "axis"), block = int_attr(a_, "block_size");
  const std::optional<std::int64_t> along = normalize_axis(axis, t(0).rank());
  const bool per_tensor = t(1).num_elements() == 1 && t(1).rank() <= 1;
  if (block < 0) return fail(op_, "block_size {} is negative", block);
  if (block > 0) {
    Dims blocks = d(0);
    if (along) blocks[*along] = (blocks[*along] + block - 1) / block;
    if (!along || d(1) != blocks)
      return fail(op_, "the scale {} is not one value per block of {} along axis {} of {}",
                  to_string(t(1)), block, axis, to_string(t(0)));
  } else if (!per_tensor && (t(1).rank() != 1 || !along || d(1)[0] != d(0)[*along])) {
    return fail(op_, "the scale {} is neither a scalar nor one value per index of axis {} of {}",
                to_string(t(1)), axis, to_string(t(0)));
  }
  DType out = quantize ? DType::kUInt8 : DType::kFloat32;
  if (in_.size() == 3) {
    if (d(2) != d(1) && !(per_tensor && t(2).num_elements() == 1 && t(2).rank() <= 1))
      return fail(op_, "the zero point {} must have the scale's shape {}", to_string(t(2)),
                  to_string(d(1)));
    if (!integer(t(2).dtype) || (!quantize && t(2).dtype != t(0).dtype))
      return fail(op_, "the zero point {} must be of {}", to_string(t(2)),
                  quantize ? "an integer type" : "input 0's type");
    if (quantize) out = t(2).dtype;
  }
  return ValueType::of(TensorType{out, d(0)});
}

}  // namespace saturn::tensor::inference

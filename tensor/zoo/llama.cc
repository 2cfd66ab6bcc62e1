// A LLaMA-style decoder (Touvron et al., 2023) at a small width, for depth
// sweeps: pre-RMSNorm layers with rotary position embeddings, grouped-query
// causal attention (8 heads of 32 sharing 2 key/value heads) and a SwiGLU
// feed-forward block; hidden 256, FFN 688, sequence 64, vocabulary 2048.
// Input: int64 token ids [1, 64]. The layer count is the parameter.
#include <cmath>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

constexpr std::int64_t kLlamaSeq = 64;
constexpr std::int64_t kLlamaHidden = 256;
constexpr std::int64_t kLlamaHeads = 8;
constexpr std::int64_t kLlamaKvHeads = 2;
constexpr std::int64_t kLlamaHeadDim = kLlamaHidden / kLlamaHeads;  // 32
constexpr std::int64_t kLlamaFfn = 688;
constexpr std::int64_t kLlamaVocab = 2048;

// x / sqrt(mean(x^2) + eps) * gain, over the last axis.
Value rms_norm(GraphBuilder& b, const std::string& name, Value x) {
  Value mean_square = b.reduce_mean(b.mul(x, x), {-1});
  Value rms = b.sqrt(b.add(mean_square, b.constant(1e-6f)));
  Value gain = b.weight(name + ".weight", {kLlamaHidden}, 0.9f, 1.1f);
  return b.mul(b.div(x, rms), gain);
}

// The rotary tables [seq, head_dim]: cos and sin of position * frequency,
// the frequencies repeated for the two halves a rotation pairs.
Value rotary_table(GraphBuilder& b, const char* name, bool sine) {
  std::vector<float> values(kLlamaSeq * kLlamaHeadDim);
  for (std::int64_t pos = 0; pos < kLlamaSeq; ++pos) {
    for (std::int64_t i = 0; i < kLlamaHeadDim; ++i) {
      const double frequency =
          std::pow(10000.0, -2.0 * static_cast<double>(i % (kLlamaHeadDim / 2)) /
                                static_cast<double>(kLlamaHeadDim));
      const double angle = static_cast<double>(pos) * frequency;
      values[pos * kLlamaHeadDim + i] =
          static_cast<float>(sine ? std::sin(angle) : std::cos(angle));
    }
  }
  return b.weight(
      name, Tensor(TensorType{DType::kFloat32, {kLlamaSeq, kLlamaHeadDim}}, std::move(values)));
}

// x * cos + rotate_half(x) * sin, where rotate_half(x) = [-x2, x1] over
// the halves of the last axis.
Value rotate(GraphBuilder& b, Value x, Value cos, Value sin) {
  Value first = b.slice(x, {0}, {kLlamaHeadDim / 2}, {-1});
  Value second = b.slice(x, {kLlamaHeadDim / 2}, {kLlamaHeadDim}, {-1});
  Value rotated = b.concat({b.mul(second, b.constant(-1.0f)), first}, -1);
  return b.add(b.mul(x, cos), b.mul(rotated, sin));
}

// [1, seq, heads * head_dim] -> [1, heads, seq, head_dim].
Value split_heads(GraphBuilder& b, Value x, std::int64_t heads) {
  return b.transpose(b.reshape(x, {1, kLlamaSeq, heads, kLlamaHeadDim}), {0, 2, 1, 3});
}

struct Tables {
  Value mask, cos, sin;
};

Value attention(GraphBuilder& b, const std::string& prefix, Value x, const Tables& t) {
  Value q = split_heads(b, b.linear(prefix + ".q_proj", x, kLlamaHidden, false), kLlamaHeads);
  Value k = split_heads(b, b.linear(prefix + ".k_proj", x, kLlamaKvHeads * kLlamaHeadDim, false),
                        kLlamaKvHeads);
  Value v = split_heads(b, b.linear(prefix + ".v_proj", x, kLlamaKvHeads * kLlamaHeadDim, false),
                        kLlamaKvHeads);
  q = rotate(b, q, t.cos, t.sin);
  k = rotate(b, k, t.cos, t.sin);
  // Each key/value head serves kLlamaHeads / kLlamaKvHeads query heads.
  std::vector<Value> ks(kLlamaHeads / kLlamaKvHeads, k), vs(kLlamaHeads / kLlamaKvHeads, v);
  k = b.concat(ks, 1);
  v = b.concat(vs, 1);
  Value scores = b.matmul(q, b.transpose(k, {0, 1, 3, 2}));
  scores =
      b.add(b.mul(scores, b.constant(1.0f / std::sqrt(static_cast<float>(kLlamaHeadDim)))), t.mask);
  Value context = b.matmul(b.softmax(scores, -1), v);
  context = b.reshape(b.transpose(context, {0, 2, 1, 3}), {1, kLlamaSeq, kLlamaHidden});
  return b.linear(prefix + ".o_proj", context, kLlamaHidden, false);
}

// down(silu(gate(x)) * up(x)).
Value swiglu(GraphBuilder& b, const std::string& prefix, Value x) {
  Value gate = b.linear(prefix + ".gate_proj", x, kLlamaFfn, false);
  Value up = b.linear(prefix + ".up_proj", x, kLlamaFfn, false);
  Value silu = b.mul(gate, b.sigmoid(gate));
  return b.linear(prefix + ".down_proj", b.mul(silu, up), kLlamaHidden, false);
}

Value decoder_layer(GraphBuilder& b, const std::string& prefix, Value x, const Tables& t) {
  x = b.add(x, attention(b, prefix + ".self_attn", rms_norm(b, prefix + ".input_norm", x), t));
  return b.add(x, swiglu(b, prefix + ".mlp", rms_norm(b, prefix + ".post_attention_norm", x)));
}

}  // namespace

absl::StatusOr<Graph> build_llama(int layers) {
  if (layers < 1 || layers > kMaxLlamaLayers)
    return absl::InvalidArgumentError(
        fmt::format("a llama model has 1 to {} layers, not {}", kMaxLlamaLayers, layers));
  GraphBuilder b(layers == kDefaultLlamaLayers ? "llama" : fmt::format("llama{}", layers));
  Value tokens = b.input("tokens", {1, kLlamaSeq}, DType::kInt64);
  std::vector<float> mask(kLlamaSeq * kLlamaSeq, 0.0f);
  for (std::int64_t i = 0; i < kLlamaSeq; ++i) {
    for (std::int64_t j = i + 1; j < kLlamaSeq; ++j) mask[i * kLlamaSeq + j] = -1e9f;
  }
  const Tables tables{
      b.weight("causal_mask",
               Tensor(TensorType{DType::kFloat32, {kLlamaSeq, kLlamaSeq}}, std::move(mask))),
      rotary_table(b, "rotary_cos", false), rotary_table(b, "rotary_sin", true)};
  Value x = b.gather(b.weight("embed_tokens", {kLlamaVocab, kLlamaHidden}, -0.02f, 0.02f), tokens);
  for (int i = 0; i < layers; ++i) x = decoder_layer(b, fmt::format("layers.{}", i), x, tables);
  x = rms_norm(b, "norm", x);
  b.output(b.linear("lm_head", x, kLlamaVocab, false), "logits");
  return b.build();
}

absl::StatusOr<Graph> build_llama() { return build_llama(kDefaultLlamaLayers); }

}  // namespace saturn::tensor

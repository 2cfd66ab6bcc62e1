// GPT-2 small (Radford et al., 2019): 12 pre-LayerNorm decoder layers, hidden
// 768, 12 heads of 64, sequence 128, vocabulary 50257, causal attention, and
// an LM head tied to the token embedding. Input: int64 token ids [1, 128].
#include <string>
#include <vector>

#include "fmt/format.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

constexpr std::int64_t kGpt2Layers = 12;
constexpr std::int64_t kGpt2Seq = 128;
constexpr std::int64_t kGpt2Hidden = 768;
constexpr std::int64_t kGpt2Heads = 12;
constexpr std::int64_t kGpt2HeadDim = kGpt2Hidden / kGpt2Heads;  // 64
constexpr std::int64_t kGpt2Vocab = 50257;

// 0 on and below the diagonal, -1e9 above: position i sees positions <= i.
Value causal_mask(GraphBuilder& b) {
  std::vector<float> values(kGpt2Seq * kGpt2Seq, 0.0f);
  for (std::int64_t i = 0; i < kGpt2Seq; ++i) {
    for (std::int64_t j = i + 1; j < kGpt2Seq; ++j) values[i * kGpt2Seq + j] = -1e9f;
  }
  return b.weight("causal_mask",
                  Tensor(TensorType{DType::kFloat32, {kGpt2Seq, kGpt2Seq}}, std::move(values)));
}

// [1,128,768] -> [1,128,12,64] -> permuted.
Value heads(GraphBuilder& b, Value x, Dims perm) {
  return b.transpose(b.reshape(x, {1, kGpt2Seq, kGpt2Heads, kGpt2HeadDim}), std::move(perm));
}

Value attention(GraphBuilder& b, const std::string& prefix, Value x, Value mask) {
  Value qkv = b.linear(prefix + ".c_attn", x, 3 * kGpt2Hidden);
  std::vector<Value> parts = b.split(qkv, -1, {kGpt2Hidden, kGpt2Hidden, kGpt2Hidden});
  Value q = heads(b, parts[0], {0, 2, 1, 3});   // [1,12,128,64]
  Value kt = heads(b, parts[1], {0, 2, 3, 1});  // [1,12,64,128]
  Value v = heads(b, parts[2], {0, 2, 1, 3});   // [1,12,128,64]
  Value scores = b.matmul(q, kt);
  scores = b.mul(scores, b.constant(0.125f));  // 1/sqrt(64)
  scores = b.add(scores, mask);
  Value context = b.matmul(b.softmax(scores, -1), v);
  context = b.reshape(b.transpose(context, {0, 2, 1, 3}), {1, kGpt2Seq, kGpt2Hidden});
  return b.linear(prefix + ".c_proj", context, kGpt2Hidden);
}

Value decoder_layer(GraphBuilder& b, const std::string& prefix, Value x, Value mask) {
  Value a = attention(b, prefix + ".attn", b.layer_norm(prefix + ".ln_1", x), mask);
  x = b.add(x, a);
  Value h =
      b.gelu(b.linear(prefix + ".mlp.c_fc", b.layer_norm(prefix + ".ln_2", x), 4 * kGpt2Hidden));
  h = b.linear(prefix + ".mlp.c_proj", h, kGpt2Hidden);
  return b.add(x, h);
}

}  // namespace

absl::StatusOr<Graph> build_gpt2() {
  GraphBuilder b("gpt2");
  Value tokens = b.input("tokens", {1, kGpt2Seq}, DType::kInt64);
  Value wte = b.weight("wte", {kGpt2Vocab, kGpt2Hidden}, -0.02f, 0.02f);
  Value wpe = b.weight("wpe", {1, kGpt2Seq, kGpt2Hidden}, -0.02f, 0.02f);
  Value mask = causal_mask(b);
  Value x = b.gather(wte, tokens);  // [1,128,768]
  x = b.add(x, wpe);
  for (std::int64_t i = 0; i < kGpt2Layers; ++i)
    x = decoder_layer(b, fmt::format("h{}", i), x, mask);
  x = b.layer_norm("ln_f", x);
  Value lm_head = b.transpose(wte, {1, 0});  // tied weights: [768, 50257]
  b.output(b.matmul(x, lm_head), "logits");
  return b.build();
}

}  // namespace saturn::tensor

// BERT encoder (Devlin et al., 2019) at TENSAT's size: 8 layers, sequence 64,
// hidden 1024, 16 heads of 64, FFN 4096; a 2-D [64, 1024] input as in TASO.
// The layer count is a parameter: 24 layers are BERT-large.
#include <string>

#include "fmt/format.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

constexpr std::int64_t kBertSeq = 64;
constexpr std::int64_t kBertHidden = 1024;
constexpr std::int64_t kBertHeads = 16;
constexpr std::int64_t kBertHeadDim = kBertHidden / kBertHeads;  // 64
constexpr std::int64_t kBertFfn = 4096;

// Projects x and splits it into heads: [64,1024] -> [64,16,64] -> permuted.
Value project_heads(GraphBuilder& b, const std::string& name, Value x, Dims perm) {
  Value y = b.linear(name, x, kBertHidden);
  return b.transpose(b.reshape(y, {kBertSeq, kBertHeads, kBertHeadDim}), std::move(perm));
}

Value self_attention(GraphBuilder& b, const std::string& prefix, Value x) {
  Value q = project_heads(b, prefix + ".query", x, {1, 0, 2});  // [16,64,64]
  Value kt = project_heads(b, prefix + ".key", x, {1, 2, 0});   // [16,64,64] (K^T)
  Value v = project_heads(b, prefix + ".value", x, {1, 0, 2});  // [16,64,64]
  Value scores = b.matmul(q, kt);
  scores = b.mul(scores, b.constant(0.125f));          // 1/sqrt(64)
  Value context = b.matmul(b.softmax(scores, -1), v);  // [16,64,64]
  context = b.reshape(b.transpose(context, {1, 0, 2}), {kBertSeq, kBertHidden});
  return b.linear(prefix + ".output", context, kBertHidden);
}

Value encoder_layer(GraphBuilder& b, const std::string& prefix, Value x) {
  x = b.layer_norm(prefix + ".attention_norm",
                   b.add(x, self_attention(b, prefix + ".attention", x)));
  Value h = b.gelu(b.linear(prefix + ".ffn.intermediate", x, kBertFfn));
  h = b.linear(prefix + ".ffn.output", h, kBertHidden);
  return b.layer_norm(prefix + ".ffn_norm", b.add(x, h));
}

}  // namespace

absl::StatusOr<Graph> build_bert(int layers) {
  if (layers < 1 || layers > kMaxBertLayers)
    return absl::InvalidArgumentError(
        fmt::format("a bert model has 1 to {} layers, not {}", kMaxBertLayers, layers));
  GraphBuilder b(layers == kDefaultBertLayers ? "bert" : fmt::format("bert{}", layers));
  Value x = b.input("x", {kBertSeq, kBertHidden});
  for (int i = 0; i < layers; ++i) x = encoder_layer(b, fmt::format("layer{}", i), x);
  b.output(x, "output");
  return b.build();
}

absl::StatusOr<Graph> build_bert() { return build_bert(kDefaultBertLayers); }

}  // namespace saturn::tensor

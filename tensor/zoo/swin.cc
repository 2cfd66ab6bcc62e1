// A Swin Transformer (Liu et al., 2021) at Swin-T's sizes: 4x4 patches of a
// 224x224 image, embedding 96, four stages of 2, 2, D and 2 blocks (D = 6 in
// Swin-T, 18 in Swin-S; the parameter) with 3, 6, 12 and 24 heads, windows
// of 7x7, every second block's windows shifted by 3 (a roll written as
// Slice + Concat, its attention masked), patch merging between stages and a
// 1000-class head. Query, key and value are separate projections, as in the
// zoo's BERT. Input: [1, 3, 224, 224].
#include <string>
#include <vector>

#include "fmt/format.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

constexpr std::int64_t kSwinImage = 224;
constexpr std::int64_t kSwinPatch = 4;
constexpr std::int64_t kSwinEmbed = 96;
constexpr std::int64_t kSwinWindow = 7;
constexpr std::int64_t kSwinTokens = kSwinWindow * kSwinWindow;  // per window
constexpr std::int64_t kSwinShift = kSwinWindow / 2;
constexpr std::int64_t kSwinHeadDim = 32;
constexpr std::int64_t kSwinClasses = 1000;

// Rolls the [1, H, W, C] tensor by `shift` along H and W (torch.roll):
// the last `shift` rows (columns) come first.
Value roll(GraphBuilder& b, Value x, std::int64_t shift, std::int64_t side) {
  const std::int64_t s = ((shift % side) + side) % side;
  for (std::int64_t axis : {1, 2}) {
    Value tail = b.slice(x, {side - s}, {side}, {axis});
    Value head = b.slice(x, {0}, {side - s}, {axis});
    x = b.concat({tail, head}, axis);
  }
  return x;
}

// [1, H, W, C] -> [windows, 49, C] and back.
Value partition(GraphBuilder& b, Value x, std::int64_t side, std::int64_t channels) {
  const std::int64_t n = side / kSwinWindow;
  x = b.reshape(x, {1, n, kSwinWindow, n, kSwinWindow, channels});
  return b.reshape(b.transpose(x, {0, 1, 3, 2, 4, 5}), {n * n, kSwinTokens, channels});
}
Value merge_windows(GraphBuilder& b, Value x, std::int64_t side, std::int64_t channels) {
  const std::int64_t n = side / kSwinWindow;
  x = b.reshape(x, {1, n, n, kSwinWindow, kSwinWindow, channels});
  return b.reshape(b.transpose(x, {0, 1, 3, 2, 4, 5}), {1, side, side, channels});
}

// The shifted windows' attention mask [windows, 1, 49, 49]: 0 between
// tokens that came from the same part of the image before the roll, -100
// between tokens that the roll brought together.
Tensor shift_mask(std::int64_t side) {
  const std::int64_t n = side / kSwinWindow;
  auto part = [&](std::int64_t i) {
    return i < side - kSwinWindow ? 0 : (i < side - kSwinShift ? 1 : 2);
  };
  std::vector<float> mask(n * n * kSwinTokens * kSwinTokens, 0.0f);
  for (std::int64_t wy = 0; wy < n; ++wy) {
    for (std::int64_t wx = 0; wx < n; ++wx) {
      float* m = mask.data() + (wy * n + wx) * kSwinTokens * kSwinTokens;
      auto label = [&](std::int64_t t) {
        return part(wy * kSwinWindow + t / kSwinWindow) * 3 +
               part(wx * kSwinWindow + t % kSwinWindow);
      };
      for (std::int64_t i = 0; i < kSwinTokens; ++i)
        for (std::int64_t j = 0; j < kSwinTokens; ++j)
          m[i * kSwinTokens + j] = label(i) == label(j) ? 0.0f : -100.0f;
    }
  }
  return Tensor(TensorType{DType::kFloat32, {n * n, 1, kSwinTokens, kSwinTokens}},
                std::move(mask));
}

struct Stage {
  std::int64_t side, channels, heads;
  Value mask;  // for the shifted blocks; invalid where a window covers the image
};

// Window attention over [windows, 49, C], with a learned relative position
// bias per head (a [heads, 49, 49] weight: the gathered table).
Value window_attention(GraphBuilder& b, const std::string& prefix, Value x, const Stage& s,
                       bool shifted) {
  const std::int64_t windows = b.dim(x, 0);
  auto heads = [&](const char* name, Dims perm) {
    Value y = b.linear(prefix + name, x, s.channels);
    return b.transpose(b.reshape(y, {windows, kSwinTokens, s.heads, kSwinHeadDim}), perm);
  };
  Value q = heads(".query", {0, 2, 1, 3});  // [windows, heads, 49, 32]
  Value kt = heads(".key", {0, 2, 3, 1});   // [windows, heads, 32, 49]
  Value v = heads(".value", {0, 2, 1, 3});
  Value scores = b.mul(b.matmul(q, kt), b.constant(0.17677669f));  // 1/sqrt(32)
  scores = b.add(scores, b.weight(prefix + ".relative_position_bias",
                                  {s.heads, kSwinTokens, kSwinTokens}, -0.02f, 0.02f));
  if (shifted) scores = b.add(scores, s.mask);
  Value context = b.matmul(b.softmax(scores, -1), v);
  context = b.reshape(b.transpose(context, {0, 2, 1, 3}), {windows, kSwinTokens, s.channels});
  return b.linear(prefix + ".proj", context, s.channels);
}

// One block on [1, H*W, C]: (shifted) window attention, then the MLP, each
// pre-normed with a residual.
Value swin_block(GraphBuilder& b, const std::string& prefix, Value x, const Stage& s,
                 bool shifted) {
  Value h = b.reshape(b.layer_norm(prefix + ".norm1", x), {1, s.side, s.side, s.channels});
  if (shifted) h = roll(b, h, -kSwinShift, s.side);
  h = window_attention(b, prefix + ".attn", partition(b, h, s.side, s.channels), s, shifted);
  h = merge_windows(b, h, s.side, s.channels);
  if (shifted) h = roll(b, h, kSwinShift, s.side);
  x = b.add(x, b.reshape(h, {1, s.side * s.side, s.channels}));
  Value m = b.gelu(b.linear(prefix + ".mlp.fc1", b.layer_norm(prefix + ".norm2", x),
                            4 * s.channels));
  return b.add(x, b.linear(prefix + ".mlp.fc2", m, s.channels));
}

// [1, H*W, C] -> [1, H/2 * W/2, 2C]: each 2x2 neighbourhood concatenated
// (in torchvision's order), normed and projected.
Value patch_merging(GraphBuilder& b, const std::string& prefix, Value x, std::int64_t side,
                    std::int64_t channels) {
  const std::int64_t half = side / 2;
  x = b.reshape(x, {1, half, 2, half, 2, channels});
  x = b.reshape(b.transpose(x, {0, 1, 3, 4, 2, 5}), {1, half * half, 4 * channels});
  return b.linear(prefix + ".reduction", b.layer_norm(prefix + ".norm", x), 2 * channels, false);
}

}  // namespace

absl::StatusOr<Graph> build_swin(int third_stage_blocks) {
  if (third_stage_blocks < 1 || third_stage_blocks > kMaxSwinBlocks)
    return absl::InvalidArgumentError(fmt::format(
        "a swin model has 1 to {} blocks in its third stage, not {}", kMaxSwinBlocks,
        third_stage_blocks));
  GraphBuilder b(third_stage_blocks == kDefaultSwinBlocks
                     ? "swin"
                     : fmt::format("swin{}", third_stage_blocks));
  Value image = b.input("input", {1, 3, kSwinImage, kSwinImage});
  Value x = b.conv(image, b.weight("patch_embed.weight", {kSwinEmbed, 3, kSwinPatch, kSwinPatch}),
                   b.weight("patch_embed.bias", {kSwinEmbed}),
                   ConvOptions{.strides = {kSwinPatch, kSwinPatch}});
  std::int64_t side = kSwinImage / kSwinPatch, channels = kSwinEmbed;
  x = b.transpose(b.reshape(x, {1, channels, side * side}), {0, 2, 1});
  x = b.layer_norm("patch_embed.norm", x);
  const int depths[] = {2, 2, third_stage_blocks, 2};
  for (int stage = 0; stage < 4; ++stage) {
    if (stage > 0) {
      x = patch_merging(b, fmt::format("stage{}.merge", stage), x, side, channels);
      side /= 2;
      channels *= 2;
    }
    const bool shifts = side > kSwinWindow;  // a single window covers the image: no shift
    const Stage s{side, channels, channels / kSwinHeadDim,
                  shifts ? b.weight(fmt::format("stage{}.shift_mask", stage), shift_mask(side))
                         : Value{}};
    for (int block = 0; block < depths[stage]; ++block) {
      x = swin_block(b, fmt::format("stage{}.block{}", stage, block), x, s,
                     shifts && block % 2 == 1);
    }
  }
  x = b.reduce_mean(b.layer_norm("norm", x), {1}, false);  // [1, 768]
  b.output(b.linear("head", x, kSwinClasses), "output");
  return b.build();
}

absl::StatusOr<Graph> build_swin() { return build_swin(kDefaultSwinBlocks); }

}  // namespace saturn::tensor

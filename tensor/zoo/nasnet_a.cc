// NasNet-A (Zoph et al., 2018) at 224x224, batch 1: a 3x3 stride-2 stem to 32
// channels, then 3 x (5 normal cells + 1 reduction cell) with 44 channels per
// block in the first repetition, doubling at each reduction; fc 1000.
// Separable convs are depthwise + pointwise conv + Relu; 7x7 ops become 5x5.
#include <string>
#include <vector>

#include "fmt/format.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

constexpr int kRepetitions = 3;
constexpr int kNormalCells = 5;
constexpr std::int64_t kFirstChannels = 44;

// Builds one cell's operations, naming each weight "<cell>.op<i>".
struct Cell {
  GraphBuilder& b;
  std::string name;
  std::int64_t channels;
  int ops = 0;

  std::string next() { return fmt::format("{}.op{}", name, ops++); }

  Value separable(Value x, std::int64_t k, std::int64_t stride = 1) {
    std::string n = next();
    Value h = b.conv2d(n + ".depthwise", x,
                       ConvLayer{.out_channels = b.dim(x, 1),
                                 .kernel = {k, k},
                                 .stride = {stride, stride},
                                 .group = b.dim(x, 1),
                                 .bias = false});
    h = b.conv2d(n + ".pointwise", h,
                 ConvLayer{.out_channels = channels, .kernel = {1, 1}, .bias = false});
    return b.relu(h);
  }
  Value avg(Value x, std::int64_t stride = 1) {
    return b.average_pool(
        x, PoolOptions{.kernel = {3, 3}, .strides = {stride, stride}, .pads = {1, 1, 1, 1}});
  }
  Value max(Value x, std::int64_t stride = 1) {
    return b.max_pool(
        x, PoolOptions{.kernel = {3, 3}, .strides = {stride, stride}, .pads = {1, 1, 1, 1}});
  }
  // 1x1 conv + Relu to `channels`, striding when x is larger than `like`.
  Value adjust(Value x, Value like) {
    std::int64_t stride = b.dim(x, 2) / b.dim(like, 2);
    Value h = b.conv2d(
        next() + ".adjust", x,
        ConvLayer{
            .out_channels = channels, .kernel = {1, 1}, .stride = {stride, stride}, .bias = false});
    return b.relu(h);
  }
};

// Each block adds a left and a right operation (declared in that order, so
// weights and nodes come out in a fixed order).
// h: the previous cell's output; p: the one before. Output 5 * channels.
Value normal_cell(GraphBuilder& b, const std::string& name, Value p, Value h,
                  std::int64_t channels) {
  Cell c{b, name, channels};
  p = c.adjust(p, h);
  h = c.adjust(h, h);
  Value l1 = c.separable(p, 5), r1 = c.separable(h, 3);
  Value l2 = c.separable(h, 5), r2 = c.separable(h, 3);
  Value l3 = c.avg(p);
  Value l4 = c.avg(h), r4 = c.avg(h);
  Value l5 = c.separable(p, 3);
  return b.concat({b.add(l1, r1), b.add(l2, r2), b.add(l3, h), b.add(l4, r4), b.add(l5, p)}, 1);
}

// Halves the resolution; output 4 * channels (blocks 2 to 5).
Value reduction_cell(GraphBuilder& b, const std::string& name, Value p, Value h,
                     std::int64_t channels) {
  Cell c{b, name, channels};
  p = c.adjust(p, h);
  h = c.adjust(h, h);
  Value l1 = c.separable(p, 5, 2), r1 = c.separable(h, 5, 2);
  Value b1 = b.add(l1, r1);
  Value l2 = c.max(p, 2), r2 = c.separable(h, 5, 2);
  Value l3 = c.avg(p, 2), r3 = c.separable(h, 5, 2);
  Value r4 = c.avg(b1);
  Value l5 = c.separable(b1, 3), r5 = c.max(p, 2);
  Value b2 = b.add(l2, r2);
  return b.concat({b2, b.add(l3, r3), b.add(b2, r4), b.add(l5, r5)}, 1);
}

}  // namespace

absl::StatusOr<Graph> build_nasnet_a() {
  GraphBuilder b("nasnet_a");
  Value x = b.input("input", {1, 3, 224, 224});
  x = b.relu(b.conv2d(
      "stem", x, ConvLayer{.out_channels = 32, .kernel = {3, 3}, .stride = {2, 2}, .bias = false}));
  Value prev = x, cur = x;
  std::int64_t channels = kFirstChannels;
  int index = 0;
  for (int r = 0; r < kRepetitions; ++r) {
    for (int i = 0; i < kNormalCells; ++i) {
      Value next = normal_cell(b, fmt::format("cell{}", index++), prev, cur, channels);
      prev = cur;
      cur = next;
    }
    channels *= 2;
    Value next = reduction_cell(b, fmt::format("cell{}", index++), prev, cur, channels);
    prev = cur;
    cur = next;
  }
  x = b.flatten(b.global_average_pool(cur));
  b.output(b.linear("fc", x, 1000), "logits");
  return b.build();
}

}  // namespace saturn::tensor

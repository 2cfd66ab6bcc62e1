// ResNeXt-50 32x4d (Xie et al., 2017) at 224x224, batch 1: stages [3,4,6,3] of
// bottlenecks with grouped 3x3 convs (32 groups, widths 128..1024), outputs
// 256..2048, projection shortcuts, fc 1000. Conv + Relu without BatchNorm.
#include <string>

#include "fmt/format.h"
#include "tensor/builder.h"
#include "tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

constexpr std::int64_t kCardinality = 32;

Value conv(GraphBuilder& b, const std::string& name, Value x, std::int64_t out, std::int64_t k,
           std::int64_t stride = 1, std::int64_t group = 1) {
  return b.conv2d(name, x,
                  ConvLayer{.out_channels = out,
                            .kernel = {k, k},
                            .stride = {stride, stride},
                            .group = group,
                            .bias = false});
}

// 1x1 to `width`, grouped 3x3 (strided), 1x1 to `out`, plus the shortcut.
Value block(GraphBuilder& b, const std::string& name, Value x, std::int64_t width, std::int64_t out,
            std::int64_t stride, bool project) {
  Value h = b.relu(conv(b, name + ".conv1", x, width, 1));
  h = b.relu(conv(b, name + ".conv2", h, width, 3, stride, kCardinality));
  h = conv(b, name + ".conv3", h, out, 1);
  Value shortcut = project ? conv(b, name + ".downsample", x, out, 1, stride) : x;
  return b.relu(b.add(h, shortcut));
}

}  // namespace

absl::StatusOr<Graph> build_resnext50() {
  GraphBuilder b("resnext50");
  Value x = b.input("input", {1, 3, 224, 224});
  x = b.relu(conv(b, "conv1", x, 64, 7, 2));
  x = b.max_pool(x, PoolOptions{.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}});
  const int blocks[4] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    std::int64_t width = std::int64_t{128} << stage;  // 128, 256, 512, 1024
    std::int64_t out = std::int64_t{256} << stage;    // 256, 512, 1024, 2048
    for (int i = 0; i < blocks[stage]; ++i) {
      std::int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      x = block(b, fmt::format("layer{}.{}", stage + 1, i), x, width, out, stride, i == 0);
    }
  }
  x = b.flatten(b.global_average_pool(x));
  b.output(b.linear("fc", x, 1000), "logits");
  return b.build();
}

}  // namespace saturn::tensor

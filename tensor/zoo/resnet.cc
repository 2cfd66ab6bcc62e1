// The bottleneck residual networks at 224x224, batch 1: blocks [3,4,6,3]
// with the stride on the 3x3 conv (v1.5), projection shortcuts, fc 1000;
// Conv + Relu without BatchNormalization, as in TASO/TENSAT.
//   ResNet-50 (He et al., 2016): widths 64..512, outputs 256..2048.
//   ResNeXt-50 32x4d (Xie et al., 2017): grouped 3x3 convs (32 groups),
//   widths 128..1024, outputs 256..2048.
#include <string>

#include "fmt/format.h"
#include "saturn/tensor/zoo/layers.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

using zoo::square_conv;

struct BottleneckNet {
  const char* name;
  std::int64_t first_width;  // the 3x3 width of stage 1; doubles each stage
  std::int64_t groups;       // of the 3x3 convs
};

// 1x1 to `width`, (grouped) 3x3 (strided), 1x1 to `out`, plus the shortcut.
Value bottleneck(GraphBuilder& b, const std::string& name, Value x, std::int64_t width,
                 std::int64_t out, std::int64_t groups, std::int64_t stride, bool project) {
  Value h = b.relu(square_conv(b, name + ".conv1", x, width, 1));
  h = b.relu(square_conv(b, name + ".conv2", h, width, 3, stride, groups));
  h = square_conv(b, name + ".conv3", h, out, 1);
  Value shortcut = project ? square_conv(b, name + ".downsample", x, out, 1, stride) : x;
  return b.relu(b.add(h, shortcut));
}

absl::StatusOr<Graph> build_bottleneck_net(const BottleneckNet& net) {
  GraphBuilder b(net.name);
  Value x = b.input("input", {1, 3, 224, 224});
  x = b.relu(square_conv(b, "conv1", x, 64, 7, 2));
  x = b.max_pool(x, PoolOptions{.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}});
  const int blocks[4] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    std::int64_t width = net.first_width << stage;
    std::int64_t out = std::int64_t{256} << stage;  // 256, 512, 1024, 2048
    for (int i = 0; i < blocks[stage]; ++i) {
      std::int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      x = bottleneck(b, fmt::format("layer{}.{}", stage + 1, i), x, width, out, net.groups, stride,
                     i == 0);
    }
  }
  x = b.flatten(b.global_average_pool(x));
  b.output(b.linear("fc", x, 1000), "logits");
  return b.build();
}

}  // namespace

absl::StatusOr<Graph> build_resnet50() { return build_bottleneck_net({"resnet50", 64, 1}); }

absl::StatusOr<Graph> build_resnext50() { return build_bottleneck_net({"resnext50", 128, 32}); }

}  // namespace saturn::tensor

// VGG-19 (Simonyan & Zisserman, 2015) at 224x224, batch 1: 16 conv3x3 + Relu
// in five stages, each ending in a 2x2 max pool, then fc 4096, 4096, 1000.
#include <string>

#include "fmt/format.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

struct Stage {
  std::int64_t channels;
  int convs;
};

constexpr Stage kStages[] = {{64, 2}, {128, 2}, {256, 4}, {512, 4}, {512, 4}};

}  // namespace

absl::StatusOr<Graph> build_vgg19() {
  GraphBuilder b("vgg19");
  Value x = b.input("input", {1, 3, 224, 224});
  for (int s = 0; s < 5; ++s) {
    for (int i = 0; i < kStages[s].convs; ++i) {
      std::string name = fmt::format("conv{}_{}", s + 1, i + 1);
      x = b.relu(
          b.conv2d(name, x, ConvLayer{.out_channels = kStages[s].channels, .kernel = {3, 3}}));
    }
    x = b.max_pool(x, PoolOptions{.kernel = {2, 2}, .strides = {2, 2}});
  }
  x = b.flatten(x);  // [1, 512*7*7]
  x = b.relu(b.linear("fc6", x, 4096));
  x = b.relu(b.linear("fc7", x, 4096));
  b.output(b.linear("fc8", x, 1000), "logits");
  return b.build();
}

}  // namespace saturn::tensor

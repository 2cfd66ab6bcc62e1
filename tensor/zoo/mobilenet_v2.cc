// MobileNet-v2 (Sandler et al., 2018) at 224x224, batch 1: inverted residual
// blocks (expansion t, depthwise 3x3, linear bottleneck) from the standard
// t,c,n,s table, ReLU6 as Clip(0, 6), last conv 1280, fc 1000.
#include <string>

#include "fmt/format.h"
#include "saturn/tensor/zoo/layers.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

using zoo::square_conv;

struct StageSpec {
  std::int64_t expansion, channels;
  int repeats;
  std::int64_t stride;
};

constexpr StageSpec kStages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};

Value relu6(GraphBuilder& b, Value x) { return b.clip(x, 0.0f, 6.0f); }

Value inverted_residual(GraphBuilder& b, const std::string& name, Value x, std::int64_t expansion,
                        std::int64_t out, std::int64_t stride) {
  std::int64_t in = b.dim(x, 1);
  std::int64_t hidden = in * expansion;
  Value h = x;
  if (expansion != 1) h = relu6(b, square_conv(b, name + ".expand", h, hidden, 1));
  h = relu6(b, square_conv(b, name + ".depthwise", h, hidden, 3, stride, hidden));
  h = square_conv(b, name + ".project", h, out, 1);  // linear bottleneck: no activation
  return (stride == 1 && in == out) ? b.add(x, h) : h;
}

}  // namespace

absl::StatusOr<Graph> build_mobilenet_v2() {
  GraphBuilder b("mobilenet_v2");
  Value x = b.input("input", {1, 3, 224, 224});
  x = relu6(b, square_conv(b, "features.0", x, 32, 3, 2));
  int index = 1;
  for (const StageSpec& s : kStages) {
    for (int i = 0; i < s.repeats; ++i, ++index) {
      std::int64_t stride = i == 0 ? s.stride : 1;
      x = inverted_residual(b, fmt::format("features.{}", index), x, s.expansion, s.channels,
                            stride);
    }
  }
  x = relu6(b, square_conv(b, fmt::format("features.{}", index), x, 1280, 1));
  x = b.flatten(b.global_average_pool(x));
  b.output(b.linear("classifier", x, 1000), "logits");
  return b.build();
}

}  // namespace saturn::tensor

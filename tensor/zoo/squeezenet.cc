// SqueezeNet 1.1 (Iandola et al., 2016) at 224x224, batch 1: a 3x3 stem, eight
// fire modules (squeeze 1x1, expand 1x1 + 3x3 concatenated), three max pools,
// a 1x1 classifier conv to 1000 classes, Relu and global average pooling.
#include <string>

#include "fmt/format.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

Value conv_relu(GraphBuilder& b, const std::string& name, Value x, std::int64_t out, std::int64_t k,
                std::int64_t stride = 1, std::int64_t pad = -1) {
  return b.relu(b.conv2d(
      name, x,
      ConvLayer{
          .out_channels = out, .kernel = {k, k}, .stride = {stride, stride}, .pad = {pad, pad}}));
}

Value fire(GraphBuilder& b, const std::string& name, Value x, std::int64_t squeeze,
           std::int64_t expand) {
  Value s = conv_relu(b, name + ".squeeze", x, squeeze, 1);
  Value e1 = conv_relu(b, name + ".expand1x1", s, expand, 1);
  Value e3 = conv_relu(b, name + ".expand3x3", s, expand, 3);
  return b.concat({e1, e3}, 1);
}

Value pool(GraphBuilder& b, Value x) {
  return b.max_pool(x, PoolOptions{.kernel = {3, 3}, .strides = {2, 2}});
}

}  // namespace

absl::StatusOr<Graph> build_squeezenet() {
  GraphBuilder b("squeezenet");
  Value x = b.input("input", {1, 3, 224, 224});
  x = pool(b, conv_relu(b, "conv1", x, 64, 3, 2, 0));  // 111 -> 55
  x = fire(b, "fire2", x, 16, 64);
  x = fire(b, "fire3", x, 16, 64);
  x = pool(b, x);  // 27
  x = fire(b, "fire4", x, 32, 128);
  x = fire(b, "fire5", x, 32, 128);
  x = pool(b, x);  // 13
  x = fire(b, "fire6", x, 48, 192);
  x = fire(b, "fire7", x, 48, 192);
  x = fire(b, "fire8", x, 64, 256);
  x = fire(b, "fire9", x, 64, 256);
  x = conv_relu(b, "classifier", x, 1000, 1);
  b.output(b.flatten(b.global_average_pool(x)), "logits");
  return b.build();
}

}  // namespace saturn::tensor

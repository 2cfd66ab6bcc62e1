// Inception-v3 (Szegedy et al., 2016) at 299x299, batch 1, in torchvision's
// layout: stem, 3 x InceptionA, InceptionB, 4 x InceptionC (1x7/7x1 convs),
// InceptionD, 2 x InceptionE, average pool, fc 1000. BasicConv2d = Conv + Relu.
#include <string>

#include "fmt/format.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {

namespace {

// Conv (no bias) + Relu. `pad` -1 keeps the size at stride 1 ("same").
Value basic_conv(GraphBuilder& b, const std::string& name, Value x, std::int64_t out, Dims kernel,
                 std::int64_t stride = 1, Dims pad = {-1, -1}) {
  return b.relu(b.conv2d(name, x,
                         ConvLayer{.out_channels = out,
                                   .kernel = std::move(kernel),
                                   .stride = {stride, stride},
                                   .pad = std::move(pad),
                                   .bias = false}));
}

// A stride-2 "valid" 3x3 conv.
Value reduce_conv(GraphBuilder& b, const std::string& name, Value x, std::int64_t out) {
  return basic_conv(b, name, x, out, {3, 3}, 2, {0, 0});
}

Value avg_pool3(GraphBuilder& b, Value x) {
  return b.average_pool(
      x, PoolOptions{.kernel = {3, 3}, .pads = {1, 1, 1, 1}, .count_include_pad = true});
}
Value max_pool3s2(GraphBuilder& b, Value x) {
  return b.max_pool(x, PoolOptions{.kernel = {3, 3}, .strides = {2, 2}});
}

Value inception_a(GraphBuilder& b, const std::string& n, Value x, std::int64_t pool_features) {
  Value b1 = basic_conv(b, n + ".branch1x1", x, 64, {1, 1});
  Value b5 = basic_conv(b, n + ".branch5x5_1", x, 48, {1, 1});
  b5 = basic_conv(b, n + ".branch5x5_2", b5, 64, {5, 5});
  Value b3 = basic_conv(b, n + ".branch3x3dbl_1", x, 64, {1, 1});
  b3 = basic_conv(b, n + ".branch3x3dbl_2", b3, 96, {3, 3});
  b3 = basic_conv(b, n + ".branch3x3dbl_3", b3, 96, {3, 3});
  Value bp = basic_conv(b, n + ".branch_pool", avg_pool3(b, x), pool_features, {1, 1});
  return b.concat({b1, b5, b3, bp}, 1);
}

Value inception_b(GraphBuilder& b, const std::string& n, Value x) {
  Value b3 = reduce_conv(b, n + ".branch3x3", x, 384);
  Value bd = basic_conv(b, n + ".branch3x3dbl_1", x, 64, {1, 1});
  bd = basic_conv(b, n + ".branch3x3dbl_2", bd, 96, {3, 3});
  bd = reduce_conv(b, n + ".branch3x3dbl_3", bd, 96);
  return b.concat({b3, bd, max_pool3s2(b, x)}, 1);
}

Value inception_c(GraphBuilder& b, const std::string& n, Value x, std::int64_t c7) {
  Value b1 = basic_conv(b, n + ".branch1x1", x, 192, {1, 1});
  Value b7 = basic_conv(b, n + ".branch7x7_1", x, c7, {1, 1});
  b7 = basic_conv(b, n + ".branch7x7_2", b7, c7, {1, 7}, 1, {0, 3});
  b7 = basic_conv(b, n + ".branch7x7_3", b7, 192, {7, 1}, 1, {3, 0});
  Value bd = basic_conv(b, n + ".branch7x7dbl_1", x, c7, {1, 1});
  bd = basic_conv(b, n + ".branch7x7dbl_2", bd, c7, {7, 1}, 1, {3, 0});
  bd = basic_conv(b, n + ".branch7x7dbl_3", bd, c7, {1, 7}, 1, {0, 3});
  bd = basic_conv(b, n + ".branch7x7dbl_4", bd, c7, {7, 1}, 1, {3, 0});
  bd = basic_conv(b, n + ".branch7x7dbl_5", bd, 192, {1, 7}, 1, {0, 3});
  Value bp = basic_conv(b, n + ".branch_pool", avg_pool3(b, x), 192, {1, 1});
  return b.concat({b1, b7, bd, bp}, 1);
}

Value inception_d(GraphBuilder& b, const std::string& n, Value x) {
  Value b3 = basic_conv(b, n + ".branch3x3_1", x, 192, {1, 1});
  b3 = reduce_conv(b, n + ".branch3x3_2", b3, 320);
  Value b7 = basic_conv(b, n + ".branch7x7x3_1", x, 192, {1, 1});
  b7 = basic_conv(b, n + ".branch7x7x3_2", b7, 192, {1, 7}, 1, {0, 3});
  b7 = basic_conv(b, n + ".branch7x7x3_3", b7, 192, {7, 1}, 1, {3, 0});
  b7 = reduce_conv(b, n + ".branch7x7x3_4", b7, 192);
  return b.concat({b3, b7, max_pool3s2(b, x)}, 1);
}

// Splits into parallel 1x3 and 3x1 convs and concatenates them.
Value fan_out_1x3_3x1(GraphBuilder& b, const std::string& n, Value x) {
  Value a = basic_conv(b, n + "a", x, 384, {1, 3}, 1, {0, 1});
  Value c = basic_conv(b, n + "b", x, 384, {3, 1}, 1, {1, 0});
  return b.concat({a, c}, 1);
}

Value inception_e(GraphBuilder& b, const std::string& n, Value x) {
  Value b1 = basic_conv(b, n + ".branch1x1", x, 320, {1, 1});
  Value b3 = basic_conv(b, n + ".branch3x3_1", x, 384, {1, 1});
  b3 = fan_out_1x3_3x1(b, n + ".branch3x3_2", b3);
  Value bd = basic_conv(b, n + ".branch3x3dbl_1", x, 448, {1, 1});
  bd = basic_conv(b, n + ".branch3x3dbl_2", bd, 384, {3, 3});
  bd = fan_out_1x3_3x1(b, n + ".branch3x3dbl_3", bd);
  Value bp = basic_conv(b, n + ".branch_pool", avg_pool3(b, x), 192, {1, 1});
  return b.concat({b1, b3, bd, bp}, 1);
}

}  // namespace

absl::StatusOr<Graph> build_inception_v3() {
  GraphBuilder b("inception_v3");
  Value x = b.input("input", {1, 3, 299, 299});
  x = reduce_conv(b, "Conv2d_1a_3x3", x, 32);                     // 149
  x = basic_conv(b, "Conv2d_2a_3x3", x, 32, {3, 3}, 1, {0, 0});   // 147
  x = basic_conv(b, "Conv2d_2b_3x3", x, 64, {3, 3});              // 147
  x = max_pool3s2(b, x);                                          // 73
  x = basic_conv(b, "Conv2d_3b_1x1", x, 80, {1, 1});              // 73
  x = basic_conv(b, "Conv2d_4a_3x3", x, 192, {3, 3}, 1, {0, 0});  // 71
  x = max_pool3s2(b, x);                                          // 35
  x = inception_a(b, "Mixed_5b", x, 32);                          // 256
  x = inception_a(b, "Mixed_5c", x, 64);                          // 288
  x = inception_a(b, "Mixed_5d", x, 64);                          // 288
  x = inception_b(b, "Mixed_6a", x);                              // 768 @ 17
  const std::int64_t c7[4] = {128, 160, 160, 192};
  for (int i = 0; i < 4; ++i) x = inception_c(b, fmt::format("Mixed_6{}", char('b' + i)), x, c7[i]);
  x = inception_d(b, "Mixed_7a", x);  // 1280 @ 8
  x = inception_e(b, "Mixed_7b", x);  // 2048
  x = inception_e(b, "Mixed_7c", x);  // 2048
  x = b.flatten(b.global_average_pool(x));
  b.output(b.linear("fc", x, 1000), "logits");
  return b.build();
}

}  // namespace saturn::tensor

// Layer helpers shared by the zoo builders (internal to tensor/zoo).
#pragma once

#include <string>

#include "saturn/tensor/builder.h"

namespace saturn::tensor::zoo {

// A k x k convolution without bias ("same" padding at stride 1), as the
// BatchNorm-free CNNs of TASO/TENSAT use.
inline Value square_conv(GraphBuilder& b, const std::string& name, Value x, std::int64_t out,
                         std::int64_t k, std::int64_t stride = 1, std::int64_t group = 1) {
  return b.conv2d(name, x,
                  ConvLayer{.out_channels = out,
                            .kernel = {k, k},
                            .stride = {stride, stride},
                            .group = group,
                            .bias = false});
}

}  // namespace saturn::tensor::zoo

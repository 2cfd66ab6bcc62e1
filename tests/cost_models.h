// What the cost model tests share: a float32 type of given dimensions and
// a toy device (1 GFLOP/s, 1 GB/s, 2 us to launch an operator).
#pragma once

#include <utility>

#include "saturn/costmodel/cost_model.h"

namespace saturn::cost_tests {

inline tensor::ValueType F(tensor::Dims d) {
  return tensor::ValueType::of(tensor::TensorType{tensor::DType::kFloat32, std::move(d)});
}

inline DeviceProfile toy_profile() {
  return DeviceProfile{.name = "toy",
                       .peak_gflops = 1.0,
                       .bandwidth_gbs = 1.0,
                       .launch_overhead_us = 2.0,
                       .source = "test"};
}

}  // namespace saturn::cost_tests

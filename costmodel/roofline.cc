// The work of an operator application, and the roofline cost model.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "saturn/costmodel/cost_model.h"

namespace saturn {

using tensor::Op;
using tensor::ValueType;

namespace {

double elements(const ValueType& v) {
  double n = 0;
  for (const tensor::TensorType& t : v.parts) n += static_cast<double>(t.num_elements());
  return n;
}

double bytes_of(const ValueType& v) {
  double n = 0;
  for (const tensor::TensorType& t : v.parts) n += static_cast<double>(t.num_bytes());
  return n;
}

// Floating-point operations per output element of elementwise operators
// (transcendentals count as several).
double flops_per_element(Op op) {
  switch (op) {
    case Op::kSigmoid:
    case Op::kTanh:
    case Op::kErf:
    case Op::kPow:
    case Op::kExp:
    case Op::kLog:
    case Op::kSin:
    case Op::kCos:
      return 4;
    case Op::kGelu:
      return 8;
    case Op::kSoftmax:
    case Op::kQLinearSoftmax:
      return 5;
    case Op::kLayerNorm:
    case Op::kInstanceNorm:
      return 8;
    case Op::kSimplifiedLayerNorm:
      return 5;
    case Op::kSkipSimplifiedLayerNorm:
      return 3;  // per element of each of its two results
    case Op::kSkipLayerNorm:
      return 4;
    case Op::kRotaryEmbedding:
      return 3;
    case Op::kBatchNorm:
      return 2;
    default:
      return 1;
  }
}

}  // namespace

OpWork op_work(Op op, const Attributes& a, std::span<const ValueType> inputs,
               const ValueType& output) {
  OpWork w;
  if (is_free_operator(op)) return w;
  // Shape reads its input's type, not its elements.
  if (op != Op::kShape) {
    for (const ValueType& in : inputs) w.bytes += bytes_of(in);
  }
  w.bytes += bytes_of(output);
  const double out = elements(output);
  if (is_reduction(op)) {  // one operation per element read
    w.flops = elements(inputs[0]);
    return w;
  }
  switch (op) {
    case Op::kMatMul:
    case Op::kMatMulInteger:
    case Op::kQLinearMatMul:
      w.flops = 2 * out * static_cast<double>(inputs[0].tensor().dims.back());
      break;
    case Op::kConvInteger:
    case Op::kQLinearConv: {  // the weight: input 1, or 3 after x's scale and zero point
      const tensor::Dims& wd = inputs[op == Op::kConvInteger ? 1 : 3].tensor().dims;
      w.flops = 2 * out * static_cast<double>(wd[1] * wd[2] * wd[3]);
      break;
    }
    case Op::kGroupQueryAttention: {
      // Two products over the causal half of the scores, and their softmax.
      const double seq = static_cast<double>(inputs[0].tensor().dims[1]);
      w.flops = 2 * out * (seq + 1) + 5 * out / static_cast<double>(inputs[0].tensor().dims[2]) *
                                          static_cast<double>(*a.get_int("num_heads")) * seq / 2;
      break;
    }
    case Op::kMatMulNBits:
      w.flops = 2 * out * static_cast<double>(*a.get_int("K"));
      break;
    case Op::kQGemm: {
      const tensor::Dims& d = inputs[0].tensor().dims;
      w.flops = 2 * out * static_cast<double>(a.get_int("transA").value_or(0) != 0 ? d[0] : d[1]);
      break;
    }
    case Op::kGemm: {
      const tensor::Dims& d = inputs[0].tensor().dims;
      double k = static_cast<double>(a.get_int("transA").value_or(0) != 0 ? d[0] : d[1]);
      w.flops = 2 * out * k + (inputs.size() == 3 ? out : 0);
      break;
    }
    case Op::kConv: {
      const tensor::Dims& wd = inputs[1].tensor().dims;
      w.flops =
          2 * out * static_cast<double>(wd[1] * wd[2] * wd[3]) + (inputs.size() == 3 ? out : 0);
      break;
    }
    case Op::kMaxPool:
    case Op::kAveragePool: {
      const std::vector<std::int64_t>* k = a.get_ints("kernel_shape");
      w.flops = out * static_cast<double>(k ? (*k)[0] * (*k)[1] : 1);
      break;
    }
    case Op::kGlobalAveragePool:
    case Op::kQLinearGlobalAveragePool:
      w.flops = elements(inputs[0]);
      break;
    case Op::kGridSample:  // four taps (bilinear), weighted
      w.flops = 8 * out;
      break;
    case Op::kTopK:  // a partial sort: about two comparisons per element read
      w.flops = 2 * elements(inputs[0]);
      break;
    case Op::kTranspose:
    case Op::kConcat:
    case Op::kSplit:
    case Op::kSlice:
    case Op::kGather:
    case Op::kPad:
    case Op::kEnlarge:
    case Op::kMergeGroups:
      break;  // data movement only
    default:
      w.flops = out * flops_per_element(op);
  }
  return w;
}

double RooflineCostModel::node_cost(Op op, const Attributes& a, std::span<const ValueType> inputs,
                                    const ValueType& output, OpContext) const {
  if (is_free_operator(op)) return 0;
  OpWork w = op_work(op, a, inputs, output);
  double compute_us = w.flops / (profile_.peak_gflops * 1e3);
  double memory_us = w.bytes / (profile_.bandwidth_gbs * 1e3);
  return profile_.launch_overhead_us + std::max(compute_us, memory_us);
}

}  // namespace saturn

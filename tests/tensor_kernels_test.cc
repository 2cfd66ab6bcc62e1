// The reference interpreter's kernels against hand-computed small cases, and
// the rewrite helpers (Enlarge, MergeGroups) against the identities the rule
// set relies on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "fmt/format.h"
#include "saturn/base/status.h"
#include "saturn/tensor/builder.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/interpreter/kernels.h"

namespace saturn::tensor {
namespace {

using Ints = std::vector<std::int64_t>;

Tensor T(Dims dims, std::vector<float> values) {
  return Tensor(TensorType{DType::kFloat32, std::move(dims)}, std::move(values));
}
Tensor L(Dims dims, std::vector<std::int64_t> values) {
  return Tensor(TensorType{DType::kInt64, std::move(dims)}, std::move(values));
}

std::vector<Tensor> run_all(Op op, std::vector<Tensor> in, Attributes attrs = {}) {
  absl::StatusOr<Attributes> a = normalize_attributes(op, std::move(attrs));
  EXPECT_TRUE(a.ok()) << message(a.status());
  absl::StatusOr<std::vector<Tensor>> out = evaluate_op(op, *a, in);
  EXPECT_TRUE(out.ok()) << message(out.status());
  return out.ok() ? *out : std::vector<Tensor>{};
}

Tensor run(Op op, std::vector<Tensor> in, Attributes attrs = {}) {
  std::vector<Tensor> out = run_all(op, std::move(in), std::move(attrs));
  return out.empty() ? Tensor() : out[0];
}

void expect_tensor(const Tensor& t, const Dims& dims, const std::vector<float>& values,
                   float tol = 1e-5f) {
  ASSERT_EQ(t.dims(), dims);
  ASSERT_EQ(t.floats().size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    EXPECT_NEAR(t.floats()[i], values[i], tol) << "element " << i;
}

// float16 by its bits: every half survives widening and narrowing, and
// narrowing rounds to nearest, ties to even.
TEST(TensorKernels, Float16RoundTripsAndRounds) {
  std::vector<std::byte> all(65536 * 2);
  for (std::uint32_t i = 0; i < 65536; ++i) {
    all[2 * i] = static_cast<std::byte>(i & 0xffu);
    all[2 * i + 1] = static_cast<std::byte>(i >> 8);
  }
  const Tensor halves(TensorType{DType::kFloat16, {65536}}, all);
  const Tensor back = narrowed(widened(halves), DType::kFloat16);
  std::span<const float> wide = widened(halves).floats();
  for (std::uint32_t i = 0; i < 65536; ++i) {
    if (std::isnan(wide[i])) continue;  // NaN payloads are not kept
    ASSERT_EQ(back.bytes()[2 * i], all[2 * i]) << i;
    ASSERT_EQ(back.bytes()[2 * i + 1], all[2 * i + 1]) << i;
  }
  EXPECT_EQ(wide[0x3c00], 1.0f);
  EXPECT_EQ(wide[0x0001], std::ldexp(1.0f, -24));  // the smallest subnormal
  EXPECT_EQ(wide[0x7bff], 65504.0f);               // the largest finite half
  auto bits = [](float x) {
    const Tensor h =
        narrowed(Tensor(TensorType{DType::kFloat32, {1}}, std::vector<float>{x}), DType::kFloat16);
    return static_cast<unsigned>(h.bytes()[0]) | (static_cast<unsigned>(h.bytes()[1]) << 8);
  };
  EXPECT_EQ(bits(1.0f / 3), 0x3555u);
  EXPECT_EQ(bits(65519.0f), 0x7bffu);
  EXPECT_EQ(bits(65520.0f), 0x7c00u);  // halfway to the next step: ties to even, infinity
  EXPECT_EQ(bits(std::ldexp(1.0f, -25)), 0x0000u);         // half the smallest subnormal: to even
  EXPECT_EQ(bits(std::ldexp(3.0f, -26)), 0x0001u);         // above half of it: up
  EXPECT_EQ(bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00u);  // a tie between 1 and its next: even
  EXPECT_EQ(bits(-2.0f), 0xc000u);
}

TEST(TensorKernels, MatMul) {
  expect_tensor(run(Op::kMatMul, {T({2, 2}, {1, 2, 3, 4}), T({2, 2}, {5, 6, 7, 8})}), {2, 2},
                {19, 22, 43, 50});
  // A batch of two left operands against one shared right operand.
  expect_tensor(run(Op::kMatMul, {T({2, 1, 2}, {1, 2, 3, 4}), T({2, 3}, {1, 0, 1, 0, 1, 1})}),
                {2, 1, 3}, {1, 2, 3, 3, 4, 7});
  // Sizes past the kernel's block sizes, against a naive sum.
  const std::int64_t m = 7, k = 300, n = 600;
  std::vector<float> a(m * k), b(k * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 5) % 13) - 6.0f;
  Tensor c = run(Op::kMatMul, {T({m, k}, a), T({k, n}, b)});
  for (std::int64_t i = 0; i < m; i += 3) {
    for (std::int64_t j = 0; j < n; j += 97) {
      double want = 0;
      for (std::int64_t p = 0; p < k; ++p) want += a[i * k + p] * b[p * n + j];
      EXPECT_NEAR(c.floats()[i * n + j], want, 1e-3);
    }
  }
}

TEST(TensorKernels, Gemm) {
  // alpha * A * B^T + beta * C with a broadcast bias row.
  Tensor out = run(Op::kGemm, {T({2, 2}, {1, 2, 3, 4}), T({2, 2}, {1, 0, 1, 1}), T({2}, {10, 20})},
                   {{"transB", std::int64_t{1}}, {"alpha", 2.0}, {"beta", 0.5}});
  expect_tensor(out, {2, 2}, {2 + 5, 6 + 10, 6 + 5, 14 + 10});
  expect_tensor(
      run(Op::kGemm, {T({2, 1}, {1, 2}), T({2, 2}, {1, 2, 3, 4})}, {{"transA", std::int64_t{1}}}),
      {1, 2}, {7, 10});
}

TEST(TensorKernels, Conv) {
  Tensor x = T({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_tensor(run(Op::kConv, {x, T({1, 1, 2, 2}, {1, 1, 1, 1})}), {1, 1, 2, 2}, {12, 16, 24, 28});
  // Padding 1, stride 2: windows centered on the corners and the middle.
  expect_tensor(run(Op::kConv, {x, T({1, 1, 3, 3}, std::vector<float>(9, 1.0f))},
                    {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}),
                {1, 1, 2, 2}, {12, 16, 24, 28});
  // Bias and a fused relu.
  expect_tensor(
      run(Op::kConv, {x, T({2, 1, 1, 1}, {1, -1}), T({2}, {0, 1})}, {{"activation", "relu"}}),
      {1, 2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  // Dilation 2 on a 4x4 input.
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  expect_tensor(run(Op::kConv, {T({1, 1, 4, 4}, v), T({1, 1, 2, 2}, {1, 1, 1, 1})},
                    {{"dilations", Ints{2, 2}}}),
                {1, 1, 2, 2}, {24, 28, 40, 44});
  // Two groups: each output channel sees only its own input channel.
  expect_tensor(run(Op::kConv, {T({1, 2, 1, 2}, {1, 2, 3, 4}), T({2, 1, 1, 1}, {2, 3})},
                    {{"group", std::int64_t{2}}}),
                {1, 2, 1, 2}, {2, 4, 9, 12});
  // Asymmetric padding.
  expect_tensor(run(Op::kConv, {T({1, 1, 1, 2}, {1, 2}), T({1, 1, 1, 2}, {1, 10})},
                    {{"pads", Ints{0, 1, 0, 0}}}),
                {1, 1, 1, 2}, {10, 21});
}

TEST(TensorKernels, Elementwise) {
  Tensor a = T({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_tensor(run(Op::kAdd, {a, T({3}, {10, 20, 30})}), {2, 3}, {11, 22, 33, 14, 25, 36});
  expect_tensor(run(Op::kSub, {a, T({2, 1}, {1, 2})}), {2, 3}, {0, 1, 2, 2, 3, 4});
  expect_tensor(run(Op::kMul, {T({2, 1}, {2, 3}), T({1, 2}, {5, 7})}), {2, 2}, {10, 14, 15, 21});
  expect_tensor(run(Op::kDiv, {a, T({}, {2})}), {2, 3}, {0.5, 1, 1.5, 2, 2.5, 3});
  expect_tensor(run(Op::kPow, {T({3}, {2, 3, 4}), T({}, {2})}), {3}, {4, 9, 16});
  Tensor x = T({4}, {-1, 0, 0.5, 4});
  expect_tensor(run(Op::kRelu, {x}), {4}, {0, 0, 0.5, 4});
  expect_tensor(run(Op::kSqrt, {T({2}, {4, 9})}), {2}, {2, 3});
  expect_tensor(run(Op::kSigmoid, {T({2}, {0, 2})}), {2}, {0.5f, 0.8807971f});
  expect_tensor(run(Op::kTanh, {T({2}, {0, 1})}), {2}, {0, 0.7615942f});
  expect_tensor(run(Op::kErf, {T({2}, {0, 0.5})}), {2}, {0, 0.5204999f});
  expect_tensor(run(Op::kGelu, {T({3}, {-1, 0, 1})}), {3}, {-0.1586553f, 0, 0.8413447f});
  expect_tensor(run(Op::kClip, {x}, {{"min", 0.0}, {"max", 1.0}}), {4}, {0, 0, 0.5, 1});
  expect_tensor(run(Op::kConstant, {}, {{"value", 2.5}, {"shape", Ints{2}}}), {2}, {2.5, 2.5});
  expect_tensor(run(Op::kIdentity, {x}), {4}, {-1, 0, 0.5, 4});
  expect_tensor(run(Op::kDropout, {x}), {4}, {-1, 0, 0.5, 4});
}

// Integer arithmetic as ONNX computes it: in the element type's width,
// wrapping on overflow, Div truncating toward zero; a division by zero is
// an error, not a crash.
TEST(TensorKernels, IntegerArithmetic) {
  auto ints = [](const Tensor& t) { return std::vector<std::int64_t>(t.ints().begin(), t.ints().end()); };
  const Tensor a = L({4}, {7, -7, 9, std::numeric_limits<std::int64_t>::min()});
  EXPECT_EQ(ints(run(Op::kDiv, {a, L({4}, {2, 2, -4, -1})})),
            (std::vector<std::int64_t>{3, -3, -2, std::numeric_limits<std::int64_t>::min()}));
  EXPECT_EQ(ints(run(Op::kAdd, {a, L({}, {1})})),
            (std::vector<std::int64_t>{8, -6, 10, std::numeric_limits<std::int64_t>::min() + 1}));
  EXPECT_EQ(ints(run(Op::kMul, {L({2, 1}, {2, 3}), L({1, 2}, {5, -7})})),
            (std::vector<std::int64_t>{10, -14, 15, -21}));
  EXPECT_EQ(ints(run(Op::kNeg, {a})),
            (std::vector<std::int64_t>{-7, 7, -9, std::numeric_limits<std::int64_t>::min()}));
  EXPECT_EQ(ints(run(Op::kSub, {L({1}, {0}), a})),
            (std::vector<std::int64_t>{-7, 7, -9, std::numeric_limits<std::int64_t>::min()}));

  // Narrow types wrap: int8 127 + 1 is -128, |-128| is -128, uint8 0 - 1 is 255.
  auto bytes = [](DType dtype, std::vector<std::uint8_t> v) {
    std::vector<std::byte> b(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) b[i] = static_cast<std::byte>(v[i]);
    return Tensor(TensorType{dtype, {static_cast<std::int64_t>(v.size())}}, std::move(b));
  };
  auto values = [](const Tensor& t) {
    std::vector<std::uint8_t> v;
    for (std::byte b : t.bytes()) v.push_back(static_cast<std::uint8_t>(b));
    return v;
  };
  const Tensor i8 = bytes(DType::kInt8, {127, 0x80, 0xF9});  // 127, -128, -7
  EXPECT_EQ(values(run(Op::kAdd, {i8, bytes(DType::kInt8, {1, 0xFF, 2})})),
            (std::vector<std::uint8_t>{0x80, 0x7F, 0xFB}));  // -128, 127, -5
  EXPECT_EQ(values(run(Op::kAbs, {i8})), (std::vector<std::uint8_t>{127, 0x80, 7}));
  EXPECT_EQ(values(run(Op::kDiv, {i8, bytes(DType::kInt8, {2, 0xFF, 2})})),
            (std::vector<std::uint8_t>{63, 0x80, 0xFD}));  // 63, -128 (wrapped), -3
  const Tensor u8 = bytes(DType::kUInt8, {0, 200, 255});
  EXPECT_EQ(values(run(Op::kSub, {u8, bytes(DType::kUInt8, {1, 100, 0})})),
            (std::vector<std::uint8_t>{255, 100, 255}));
  EXPECT_EQ(values(run(Op::kMul, {u8, bytes(DType::kUInt8, {3, 2, 2})})),
            (std::vector<std::uint8_t>{0, 144, 254}));

  const std::vector<Tensor> by_zero{L({2}, {1, 2}), L({2}, {1, 0})};
  absl::StatusOr<std::vector<Tensor>> out = evaluate_op(Op::kDiv, {}, by_zero);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(message(out.status()).find("division by zero"), std::string::npos) << message(out.status());
}

TEST(TensorKernels, Normalizations) {
  expect_tensor(run(Op::kSoftmax, {T({1, 3}, {1, 2, 3})}), {1, 3},
                {0.09003057f, 0.24472847f, 0.66524096f});
  // Softmax over axis 0 of a 2x2: columns sum to one.
  expect_tensor(run(Op::kSoftmax, {T({2, 2}, {0, 1, 0, 1})}, {{"axis", std::int64_t{0}}}), {2, 2},
                {0.5, 0.5, 0.5, 0.5});
  expect_tensor(
      run(Op::kLayerNorm, {T({1, 4}, {1, 2, 3, 4}), T({4}, {1, 1, 1, 2}), T({4}, {0, 0, 0, 1})},
          {{"epsilon", 0.0}}),
      {1, 4}, {-1.3416408f, -0.4472136f, 0.4472136f, 1 + 2 * 1.3416408f}, 1e-4f);
  expect_tensor(
      run(Op::kBatchNorm,
          {T({1, 2, 1, 1}, {1, 2}), T({2}, {2, 1}), T({2}, {0, 1}), T({2}, {1, 0}), T({2}, {1, 4})},
          {{"epsilon", 0.0}}),
      {1, 2, 1, 1}, {0, 2});
  expect_tensor(run(Op::kReduceMean, {T({2, 2}, {1, 2, 3, 4})},
                    {{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}}),
                {2}, {1.5, 3.5});
  expect_tensor(run(Op::kReduceMean, {T({2, 2}, {1, 2, 3, 4})}, {{"axes", Ints{0}}}), {1, 2},
                {2, 3});
  expect_tensor(run(Op::kReduceMean, {T({2, 2}, {1, 2, 3, 4})}), {1, 1}, {2.5});
}

TEST(TensorKernels, Layout) {
  Tensor a = T({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_tensor(run(Op::kTranspose, {a}), {3, 2}, {1, 4, 2, 5, 3, 6});
  expect_tensor(run(Op::kTranspose, {T({1, 2, 2}, {1, 2, 3, 4})}, {{"perm", Ints{2, 0, 1}}}),
                {2, 1, 2}, {1, 3, 2, 4});
  expect_tensor(run(Op::kReshape, {a}, {{"shape", Ints{3, -1}}}), {3, 2}, {1, 2, 3, 4, 5, 6});
  expect_tensor(run(Op::kFlatten, {T({1, 2, 1, 2}, {1, 2, 3, 4})}), {1, 4}, {1, 2, 3, 4});
  expect_tensor(
      run(Op::kConcat, {T({2, 1}, {1, 2}), T({2, 2}, {3, 4, 5, 6})}, {{"axis", std::int64_t{1}}}),
      {2, 3}, {1, 3, 4, 2, 5, 6});
  expect_tensor(
      run(Op::kConcat, {T({1, 2}, {1, 2}), T({1, 2}, {3, 4})}, {{"axis", std::int64_t{0}}}), {2, 2},
      {1, 2, 3, 4});
  std::vector<Tensor> parts =
      run_all(Op::kSplit, {a}, {{"axis", std::int64_t{1}}, {"split", Ints{1, 2}}});
  ASSERT_EQ(parts.size(), 2u);
  expect_tensor(parts[0], {2, 1}, {1, 4});
  expect_tensor(parts[1], {2, 2}, {2, 3, 5, 6});
  Tensor r = T({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_tensor(run(Op::kSlice, {r}, {{"starts", Ints{1}}, {"ends", Ints{8}}, {"steps", Ints{3}}}),
                {3}, {1, 4, 7});
  expect_tensor(
      run(Op::kSlice, {r}, {{"starts", Ints{-1}}, {"ends", Ints{-100}}, {"steps", Ints{-1}}}), {10},
      {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  expect_tensor(run(Op::kSlice, {r}, {{"starts", Ints{8}}, {"ends", Ints{1}}, {"steps", Ints{-2}}}),
                {4}, {8, 6, 4, 2});
  expect_tensor(run(Op::kSlice, {a}, {{"starts", Ints{1}}, {"ends", Ints{3}}, {"axes", Ints{-1}}}),
                {2, 2}, {2, 3, 5, 6});
  Tensor table = T({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_tensor(run(Op::kGather, {table, L({2}, {2, 0})}), {2, 2}, {5, 6, 1, 2});
  expect_tensor(run(Op::kGather, {table, L({1}, {-1})}, {{"axis", std::int64_t{1}}}), {3, 1},
                {2, 4, 6});
  expect_tensor(run(Op::kGather, {table, L({2, 1}, {1, 1})}), {2, 1, 2}, {3, 4, 3, 4});
  absl::StatusOr<std::vector<Tensor>> bad = evaluate_op(
      Op::kGather, *normalize_attributes(Op::kGather, {}), std::vector<Tensor>{table, L({1}, {3})});
  EXPECT_FALSE(bad.ok());
  expect_tensor(run(Op::kPad, {T({1, 2}, {1, 2})}, {{"pads", Ints{0, 1, 0, 2}}, {"value", 9.0}}),
                {1, 5}, {9, 1, 2, 9, 9});
}

TEST(TensorKernels, Pooling) {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  Tensor x = T({1, 1, 4, 4}, v);
  Attributes p{{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  expect_tensor(run(Op::kMaxPool, {x}, p), {1, 1, 2, 2}, {6, 8, 14, 16});
  expect_tensor(run(Op::kAveragePool, {x}, p), {1, 1, 2, 2}, {3.5, 5.5, 11.5, 13.5});
  Tensor small = T({1, 1, 2, 2}, {1, 2, 3, 4});
  Attributes padded{{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}};
  expect_tensor(run(Op::kAveragePool, {small}, padded), {1, 1, 2, 2}, {2.5, 2.5, 2.5, 2.5});
  padded.set("count_include_pad", std::int64_t{1});
  expect_tensor(run(Op::kAveragePool, {small}, padded), {1, 1, 2, 2},
                {10.0f / 9, 10.0f / 9, 10.0f / 9, 10.0f / 9});
  expect_tensor(run(Op::kMaxPool, {T({1, 1, 2, 2}, {-1, -2, -3, -4})},
                    {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}}),
                {1, 1, 2, 2}, {-1, -1, -1, -1});
  expect_tensor(run(Op::kGlobalAveragePool, {T({1, 2, 1, 2}, {1, 3, 5, 7})}), {1, 2, 1, 1}, {2, 6});
}

TEST(TensorKernels, EnlargeKeepsConvolution) {
  expect_tensor(run(Op::kEnlarge, {T({1, 1, 1, 1}, {5})}, {{"kernel_shape", Ints{3, 3}}}),
                {1, 1, 3, 3}, {0, 0, 0, 0, 5, 0, 0, 0, 0});
  // conv(x, w 1x1) == conv(x, enlarge(w) 3x3, pads 1).
  std::vector<float> xv(2 * 5 * 5), wv(3 * 2);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(static_cast<float>(i));
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(static_cast<float>(i));
  Tensor x = T({1, 2, 5, 5}, xv), w = T({3, 2, 1, 1}, wv);
  Tensor direct = run(Op::kConv, {x, w});
  Tensor big = run(Op::kEnlarge, {w}, {{"kernel_shape", Ints{3, 3}}});
  Tensor enlarged = run(Op::kConv, {x, big}, {{"pads", Ints{1, 1, 1, 1}}});
  expect_tensor(enlarged, direct.dims(),
                std::vector<float>(direct.floats().begin(), direct.floats().end()));
}

TEST(TensorKernels, MergeGroupsKeepsConvolution) {
  expect_tensor(run(Op::kMergeGroups, {T({4, 1, 1, 1}, {1, 2, 3, 4})},
                    {{"group", std::int64_t{4}}, {"count", std::int64_t{2}}}),
                {4, 2, 1, 1}, {1, 0, 0, 2, 3, 0, 0, 4});
  // conv(x, w, group 4) == conv(x, merge_groups(w), group 2).
  std::vector<float> xv(4 * 3 * 3), wv(8 * 1 * 3 * 3);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.3f * static_cast<float>(i));
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(0.7f * static_cast<float>(i));
  Tensor x = T({1, 4, 3, 3}, xv), w = T({8, 1, 3, 3}, wv);
  Tensor grouped = run(Op::kConv, {x, w}, {{"group", std::int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}});
  Tensor merged_w =
      run(Op::kMergeGroups, {w}, {{"group", std::int64_t{4}}, {"count", std::int64_t{2}}});
  Tensor merged =
      run(Op::kConv, {x, merged_w}, {{"group", std::int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_tensor(merged, grouped.dims(),
                std::vector<float>(grouped.floats().begin(), grouped.floats().end()), 1e-4f);
}

// An opaque node is evaluated by its ONNX definition where exporters use it
// on sizes and positions (Range, Expand, integer Add, Sub and Mul), and is
// an error naming it otherwise.
TEST(TensorKernels, OpaqueSizeArithmeticIsEvaluatedOthersNamed) {
  auto opaque = [](std::string type, std::vector<Tensor> in, std::string domain = "") {
    return evaluate_op(Op::kOpaque, Attributes{{"op_type", type}, {"domain", domain}}, in);
  };
  auto int64 = [](Ints v, Dims dims) { return Tensor(TensorType{DType::kInt64, std::move(dims)}, std::move(v)); };
  auto scalar = [&](std::int64_t v) { return int64({v}, {}); };
  absl::StatusOr<std::vector<Tensor>> r = opaque("Range", {scalar(2), scalar(9), scalar(3)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Ints((*r)[0].ints().begin(), (*r)[0].ints().end()), (Ints{2, 5, 8}));
  r = opaque("Range", {Tensor::scalar(1), Tensor::scalar(0), Tensor::scalar(-0.5f)});
  ASSERT_TRUE(r.ok()) << r.status();
  expect_tensor((*r)[0], {2}, {1.0f, 0.5f}, 0);
  EXPECT_FALSE(opaque("Range", {scalar(0), scalar(3), scalar(0)}).ok());

  const Tensor column(TensorType{DType::kFloat32, {2, 1}}, std::vector<float>{1, 2});
  r = opaque("Expand", {column, int64({3, 1, 3}, {3})}, "ai.onnx");
  ASSERT_TRUE(r.ok()) << r.status();
  expect_tensor((*r)[0], {3, 2, 3}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}, 0);
  EXPECT_FALSE(opaque("Expand", {column, int64({3, 3}, {2})}).ok());

  r = opaque("Add", {int64({1, 2, 3}, {1, 3}), int64({10, 20}, {2, 1})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(Ints((*r)[0].ints().begin(), (*r)[0].ints().end()), (Ints{11, 12, 13, 21, 22, 23}));
  r = opaque("Mul", {int64({4, 5}, {2}), scalar(-3)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Ints((*r)[0].ints().begin(), (*r)[0].ints().end()), (Ints{-12, -15}));
  EXPECT_FALSE(opaque("Sub", {int64({1, 2}, {2}), Tensor::scalar(1)}).ok());

  for (auto [type, domain] : {std::pair{"TopK", ""}, {"Range", "com.example"}}) {
    absl::StatusOr<std::vector<Tensor>> out = opaque(type, {scalar(0), scalar(3), scalar(1)}, domain);
    ASSERT_FALSE(out.ok()) << type;
    EXPECT_NE(message(out.status()).find(fmt::format("opaque operator '{}'", type)), std::string_view::npos)
        << out.status();
  }
}

// ONNX's Slice with its bounds as inputs (axes absent, steps given) and
// ConstantOfShape with the fill the importer records, as exporters compute
// position ids and masks from the input's shape.
TEST(TensorKernels, OpaqueSliceAndConstantOfShapeAreEvaluated) {
  auto int64 = [](Ints v) {
    const auto n = static_cast<std::int64_t>(v.size());
    return Tensor(TensorType{DType::kInt64, {n}}, std::move(v));
  };
  auto run = [](const Attributes& a, std::vector<Tensor> in) { return evaluate_op(Op::kOpaque, a, in); };
  const Tensor data(TensorType{DType::kFloat32, {2, 4}}, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  Attributes slice{{"op_type", "Slice"}, {"domain", ""}};
  absl::StatusOr<std::vector<Tensor>> r = run(slice, {data, int64({1}), int64({4}), int64({1}), int64({2})});
  ASSERT_TRUE(r.ok()) << r.status();
  expect_tensor((*r)[0], {2, 2}, {1, 3, 5, 7}, 0);
  Attributes without_axes = slice;
  without_axes.set("absent_inputs", Ints{3});
  r = run(without_axes, {data, int64({1, 0}), int64({2, -1}), int64({1, 2})});
  ASSERT_TRUE(r.ok()) << r.status();
  expect_tensor((*r)[0], {1, 2}, {4, 6}, 0);
  EXPECT_FALSE(run(slice, {data, Tensor::scalar(1.0f), int64({4})}).ok());

  Attributes fill{{"op_type", "ConstantOfShape"}, {"domain", ""}, {"fill_value", 7.0}};
  set_opaque_outputs(fill, std::vector<TensorType>{{DType::kInt64, {2, 3}}});
  r = run(fill, {int64({2, 3})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(Ints((*r)[0].ints().begin(), (*r)[0].ints().end()), Ints(6, 7));
  Attributes unknown_fill{{"op_type", "ConstantOfShape"}, {"domain", ""}};
  set_opaque_outputs(unknown_fill, std::vector<TensorType>{{DType::kInt64, {2, 3}}});
  EXPECT_FALSE(run(unknown_fill, {int64({2, 3})}).ok());
}

// Data movement copies elements by their size: every element type but
// string, read in place or not, float16 without a round trip through float32.
TEST(TensorKernels, DataMovementTakesEveryElementType) {
  for (DType dtype : {DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool, DType::kFloat16,
                      DType::kFloat64, DType::kInt16, DType::kBFloat16, DType::kComplex128}) {
    const std::size_t size = dtype_bytes(dtype);
    // Element i of a [2, 3] tensor holds i in its first byte.
    std::vector<std::byte> bytes(6 * size);
    for (std::size_t i = 0; i < 6; ++i) bytes[i * size] = static_cast<std::byte>(i + 1);
    const Tensor x(TensorType{dtype, {2, 3}}, bytes);
    auto firsts = [&](const Tensor& t) {
      std::vector<int> out;
      for (std::size_t i = 0; i < static_cast<std::size_t>(t.size()); ++i) {
        out.push_back(static_cast<int>(t.data()[i * size]));
        for (std::size_t b = 1; b < size; ++b) EXPECT_EQ(t.data()[i * size + b], std::byte{0});
      }
      return out;
    };
    const std::string name(dtype_name(dtype));
    EXPECT_EQ(firsts(run(Op::kTranspose, {x})), (std::vector<int>{1, 4, 2, 5, 3, 6})) << name;
    EXPECT_EQ(firsts(run(Op::kSlice, {x}, {{"starts", Ints{2}}, {"ends", Ints{-100}},
                                           {"axes", Ints{1}}, {"steps", Ints{-2}}})),
              (std::vector<int>{3, 1, 6, 4}))
        << name;
    EXPECT_EQ(firsts(run(Op::kGather, {x, L({2}, {-1, 0})}, {{"axis", std::int64_t{1}}})),
              (std::vector<int>{3, 1, 6, 4}))
        << name;
    EXPECT_EQ(firsts(run(Op::kConcat, {x, x}, {{"axis", std::int64_t{1}}})),
              (std::vector<int>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}))
        << name;
    EXPECT_EQ(firsts(run(Op::kPad, {x}, {{"pads", Ints{0, 1, 0, 0}}})),
              (std::vector<int>{0, 1, 2, 3, 0, 4, 5, 6}))
        << name;
    std::vector<Tensor> parts = run_all(Op::kSplit, {x}, {{"axis", std::int64_t{1}}, {"split", Ints{2, 1}}});
    ASSERT_EQ(parts.size(), 2u) << name;
    EXPECT_EQ(firsts(parts[1]), (std::vector<int>{3, 6})) << name;
  }
  // A string tensor is refused, not read as numbers.
  const Tensor words(TensorType{DType::kString, {2}}, std::vector<std::string>{"a", "b"});
  absl::StatusOr<std::vector<Tensor>> out =
      evaluate_op(Op::kTranspose, *normalize_attributes(Op::kTranspose, {}), std::vector<Tensor>{words});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(message(out.status()).find("string"), std::string_view::npos) << out.status();
}

// A kernel's inputs are typed by their values, not by what a graph declared:
// inputs that do not fit are an error, whatever the caller passes.
TEST(TensorKernels, InputsThatDoNotTypeCheckAreRefused) {
  auto fails = [](Op op, std::vector<Tensor> in, Attributes attrs, std::string_view says) {
    absl::StatusOr<std::vector<Tensor>> out = evaluate_op(op, *normalize_attributes(op, std::move(attrs)), in);
    ASSERT_FALSE(out.ok()) << op_name(op);
    EXPECT_NE(message(out.status()).find(says), std::string_view::npos) << out.status();
  };
  fails(Op::kConcat, {T({2, 1}, {1, 2}), T({3, 1}, {1, 2, 3})}, {{"axis", std::int64_t{1}}}, "does not fit");
  fails(Op::kMatMul, {T({2, 3}, std::vector<float>(6)), T({2, 3}, std::vector<float>(6))}, {}, "");
  fails(Op::kRelu, {L({2}, {1, 2})}, {}, "float32 or float16");
  fails(Op::kSplit, {T({3}, {1, 2, 3})}, {{"split", Ints{2, 2}}}, "add up to more");
  fails(Op::kGather, {T({3}, {1, 2, 3}), L({1}, {-4})}, {}, "-4");
}

// An opaque operator computed on sizes refuses negative shapes and results
// past what the interpreter computes, rather than allocating them.
TEST(TensorKernels, OpaqueSizesAreBounded) {
  auto opaque = [](std::string type, std::vector<Tensor> in, std::vector<TensorType> declared) {
    Attributes a{{"op_type", type}, {"domain", ""}, {"fill_value", 1.0}};
    set_opaque_outputs(a, declared);
    return evaluate_op(Op::kOpaque, a, in);
  };
  const TensorType unknown{DType::kInt64, {kUnknownDim}};
  auto scalar = [](std::int64_t v) { return L({}, {v}); };
  const std::int64_t huge = std::int64_t{1} << 62;
  absl::StatusOr<std::vector<Tensor>> out = opaque("Range", {scalar(0), scalar(huge), scalar(1)}, {unknown});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
  out = opaque("ConstantOfShape", {L({2}, {3, -2})}, {{DType::kInt64, {kUnknownDim, kUnknownDim}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(message(out.status()).find("negative"), std::string_view::npos) << out.status();
  out = opaque("ConstantOfShape", {L({2}, {huge, huge})}, {{DType::kInt64, {kUnknownDim, kUnknownDim}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
  out = opaque("Expand", {T({1}, {1}), L({2}, {-3, 1})}, {{DType::kFloat32, {kUnknownDim, kUnknownDim}}});
  EXPECT_FALSE(out.ok());
  // A declared size the value does not have is an error, not a value of
  // another shape that later kernels would index by the declared one.
  out = opaque("Range", {scalar(0), scalar(4), scalar(1)}, {{DType::kInt64, {3}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(message(out.status()).find("int64[4]"), std::string_view::npos) << out.status();
}

// The interpreter names the node whose kernel read out of range: a Gather of
// a weight by an index past its axis, and a Slice of a computed size.
TEST(TensorKernels, AnOutOfRangeReadNamesTheNode) {
  GraphBuilder b("reads");
  Value x = b.input("x", {4, 3});
  Value ids = b.input("ids", {2}, DType::kInt64);
  b.output(b.gather(x, ids), "rows");
  absl::StatusOr<Graph> g = b.build();
  ASSERT_TRUE(g.ok()) << g.status();
  Inputs in = random_inputs(*g, 1);
  in["ids"] = L({2}, {1, 4});
  absl::StatusOr<std::vector<Tensor>> out = evaluate(*g, in);
  ASSERT_FALSE(out.ok());
  const std::string_view text = message(out.status());
  EXPECT_NE(text.find("Gather"), std::string_view::npos) << text;
  EXPECT_NE(text.find("index 4"), std::string_view::npos) << text;
  in["ids"] = L({2}, {-4, 3});
  out = evaluate(*g, in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].floats()[0], in["x"].floats()[0]);
}

}  // namespace
}  // namespace saturn::tensor

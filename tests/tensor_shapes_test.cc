// Shape and dtype inference for every operator, including the error cases.
#include <gtest/gtest.h>

#include <limits>

#include "saturn/base/status.h"
#include "saturn/tensor/infer.h"

namespace saturn::tensor {
namespace {

ValueType F(Dims dims) { return ValueType::of(TensorType{DType::kFloat32, std::move(dims)}); }
ValueType I(Dims dims) { return ValueType::of(TensorType{DType::kInt64, std::move(dims)}); }

absl::StatusOr<ValueType> infer(Op op, std::vector<ValueType> in, Attributes attrs = {}) {
  absl::StatusOr<Attributes> a = normalize_attributes(op, std::move(attrs));
  if (!a.ok()) return a.status();
  return infer_type(op, *a, in);
}

Dims dims_of(Op op, std::vector<ValueType> in, Attributes attrs = {}) {
  absl::StatusOr<ValueType> t = infer(op, std::move(in), std::move(attrs));
  EXPECT_TRUE(t.ok()) << message(t.status());
  return t.ok() ? t->tensor().dims : Dims{-1};
}

std::string error_of(Op op, std::vector<ValueType> in, Attributes attrs = {}) {
  absl::StatusOr<ValueType> t = infer(op, std::move(in), std::move(attrs));
  EXPECT_FALSE(t.ok()) << "unexpectedly typed as " << (t.ok() ? to_string(*t) : "");
  return t.ok() ? "" : std::string(message(t.status()));
}

using Ints = std::vector<std::int64_t>;

TEST(TensorShapes, Leaves) {
  EXPECT_EQ(dims_of(Op::kInput, {}, {{"name", "x"}, {"shape", Ints{2, 3}}}), (Dims{2, 3}));
  EXPECT_EQ(infer(Op::kWeight, {}, {{"name", "w"}, {"shape", Ints{4}}, {"dtype", "int64"}})
                ->tensor()
                .dtype,
            DType::kInt64);
  EXPECT_EQ(dims_of(Op::kConstant, {}, {{"value", 0.5}}), Dims{});
  EXPECT_NE(error_of(Op::kInput, {}, {{"name", "x"}, {"shape", Ints{2}}, {"dtype", "float8"}})
                .find("unknown dtype"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kInput, {}, {{"name", "x"}, {"shape", Ints{-2}}}).find("negative"),
            std::string::npos);
}

TEST(TensorShapes, AttributeSchemas) {
  EXPECT_NE(error_of(Op::kConv, {F({1, 3, 8, 8}), F({4, 3, 3, 3})}, {{"stride", Ints{2, 2}}})
                .find("no attribute 'stride'"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kConv, {F({1, 3, 8, 8}), F({4, 3, 3, 3})}, {{"group", 1.5}})
                .find("must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kConcat, {F({2})}).find("needs attribute 'axis'"), std::string::npos);
  // Defaults are filled in, and integers become floats where floats are expected.
  absl::StatusOr<Attributes> a =
      normalize_attributes(Op::kLayerNorm, {{"epsilon", std::int64_t{0}}});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->get_int("axis"), -1);
  EXPECT_TRUE(std::holds_alternative<double>(*a->find("epsilon")));
  EXPECT_NE(error_of(Op::kAdd, {F({2})}).find("takes 2 inputs, got 1"), std::string::npos);
}

TEST(TensorShapes, MatMulAndGemm) {
  EXPECT_EQ(dims_of(Op::kMatMul, {F({2, 3}), F({3, 4})}), (Dims{2, 4}));
  EXPECT_EQ(dims_of(Op::kMatMul, {F({5, 2, 3}), F({3, 4})}), (Dims{5, 2, 4}));
  EXPECT_EQ(dims_of(Op::kMatMul, {F({2, 1, 2, 3}), F({4, 3, 5})}), (Dims{2, 4, 2, 5}));
  EXPECT_NE(error_of(Op::kMatMul, {F({2, 3}), F({4, 5})}).find("inner dimensions differ"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kMatMul, {F({3}), F({3, 5})}).find("rank 2 or more"), std::string::npos);
  EXPECT_NE(error_of(Op::kMatMul, {I({2, 3}), F({3, 5})}).find("float32"), std::string::npos);
  EXPECT_EQ(dims_of(Op::kGemm, {F({2, 3}), F({4, 3}), F({4})}, {{"transB", std::int64_t{1}}}),
            (Dims{2, 4}));
  EXPECT_EQ(dims_of(Op::kGemm, {F({3, 2}), F({3, 4})}, {{"transA", std::int64_t{1}}}),
            (Dims{2, 4}));
  EXPECT_NE(error_of(Op::kGemm, {F({2, 3}), F({3, 4}), F({3})}).find("bias"), std::string::npos);
}

TEST(TensorShapes, Conv) {
  EXPECT_EQ(dims_of(Op::kConv, {F({1, 3, 32, 32}), F({8, 3, 3, 3})}, {{"pads", Ints{1, 1, 1, 1}}}),
            (Dims{1, 8, 32, 32}));
  EXPECT_EQ(dims_of(Op::kConv, {F({1, 3, 32, 32}), F({8, 3, 3, 3}), F({8})},
                    {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}),
            (Dims{1, 8, 16, 16}));
  EXPECT_EQ(dims_of(Op::kConv, {F({1, 4, 8, 8}), F({6, 2, 3, 3})}, {{"group", std::int64_t{2}}}),
            (Dims{1, 6, 6, 6}));
  EXPECT_EQ(dims_of(Op::kConv, {F({1, 1, 7, 7}), F({1, 1, 3, 3})}, {{"dilations", Ints{2, 2}}}),
            (Dims{1, 1, 3, 3}));
  EXPECT_EQ(dims_of(Op::kConv, {F({1, 3, 17, 17}), F({8, 3, 1, 7})}, {{"pads", Ints{0, 3, 0, 3}}}),
            (Dims{1, 8, 17, 17}));
  EXPECT_NE(error_of(Op::kConv, {F({1, 3, 8, 8}), F({8, 4, 3, 3})}).find("input channels"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kConv, {F({1, 3, 8, 8}), F({8, 3, 3, 3}), F({4})}).find("bias"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kConv, {F({1, 3, 2, 2}), F({8, 3, 3, 3})}).find("does not fit"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kConv, {F({1, 3, 8, 8}), F({8, 3, 3, 3})}, {{"activation", "swish"}})
                .find("activation"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kConv, {F({1, 3, 8, 8}), F({8, 3, 3, 3})}, {{"pads", Ints{1, 1}}})
                .find("pads needs 4"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kConv, {F({1, 6, 8, 8}), F({8, 3, 3, 3})}, {{"group", std::int64_t{4}}})
                .find("group 4"),
            std::string::npos);
}

TEST(TensorShapes, Elementwise) {
  EXPECT_EQ(dims_of(Op::kAdd, {F({2, 3}), F({3})}), (Dims{2, 3}));
  EXPECT_EQ(dims_of(Op::kMul, {F({2, 1}), F({1, 3})}), (Dims{2, 3}));
  EXPECT_EQ(dims_of(Op::kPow, {F({4}), F({})}), (Dims{4}));
  EXPECT_NE(error_of(Op::kSub, {F({2, 3}), F({4})}).find("do not broadcast"), std::string::npos);
  for (Op op : {Op::kSqrt, Op::kErf, Op::kRelu, Op::kSigmoid, Op::kTanh, Op::kGelu, Op::kClip,
                Op::kIdentity, Op::kDropout}) {
    EXPECT_EQ(dims_of(op, {F({2, 5})}), (Dims{2, 5})) << op_name(op);
  }
  EXPECT_NE(error_of(Op::kRelu, {I({2})}).find("float32"), std::string::npos);
  // Integer arithmetic: Add, Sub, Mul, Div of one integer type, Abs, and Neg
  // of a signed type; not Pow, nor a mix of types.
  auto of = [](DType dtype, Dims dims) { return ValueType::of(TensorType{dtype, std::move(dims)}); };
  for (Op op : {Op::kAdd, Op::kSub, Op::kMul, Op::kDiv}) {
    absl::StatusOr<ValueType> t = infer(op, {I({2, 3}), I({3})});
    ASSERT_TRUE(t.ok()) << op_name(op) << ": " << message(t.status());
    EXPECT_EQ(*t, I({2, 3})) << op_name(op);
    EXPECT_TRUE(infer(op, {of(DType::kUInt8, {4}), of(DType::kUInt8, {})}).ok()) << op_name(op);
  }
  EXPECT_NE(error_of(Op::kAdd, {I({2}), of(DType::kInt32, {2})}).find("input 0's element type int64"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kAdd, {I({2}), F({2})}).find("element type"), std::string::npos);
  EXPECT_NE(error_of(Op::kPow, {I({2}), I({2})}).find("float32"), std::string::npos);
  EXPECT_EQ(dims_of(Op::kNeg, {of(DType::kInt32, {3})}), (Dims{3}));
  EXPECT_EQ(dims_of(Op::kAbs, {of(DType::kUInt16, {3})}), (Dims{3}));
  EXPECT_NE(error_of(Op::kNeg, {of(DType::kUInt8, {3})}).find("float32"), std::string::npos);
  EXPECT_NE(error_of(Op::kClip, {F({2})}, {{"min", 1.0}, {"max", 0.0}}).find("min exceeds max"),
            std::string::npos);
}

TEST(TensorShapes, Normalizations) {
  EXPECT_EQ(dims_of(Op::kSoftmax, {F({2, 5})}, {{"axis", std::int64_t{1}}}), (Dims{2, 5}));
  EXPECT_NE(error_of(Op::kSoftmax, {F({2, 5})}, {{"axis", std::int64_t{2}}}).find("axis"),
            std::string::npos);
  EXPECT_EQ(dims_of(Op::kLayerNorm, {F({4, 8}), F({8}), F({8})}), (Dims{4, 8}));
  EXPECT_EQ(
      dims_of(Op::kLayerNorm, {F({2, 4, 8}), F({4, 8}), F({4, 8})}, {{"axis", std::int64_t{1}}}),
      (Dims{2, 4, 8}));
  EXPECT_NE(error_of(Op::kLayerNorm, {F({4, 8}), F({4}), F({8})}).find("input 1 must be [8]"),
            std::string::npos);
  EXPECT_EQ(dims_of(Op::kBatchNorm, {F({1, 4, 2, 2}), F({4}), F({4}), F({4}), F({4})}),
            (Dims{1, 4, 2, 2}));
  EXPECT_NE(error_of(Op::kBatchNorm, {F({1, 4, 2, 2}), F({3}), F({4}), F({4}), F({4})})
                .find("must be [4]"),
            std::string::npos);
  EXPECT_EQ(
      dims_of(Op::kReduceMean, {F({2, 3, 4})}, {{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}}),
      (Dims{2, 4}));
  EXPECT_EQ(dims_of(Op::kReduceMean, {F({2, 3, 4})}, {{"axes", Ints{-1}}}), (Dims{2, 3, 1}));
  EXPECT_EQ(dims_of(Op::kReduceMean, {F({2, 3})}), (Dims{1, 1}));
  EXPECT_NE(error_of(Op::kReduceMean, {F({2, 3})}, {{"axes", Ints{1, -1}}}).find("axes"),
            std::string::npos);
}

TEST(TensorShapes, Layout) {
  EXPECT_EQ(dims_of(Op::kTranspose, {F({2, 3, 4})}, {{"perm", Ints{1, 0, 2}}}), (Dims{3, 2, 4}));
  EXPECT_EQ(dims_of(Op::kTranspose, {F({2, 3, 4})}), (Dims{4, 3, 2}));
  EXPECT_NE(error_of(Op::kTranspose, {F({2, 3})}, {{"perm", Ints{0, 0}}}).find("not a permutation"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kTranspose, {F({2, 3})}, {{"perm", Ints{0, 1, 2}}}).find("rank"),
            std::string::npos);
  EXPECT_EQ(dims_of(Op::kReshape, {F({2, 3, 4})}, {{"shape", Ints{0, -1}}}), (Dims{2, 12}));
  EXPECT_NE(error_of(Op::kReshape, {F({2, 3})}, {{"shape", Ints{-1, -1}}}).find("more than one -1"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kReshape, {F({2, 3})}, {{"shape", Ints{4, 2}}}).find("cannot reshape"),
            std::string::npos);
  // Found by the ONNX fuzzer: the product of the known sizes overflowed.
  EXPECT_NE(error_of(Op::kReshape, {F({2, 3})},
                     {{"shape", Ints{std::numeric_limits<std::int64_t>::max(), 8, -1}}})
                .find("holds more than"),
            std::string::npos);
  EXPECT_EQ(dims_of(Op::kFlatten, {F({2, 3, 4, 5})}, {{"axis", std::int64_t{2}}}), (Dims{6, 20}));
  EXPECT_EQ(dims_of(Op::kFlatten, {F({2, 3})}, {{"axis", std::int64_t{0}}}), (Dims{1, 6}));
  EXPECT_EQ(dims_of(Op::kConcat, {F({2, 3}), F({2, 5}), F({2, 1})}, {{"axis", std::int64_t{1}}}),
            (Dims{2, 9}));
  EXPECT_NE(error_of(Op::kConcat, {F({2, 3}), F({3, 3})}, {{"axis", std::int64_t{1}}})
                .find("does not fit"),
            std::string::npos);
  absl::StatusOr<ValueType> s =
      infer(Op::kSplit, {F({2, 6})}, {{"axis", std::int64_t{1}}, {"split", Ints{2, 4}}});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->is_tuple);
  EXPECT_EQ(s->parts[1].dims, (Dims{2, 4}));
  EXPECT_NE(error_of(Op::kSplit, {F({2, 6})}, {{"axis", std::int64_t{1}}, {"split", Ints{2, 3}}})
                .find("do not add up"),
            std::string::npos);
  EXPECT_EQ(infer_type(Op::kTupleGet, {{"index", std::int64_t{1}}}, std::vector<ValueType>{*s})
                ->tensor()
                .dims,
            (Dims{2, 4}));
  EXPECT_FALSE(
      infer_type(Op::kTupleGet, {{"index", std::int64_t{2}}}, std::vector<ValueType>{*s}).ok());
  EXPECT_NE(error_of(Op::kTupleGet, {F({2})}, {{"index", std::int64_t{0}}}).find("not a tuple"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kRelu, {*s}).find("is a tuple"), std::string::npos);
  EXPECT_TRUE(infer(Op::kTuple, {F({2}), F({3})})->is_tuple);
}

TEST(TensorShapes, SliceGatherPad) {
  EXPECT_EQ(dims_of(Op::kSlice, {F({4, 10})},
                    {{"starts", Ints{1}}, {"ends", Ints{-1}}, {"axes", Ints{1}}}),
            (Dims{4, 8}));
  EXPECT_EQ(
      dims_of(Op::kSlice, {F({10})}, {{"starts", Ints{1}}, {"ends", Ints{8}}, {"steps", Ints{3}}}),
      (Dims{3}));
  EXPECT_EQ(dims_of(Op::kSlice, {F({10})},
                    {{"starts", Ints{-1}}, {"ends", Ints{-100}}, {"steps", Ints{-1}}}),
            (Dims{10}));
  EXPECT_EQ(dims_of(Op::kSlice, {F({10})}, {{"starts", Ints{5}}, {"ends", Ints{1000}}}), (Dims{5}));
  EXPECT_NE(
      error_of(Op::kSlice, {F({10})}, {{"starts", Ints{0}}, {"ends", Ints{1}}, {"steps", Ints{0}}})
          .find("step"),
      std::string::npos);
  EXPECT_NE(
      error_of(Op::kSlice, {F({10})}, {{"starts", Ints{0, 1}}, {"ends", Ints{1}}}).find("length"),
      std::string::npos);
  EXPECT_EQ(dims_of(Op::kGather, {F({10, 4}), I({2, 3})}), (Dims{2, 3, 4}));
  EXPECT_EQ(dims_of(Op::kGather, {F({10, 4}), I({5})}, {{"axis", std::int64_t{1}}}), (Dims{10, 5}));
  EXPECT_NE(error_of(Op::kGather, {F({10, 4}), F({2})}).find("int64"), std::string::npos);
  EXPECT_EQ(dims_of(Op::kPad, {F({1, 2})}, {{"pads", Ints{0, 1, 0, 2}}}), (Dims{1, 5}));
  EXPECT_NE(error_of(Op::kPad, {F({1, 2})}, {{"pads", Ints{0, 1}}}).find("pads needs 4"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kPad, {F({1, 2})}, {{"pads", Ints{0, -1, 0, 0}}}).find("negative"),
            std::string::npos);
  // Sizes from a file never overflow: padding, and a zero dimension that
  // would otherwise hide two huge ones from the size limit.
  constexpr std::int64_t kHuge = std::numeric_limits<std::int64_t>::max();
  EXPECT_NE(error_of(Op::kPad, {F({1})}, {{"pads", Ints{0, kHuge}}}).find("overflow"),
            std::string::npos);
  EXPECT_FALSE(within_size_limit(TensorType{DType::kFloat32, {0, std::int64_t{1} << 40,
                                                              std::int64_t{1} << 40}}));
  EXPECT_TRUE(within_size_limit(TensorType{DType::kFloat32, {0, 1024}}));
}

TEST(TensorShapes, Pooling) {
  Attributes p{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  EXPECT_EQ(dims_of(Op::kMaxPool, {F({1, 2, 8, 8})}, p), (Dims{1, 2, 4, 4}));
  EXPECT_EQ(dims_of(Op::kAveragePool, {F({1, 2, 8, 8})}, p), (Dims{1, 2, 4, 4}));
  EXPECT_NE(error_of(Op::kMaxPool, {F({1, 2, 8, 8})},
                     {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{2, 2, 2, 2}}})
                .find("smaller than the kernel"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kMaxPool, {F({1, 2, 8})}, {{"kernel_shape", Ints{2, 2}}}).find("rank 4"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kMaxPool, {F({1, 2, 8, 8})}).find("kernel_shape"), std::string::npos);
  EXPECT_EQ(dims_of(Op::kGlobalAveragePool, {F({1, 3, 5, 5})}), (Dims{1, 3, 1, 1}));
}

TEST(TensorShapes, RewriteHelpers) {
  EXPECT_EQ(dims_of(Op::kEnlarge, {F({4, 2, 1, 1})}, {{"kernel_shape", Ints{3, 3}}}),
            (Dims{4, 2, 3, 3}));
  EXPECT_EQ(dims_of(Op::kEnlarge, {F({4, 2, 1, 3})}, {{"kernel_shape", Ints{3, 3}}}),
            (Dims{4, 2, 3, 3}));
  EXPECT_NE(error_of(Op::kEnlarge, {F({4, 2, 1, 1})}, {{"kernel_shape", Ints{2, 2}}})
                .find("cannot center"),
            std::string::npos);
  EXPECT_NE(error_of(Op::kEnlarge, {F({4, 2, 5, 5})}, {{"kernel_shape", Ints{3, 3}}})
                .find("cannot center"),
            std::string::npos);
  EXPECT_EQ(dims_of(Op::kMergeGroups, {F({8, 2, 3, 3})},
                    {{"group", std::int64_t{4}}, {"count", std::int64_t{2}}}),
            (Dims{8, 4, 3, 3}));
  EXPECT_NE(error_of(Op::kMergeGroups, {F({8, 2, 3, 3})},
                     {{"group", std::int64_t{4}}, {"count", std::int64_t{3}}})
                .find("cannot merge"),
            std::string::npos);
}

TEST(TensorShapes, Opaque) {
  Attributes a{{"op_type", "NonMaxSuppression"}};
  std::vector<TensorType> outs{{DType::kFloat32, {2, 3}}, {DType::kInt64, {}}};
  set_opaque_outputs(a, outs);
  absl::StatusOr<ValueType> t = infer(Op::kOpaque, {F({1})}, a);
  ASSERT_TRUE(t.ok()) << message(t.status());
  EXPECT_TRUE(t->is_tuple);
  EXPECT_EQ(t->parts, outs);
  a.set("out_dtypes", Ints{0});
  EXPECT_NE(error_of(Op::kOpaque, {}, a).find("malformed"), std::string::npos);
}

}  // namespace
}  // namespace saturn::tensor

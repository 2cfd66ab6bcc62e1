// Never slower: optimize() times a candidate the prediction takes against
// its ONNX input in onnxruntime and keeps the input unless the candidate is
// measurably faster. A cost model that lies (its predicted gain is a loss)
// leaves the input byte for byte; a real gain is taken, and the same seed
// decides the same way again.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "saturn/base/file.h"
#include "saturn/costmodel/cost_model.h"
#include "saturn/search/search.h"
#include "saturn/optimize/measure.h"
#include "saturn/optimize/optimize.h"
#include "saturn/ort/runtime.h"
#include "saturn/tensor/builder.h"
#include "onnx/onnx_pb.h"
#include "saturn/onnx/onnx.h"

namespace saturn {
namespace {

using tensor::Graph;

// Lies about convolutions: one with a 1x1 kernel costs a hundred times one
// with a larger kernel. The search then enlarges 1x1 kernels to 3x3 with
// zeros around them (nine times the work) and predicts a large gain.
class InvertedConvolutionCost final : public CostModel {
 public:
  std::string_view name() const override { return "inverted-convolutions"; }
  double node_cost(tensor::Op op, const Attributes&, std::span<const tensor::ValueType> inputs,
                   const tensor::ValueType&, OpContext) const override {
    if (is_free_operator(op)) return 0;
    if (op != tensor::Op::kConv || inputs.size() < 2) return 1;
    const tensor::Dims& kernel = inputs[1].tensor().dims;
    return kernel.size() == 4 && kernel[2] == 1 && kernel[3] == 1 ? 100 : 1;
  }
};

OptimizeOptions greedy_options() {
  OptimizeOptions o;
  o.search.strategy = Strategy::kGreedy;
  o.ilp_seconds = 0;
  return o;
}

std::string fixture(const char* name) {
  return fmt::format("{}/{}.onnx", SATURN_FIXTURES, name);
}

TEST(Measure, APredictedGainThatRunsSlowerKeepsTheInputByteForByte) {
  absl::StatusOr<Graph> g = tensor::load_onnx_model(fixture("squeezenet1_1"));
  ASSERT_TRUE(g.ok()) << g.status();
  OptimizeOptions o = greedy_options();
  o.cost_model = std::make_shared<InvertedConvolutionCost>();
  o.self_check = false;
  absl::StatusOr<OptimizeResult> r = optimize(*g, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->measured.has_value());
  ASSERT_TRUE(r->measured->timed) << r->measured->note;
  EXPECT_GT(r->cost_before / r->cost_found, 1.5) << "the lie predicts a large gain";
  EXPECT_TRUE(r->measured->outputs_match);
  EXPECT_FALSE(r->measured->faster) << r->measured->note;
  EXPECT_LT(r->measured->speedup, 1.0) << r->measured->note;
  EXPECT_TRUE(r->kept_input());
  EXPECT_EQ(r->cost_after, r->cost_before);
  // The prediction passed the candidate; the timing refused it.
  ASSERT_EQ(r->decision.verdicts.size(), 2u) << r->decision.summary();
  EXPECT_EQ(r->decision.verdicts[0].gate, Gate::kPredictedGain);
  EXPECT_TRUE(r->decision.verdicts[0].passed);
  EXPECT_EQ(r->decision.deciding()->gate, Gate::kMeasured);
  EXPECT_FALSE(r->decision.deciding()->passed);
  EXPECT_EQ(r->decision.deciding()->evidence, r->measured->note);
  std::cout << r->measured->note << "\n";
  ort::TempDir dir;
  const std::string out = (dir.path() / "out.onnx").string();
  ASSERT_TRUE(save_result(*r, out).ok());
  EXPECT_EQ(*read_text_file(out), *read_text_file(fixture("squeezenet1_1")));
}

// (x W1) W2 with weights W1 [64, 1024] and W2 [1024, 64]: reassociated, the
// product of the weights is a constant and x meets a 64x64 matrix, a
// twentieth of the work. x's first axis is the symbolic dimension "rows",
// sized 512: the models are timed as written, fed inputs of that size.
absl::StatusOr<Graph> reassociable_model(const std::string& path) {
  tensor::GraphBuilder b("chain");
  tensor::Value x = b.input("x", {512, 64});
  tensor::Value w1 = b.weight("w1", {64, 1024});
  tensor::Value w2 = b.weight("w2", {1024, 64});
  b.output(b.matmul(b.matmul(x, w1), w2), "y");
  absl::StatusOr<Graph> built = b.build();
  if (!built.ok()) return built.status();
  absl::StatusOr<std::string> bytes = tensor::to_onnx_model(*built);
  if (!bytes.ok()) return bytes.status();
  onnx::ModelProto model;
  if (!model.ParseFromString(*bytes)) return absl::InternalError("unparsable export");
  model.mutable_graph()->clear_value_info();  // the export's types at 512 rows
  for (onnx::ValueInfoProto* v : {model.mutable_graph()->mutable_input(0),
                                  model.mutable_graph()->mutable_output(0)})
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param(
        "rows");
  if (absl::Status s = write_text_file(path, model.SerializeAsString()); !s.ok()) return s;
  return tensor::load_onnx_model(path, {.dims = {{"rows", 512}}});
}

TEST(Measure, AMeasuredGainIsTakenAndTheSameSeedDecidesAlike) {
  ort::TempDir dir;
  absl::StatusOr<Graph> g = reassociable_model((dir.path() / "chain.onnx").string());
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->symbols.sizes.at("rows"), 512);
  // Decided on one thread by its CPU time, checked on two by the wall clock.
  OptimizeOptions two = greedy_options();
  two.runtime_threads = 2;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(run);
    absl::StatusOr<OptimizeResult> r = optimize(*g, two);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(r->measured.has_value() && r->measured->timed)
        << (r->measured ? r->measured->note : "") << "; " << r->holds_only_at_given_sizes;
    EXPECT_TRUE(r->measured->faster) << r->measured->note;
    EXPECT_GT(r->measured->speedup_low, 2.0) << r->measured->note;
    EXPECT_EQ(r->measured->clock, "thread CPU time");
    EXPECT_EQ(r->measured->check_threads, 2) << r->measured->note;
    EXPECT_GT(r->measured->check_speedup, 1.5) << r->measured->note;
    EXPECT_NE(r->measured->note.find("on 2 threads"), std::string::npos) << r->measured->note;
    EXPECT_FALSE(r->kept_input());
    EXPECT_EQ(r->decision.deciding()->gate, Gate::kMeasured);
    EXPECT_TRUE(r->decision.deciding()->passed);
    std::cout << r->measured->note << "\n";
  }
  // A speedup asked for and not reached keeps the input, in the same gate.
  OptimizeOptions asked = greedy_options();
  asked.min_speedup = 1000;
  absl::StatusOr<OptimizeResult> r = optimize(*g, asked);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->kept_input());
  EXPECT_FALSE(r->measured->faster);
  EXPECT_EQ(r->decision.deciding()->gate, Gate::kMeasured);
  EXPECT_NE(r->decision.deciding()->evidence.find("below the 1000.000x asked for"),
            std::string::npos)
      << r->decision.summary();
}

TEST(Measure, OnlyAGraphReadFromAnOnnxFileIsTimed) {
  tensor::GraphBuilder b("chain");
  tensor::Value x = b.input("x", {512, 64});
  b.output(b.matmul(b.matmul(x, b.weight("w1", {64, 1024})), b.weight("w2", {1024, 64})), "y");
  absl::StatusOr<Graph> g = b.build();
  ASSERT_TRUE(g.ok());
  absl::StatusOr<OptimizeResult> r = optimize(*g, greedy_options());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->measured.has_value());
  EXPECT_FALSE(r->measured->timed);
  EXPECT_NE(r->measured->note.find("not read from an ONNX file"), std::string::npos);
  EXPECT_FALSE(r->kept_input()) << "the prediction decides";
  // A speedup asked for needs a timing: without one the input is kept.
  OptimizeOptions asked = greedy_options();
  asked.min_speedup = 1.0;
  absl::StatusOr<OptimizeResult> kept = optimize(*g, asked);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(kept->kept_input());
  EXPECT_NE(kept->decision.summary().find("--min-speedup needs a timing"), std::string::npos)
      << kept->decision.summary();
  OptimizeOptions off = greedy_options();
  off.measure = false;
  r = optimize(*g, off);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->measured.has_value());
}

// Of two candidates both measurably faster than their input, timed against
// it one after the other, the second replaces the first only where the
// lower end of its interval lies above the first's speedup: a difference
// within the timings' spread keeps the candidate the pricing prefers.
TEST(Measure, AnotherCandidateReplacesTheResultOnlyWhereItOutrunsItsTiming) {
  auto timed = [](double speedup, double low) {
    return Measurement{.timed = true, .outputs_match = true, .faster = true,
                       .speedup = speedup, .speedup_low = low};
  };
  EXPECT_FALSE(outruns(timed(1.438, 1.393), timed(1.430, 1.372)));
  EXPECT_FALSE(outruns(timed(1.50, 1.45), timed(1.45, 1.40)));
  EXPECT_TRUE(outruns(timed(1.60, 1.52), timed(1.45, 1.40)));
  EXPECT_FALSE(outruns(timed(1.45, 1.40), timed(1.60, 1.52)));
}

}  // namespace
}  // namespace saturn

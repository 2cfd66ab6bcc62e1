// Every zoo model builds, type-checks and evaluates on random inputs to
// finite values.
#include <gtest/gtest.h>

#include <cmath>

#include "saturn/base/status.h"
#include "saturn/tensor/interpreter/interpreter.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn::tensor {
namespace {

class ZooTest : public testing::TestWithParam<std::string_view> {};

TEST_P(ZooTest, BuildsTypeChecksAndEvaluates) {
  absl::StatusOr<Graph> graph = build_zoo_model(GetParam());
  ASSERT_TRUE(graph.ok()) << message(graph.status());
  absl::StatusOr<std::vector<ValueType>> types = infer_types(*graph);
  ASSERT_TRUE(types.ok()) << message(types.status());
  EXPECT_GT(total_ops(*graph), 40);
  absl::StatusOr<std::vector<Tensor>> out = evaluate(*graph, random_inputs(*graph, 1));
  ASSERT_TRUE(out.ok()) << message(out.status());
  ASSERT_EQ(out->size(), graph->outputs.size());
  for (const Tensor& t : *out) {
    EXPECT_EQ(t.type(), (*types)[graph->outputs[0].node].tensor());
    bool finite = true, nonzero = false;
    for (float v : t.floats()) {
      finite = finite && std::isfinite(v);
      nonzero = nonzero || v != 0.0f;
    }
    EXPECT_TRUE(finite);
    EXPECT_TRUE(nonzero);
  }
}

std::vector<std::string_view> model_names() {
  std::vector<std::string_view> names;
  for (const ZooModel& m : zoo_models()) names.push_back(m.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooTest, testing::ValuesIn(model_names()),
                         [](const testing::TestParamInfo<std::string_view>& info) {
                           return std::string(info.param);
                         });

TEST(Zoo, UnknownModelNamesTheKnownOnes) {
  absl::StatusOr<Graph> g = build_zoo_model("resnet51");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(message(g.status()).find("resnet50"), std::string_view::npos);
}

// "NAME:N" sets the depth of the models that have one: each two layers
// (a Swin stage alternates plain and shifted windows) add the same
// operators, and the other models refuse a depth.
TEST(Zoo, DepthParameterAddsWholeLayers) {
  auto ops = [](std::string_view name) {
    absl::StatusOr<Graph> g = build_zoo_model(name);
    EXPECT_TRUE(g.ok()) << name << ": " << message(g.status());
    return g.ok() ? total_ops(*g) : 0;
  };
  for (std::string_view model : {"bert", "llama", "swin"}) {
    const std::string name(model);
    const int per_two = ops(name + ":3") - ops(name + ":1");
    EXPECT_GT(per_two, 20) << model;
    EXPECT_EQ(ops(name + ":24") - ops(name + ":8"), 8 * per_two) << model;
  }
  EXPECT_EQ(ops("bert:8"), ops("bert"));
  EXPECT_EQ(ops("swin:6"), ops("swin"));
  EXPECT_EQ(build_zoo_model("bert:24")->name, "bert24");
  for (std::string_view bad : {"resnet50:3", "bert:x", "swin:0", "llama:81", "bert:"}) {
    absl::StatusOr<Graph> g = build_zoo_model(bad);
    ASSERT_FALSE(g.ok()) << bad;
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace saturn::tensor

// The decision stage (optimize/decide.h): each gate's verdict and evidence,
// the decision in the report and back, and the search of a graph whole and
// by regions giving the same verdict where there is one region.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "saturn/optimize/decide.h"
#include "saturn/optimize/optimize.h"
#include "saturn/optimize/optimize_internal.h"
#include "saturn/optimize/report.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn {
namespace {

OptimizeOptions greedy(std::size_t nodes = 2000) {
  OptimizeOptions o;
  o.search.strategy = Strategy::kGreedy;
  o.budget.max_nodes = nodes;
  o.ilp_seconds = 0;
  o.seconds_per_op = 0;  // the time limit alone: no verdict depends on the clock
  o.cost = "roofline";
  return o;
}

TEST(Decide, AGraphOverTheBudgetIsKeptByTheSearchedGate) {
  const tensor::Graph g = *tensor::build_zoo_model("squeezenet");
  OptimizeOptions o = greedy(/*nodes=*/2);
  o.regions.target_ops = 0;  // whole: too large for 2 e-nodes, and not cut
  absl::StatusOr<OptimizeResult> r = optimize(g, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->kept_input());
  const Verdict* v = r->decision.deciding();
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->gate, Gate::kSearched);
  EXPECT_FALSE(v->passed);
  EXPECT_EQ(v->evidence, r->not_searched);
  EXPECT_EQ(r->decision.verdicts.size(), 1u) << "no gate runs after a refusal";
}

TEST(Decide, TheReportHoldsOneDecisionThatReadsBack) {
  const tensor::Graph g = *tensor::build_zoo_model("squeezenet");
  OptimizeOptions o = greedy();
  absl::StatusOr<OptimizeResult> taken = optimize(g, o);
  ASSERT_TRUE(taken.ok()) << taken.status();
  ASSERT_FALSE(taken->kept_input());
  const nlohmann::json report = optimize_report(g, *taken, o);
  const nlohmann::json& d = report.at("decision");
  EXPECT_TRUE(d.at("taken").get<bool>());
  EXPECT_EQ(d.at("decided_by"), "predicted gain");
  EXPECT_EQ(report.at("kept_input"), false);
  absl::StatusOr<Decision> back = decision_of(d);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->taken, taken->decision.taken);
  ASSERT_EQ(back->verdicts.size(), taken->decision.verdicts.size());
  EXPECT_EQ(back->summary(), taken->decision.summary());
  EXPECT_FALSE(decision_of(nlohmann::json{{"taken", true},
                                          {"verdicts", {{{"gate", "luck"}, {"passed", true},
                                                         {"evidence", ""}}}}})
                   .ok());
}

// One region: the search of the graph whole and the regions' path (which
// stitches, prices and decides on its own) give the same verdict.
TEST(Decide, WholeAndRegionsGiveTheSameVerdictOnOneRegion) {
  const tensor::Graph g = *tensor::build_zoo_model("squeezenet");
  for (const double min_gain : {0.0, 0.99}) {
    SCOPED_TRACE(min_gain);
    OptimizeOptions o = greedy();
    o.min_gain = min_gain;
    o.search.threads = 1;
    absl::StatusOr<std::unique_ptr<const Prepared>> prepared =
        prepare(o, tensor::default_domain_opset(g.opsets));
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    absl::StatusOr<std::vector<tensor::Region>> one =
        tensor::split_into_regions(g, {.target_ops = 0});
    ASSERT_TRUE(one.ok() && one->size() == 1);
    absl::StatusOr<OptimizeResult> whole = optimize_whole(g, o, **prepared);
    absl::StatusOr<OptimizeResult> regions = optimize_regions(g, *one, o, **prepared);
    ASSERT_TRUE(whole.ok()) << whole.status();
    ASSERT_TRUE(regions.ok()) << regions.status();
    EXPECT_EQ(whole->kept_input(), min_gain > 0.5);
    EXPECT_EQ(regions->kept_input(), whole->kept_input());
    ASSERT_NE(whole->decision.deciding(), nullptr);
    ASSERT_NE(regions->decision.deciding(), nullptr);
    EXPECT_EQ(regions->decision.deciding()->gate, whole->decision.deciding()->gate);
    EXPECT_EQ(regions->decision.deciding()->passed, whole->decision.deciding()->passed);
    EXPECT_NEAR(regions->cost_after, whole->cost_after, 1e-6 * whole->cost_before);
  }
}

}  // namespace
}  // namespace saturn

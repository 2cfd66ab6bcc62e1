// The search environment and its JSON protocol: a step's reward and a
// restore return to the exact state, unpriced steps are priced when asked,
// the budget ends an episode, matches are capped per rule and state,
// saturation passes say why they ended, and the
// protocol drives the environment.
#include <gtest/gtest.h>

#include <numeric>
#include <sstream>
#include <string>

#include "saturn/costmodel/cost_model.h"
#include "saturn/search/environment.h"
#include "saturn/search/protocol.h"
#include "saturn/search/search.h"
#include "nlohmann/json.hpp"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/zoo/zoo.h"

namespace saturn {
namespace {

using tensor::Graph;

// ---- The environment ------------------------------------------------------

struct EnvFixture {
  tensor::TensorLanguage language;
  ConditionRegistry conditions = tensor_conditions();
  RuleSet rules = *load_tensor_rules(language, conditions);
  OpCountCostModel cost;
  Graph graph = *tensor::build_zoo_model("squeezenet");
  std::unique_ptr<Environment> env;

  explicit EnvFixture(std::size_t nodes = 3000, std::size_t match_limit = 0,
                      bool price_steps = true) {
    EnvironmentConfig config{.graph = &graph,
                             .rules = &rules,
                             .cost_model = &cost,
                             .budget = {.max_nodes = nodes},
                             .match_limit = match_limit,
                             .price_steps = price_steps};
    env = *Environment::create(config);
  }
  std::size_t rule(std::string_view name) const {
    for (std::size_t r = 0; r < rules.size(); ++r)
      if (rules[r].name == name) return r;
    ADD_FAILURE() << "no rule " << name;
    return 0;
  }
};

TEST(Environment, StepRewardsAndRestoreReturnsToTheExactState) {
  EnvFixture f;
  Environment& env = *f.env;
  const std::string start = env.egraph().dump();
  const double initial = env.cost();
  std::vector<std::size_t> legal = env.legal_actions();
  EXPECT_EQ(legal.back(), env.stop_action());
  const std::size_t fuse = f.rule("fuse-conv-bias-relu");
  EXPECT_NE(std::find(legal.begin(), legal.end(), fuse), legal.end());

  env.checkpoint();
  StepResult r = env.step(fuse);
  EXPECT_EQ(r.applied, 26u);                    // every Conv + bias + Relu of SqueezeNet
  EXPECT_NEAR(r.reward, 26.0 / initial, 1e-9);  // each fusion saves one op
  EXPECT_EQ(env.rule_applications()[fuse], 26u);
  EXPECT_FALSE(r.done);
  env.restore();
  EXPECT_EQ(env.egraph().dump(), start);
  EXPECT_EQ(env.cost(), initial);
  EXPECT_EQ(env.rule_applications()[fuse], 0u);
  EXPECT_EQ(env.steps(), 0u);

  // A subset of the matches, then stop.
  const std::size_t which[] = {0, 1};
  EXPECT_EQ(env.step(fuse, which).applied, 2u);
  EXPECT_TRUE(env.step(env.stop_action()).done);
  env.reset();
  EXPECT_EQ(env.egraph().dump(), start);
}

TEST(Environment, UnpricedStepsArePricedWhenAsked) {
  EnvFixture priced, unpriced(3000, 0, false);
  const std::size_t fuse = priced.rule("fuse-conv-bias-relu");
  const double initial = unpriced.env->cost();
  const std::size_t before = unpriced.env->extractions();
  for (std::size_t action : {fuse, fuse}) {  // the second changes nothing
    StepResult p = priced.env->step(action), u = unpriced.env->step(action);
    EXPECT_EQ(u.applied, p.applied);
    EXPECT_EQ(u.reward, 0.0);
  }
  EXPECT_EQ(unpriced.env->extractions(), before);  // nothing priced yet
  EXPECT_EQ(unpriced.env->cost(), priced.env->cost());
  EXPECT_EQ(unpriced.env->cost(), initial - 26);
  EXPECT_EQ(unpriced.env->extractions(), before + 1);
  unpriced.env->step(unpriced.env->stop_action());
  EXPECT_EQ(unpriced.env->cost(), initial - 26);  // stop keeps the state's price
  EXPECT_EQ(unpriced.env->extractions(), before + 1);
}

TEST(Environment, BudgetEndsTheEpisode) {
  EnvFixture f(130);  // SqueezeNet takes 118 e-nodes; each fusion adds one
  Environment& env = *f.env;
  StepResult r = env.step(f.rule("fuse-conv-bias-relu"));
  EXPECT_TRUE(r.done);
  EXPECT_TRUE(env.budget_hit());
  EXPECT_LE(env.egraph().num_nodes(), 130u);
  EXPECT_LT(r.applied, 26u);
}

TEST(Environment, MatchesAreCappedPerRuleAndState) {
  EnvFixture f(3000, 10);
  Environment& env = *f.env;
  const std::size_t fuse = f.rule("fuse-conv-bias-relu");
  EXPECT_EQ(env.matches(fuse).size(), 10u);  // of 26
  EXPECT_EQ(env.step(fuse).applied, 10u);
  EXPECT_EQ(EnvFixture(3000).env->matches(fuse).size(), 26u);  // the default: 20,000 or more
}

// A saturation pass over the environment runs in the Runner's loop and says
// why it ended: a fixpoint for one rule, the node budget for every rule.
TEST(Environment, SaturationPassesSayWhyTheyEnded) {
  EnvFixture fusing;
  const std::size_t fuse[] = {fusing.rule("fuse-conv-bias-relu")};
  SaturationResult pass = saturate(*fusing.env, fuse, 8, 8);
  EXPECT_EQ(pass.stop, StopReason::kSaturated);
  EXPECT_EQ(pass.applied, 26u);
  EXPECT_EQ(pass.iterations, 2u);  // the fusions, then a step that changes nothing

  EnvFixture small(130);
  std::vector<std::size_t> all(small.rules.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  pass = saturate(*small.env, all, 8, 1);
  EXPECT_EQ(pass.stop, StopReason::kNodeLimit);
  EXPECT_LE(small.env->egraph().num_nodes(), 130u);

  EnvFixture capped(3000);
  pass = saturate(*capped.env, all, 1, 1);
  EXPECT_EQ(pass.stop, StopReason::kIterationLimit);
  EXPECT_EQ(pass.iterations, 1u);
}

// ---- The JSON protocol ------------------------------------------------------

TEST(Protocol, DrivesTheEnvironment) {
  std::istringstream in(
      R"({"cmd": "observe"}
{"cmd": "reset", "model": "squeezenet", "budget_nodes": 2000, "cost": "opcount"}
{"cmd": "rules"}
{"cmd": "actions"}
not json
{"cmd": "step", "action": 100000}
{"cmd": "step", "action": 0, "matches": [99999]}
{"cmd": "fly"}
{"cmd": "reset", "model": "no-such-model"}
{"cmd": 5}
)");
  std::ostringstream out;
  auto loader = [](const std::string& name) { return tensor::build_zoo_model(name); };
  // Requests that depend on earlier answers are sent in a second session.
  EXPECT_EQ(serve_environment(in, out, loader), 7);
  std::vector<nlohmann::json> replies;
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) replies.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(replies.size(), 10u);
  EXPECT_FALSE(replies[0]["ok"]);
  EXPECT_NE(replies[0]["error"].get<std::string>().find("line 1: 'observe' before the first reset"),
            std::string::npos);
  ASSERT_TRUE(replies[1]["ok"]);
  EXPECT_EQ(replies[1]["observation"]["cost"], 64.0);
  const std::size_t stop = replies[1]["stop_action"];
  EXPECT_EQ(replies[2]["rules"].size(), stop);
  std::size_t fuse = stop;
  for (const auto& r : replies[2]["rules"])
    if (r["name"] == "fuse-conv-bias-relu") fuse = r["action"];
  ASSERT_LT(fuse, stop);
  bool listed = false;
  for (const auto& a : replies[3]["legal"]) listed = listed || a["action"] == fuse;
  EXPECT_TRUE(listed);
  EXPECT_EQ(replies[4]["error"], "line 5: not valid JSON");
  EXPECT_NE(replies[5]["error"].get<std::string>().find("out of range"), std::string::npos);
  EXPECT_NE(replies[6]["error"].get<std::string>().find("match 99999 is out of range"),
            std::string::npos);
  EXPECT_NE(replies[7]["error"].get<std::string>().find("unknown cmd 'fly'"), std::string::npos);
  EXPECT_FALSE(replies[8]["ok"]);
  EXPECT_EQ(replies[9]["error"], "line 10: a request is an object with a \"cmd\" string");

  std::istringstream second(
      R"({"cmd": "reset", "model": "squeezenet", "budget_nodes": 2000, "cost": "opcount"}
{"cmd": "step", "action": )" +
      std::to_string(fuse) + R"(}
{"cmd": "step", "action": )" +
      std::to_string(stop) + R"(}
{"cmd": "quit"}
{"cmd": "observe"}
)");
  std::ostringstream out2;
  EXPECT_EQ(serve_environment(second, out2, loader), 0);
  std::istringstream lines2(out2.str());
  replies.clear();
  for (std::string line; std::getline(lines2, line);)
    replies.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(replies.size(), 4u);  // nothing after quit
  EXPECT_EQ(replies[1]["applied"], 26);
  EXPECT_EQ(replies[1]["observation"]["cost"], 38.0);
  EXPECT_NEAR(replies[1]["reward"].get<double>(), 26.0 / 64.0, 1e-9);
  EXPECT_EQ(replies[1]["done"], false);
  EXPECT_EQ(replies[2]["done"], true);
}

}  // namespace
}  // namespace saturn

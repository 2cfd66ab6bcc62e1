// ClassReach (search/class_reach.h): which e-classes reach which, as cycle
// filtering asks it, with bitsets and with its bounded searches.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "saturn/egraph/egraph.h"
#include "saturn/search/class_reach.h"

namespace saturn {
namespace {

// Cycle filtering's reachability (component bitsets) against a plain search,
// on random e-graphs whose merges make cycles.
TEST(ClassReach, AgreesWithASearchOverTheNodes) {
  class Tiny : public Language {
   public:
    Tiny() : Language("tiny") {
      leaf = add_operator("x", 0);
      unary = add_operator("f", 1);
      binary = add_operator("g", 2);
    }
    Symbol leaf, unary, binary;
  };
  const Tiny lang;
  std::mt19937 rng(5);
  for (int round = 0; round < 30; ++round) {
    EGraph eg(lang);
    std::vector<Id> ids;
    for (int i = 0; i < 4; ++i)
      ids.push_back(
          eg.add(ENode(lang.leaf, eg.attrs().intern(Attributes{{"i", std::int64_t{i}}}), {})).id);
    auto any = [&] { return ids[rng() % ids.size()]; };
    for (int i = 0; i < 40; ++i) {
      ids.push_back(rng() % 2 ? eg.add(ENode(lang.unary, kNoAttributes, {any()})).id
                              : eg.add(ENode(lang.binary, kNoAttributes, {any(), any()})).id);
    }
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(eg.merge(any(), any()).ok());
    eg.rebuild();
    ClassReach reach, searched(/*max_bitset_bytes=*/0);
    reach.rank(eg);
    searched.rank(eg);
    const std::vector<Id> classes = eg.class_ids();
    for (Id from : classes) {
      std::set<Id> seen{from};
      std::vector<Id> stack{from};
      while (!stack.empty()) {
        const Id c = stack.back();
        stack.pop_back();
        for (const ENode& n : eg.nodes(c)) {
          for (Id child : n.children) {
            if (seen.insert(eg.find(child)).second) stack.push_back(eg.find(child));
          }
        }
      }
      for (Id to : classes) {
        EXPECT_EQ(reach.reaches(from, to), seen.count(to) > 0) << "round " << round;
        EXPECT_EQ(searched.reaches(from, to), seen.count(to) > 0) << "round " << round;
      }
    }
  }
}

}  // namespace
}  // namespace saturn

// Engine tests: congruence closure, a randomized check against a naive
// closure, rollback, budgets and serialization.
#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>

#include "saturn/egraph/egraph.h"
#include "saturn/egraph/serialize.h"
#include "saturn/egraph/term.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "saturn/rules/math/math_language.h"
#include "saturn/rules/parser.h"
#include "saturn/rules/runner.h"
#include "saturn/tests/math_setup.h"

namespace saturn {
namespace {

// Leaves a..e, unary f, binary g and ternary h.
class TinyLanguage : public Language {
 public:
  TinyLanguage() : Language("tiny") {
    for (const char* leaf : {"a", "b", "c", "d", "e"}) leaves.push_back(add_operator(leaf, 0));
    f = add_operator("f", 1);
    g = add_operator("g", 2);
    h = add_operator("h", 3);
  }
  std::vector<Symbol> leaves;
  Symbol f, g, h;
};

TEST(EGraph, CongruenceAfterMerge) {
  TinyLanguage lang;
  EGraph eg(lang);
  Id a = *add_term(eg, "a");
  Id b = *add_term(eg, "b");
  Id fa = *add_term(eg, "(f a)");
  Id fb = *add_term(eg, "(f b)");
  Id gfa = *add_term(eg, "(g (f a) c)");
  Id gfb = *add_term(eg, "(g (f b) c)");
  EXPECT_NE(eg.find(fa), eg.find(fb));
  ASSERT_TRUE(eg.merge(a, b).ok());
  eg.rebuild();
  EXPECT_EQ(eg.find(fa), eg.find(fb));
  EXPECT_EQ(eg.find(gfa), eg.find(gfb));
  EXPECT_TRUE(eg.check_invariants().ok());
  EXPECT_EQ(eg.num_nodes(), 5u);  // a=b, f(a)=f(b), c, g(..)
}

TEST(EGraph, AttributesDistinguishNodes) {
  TinyLanguage lang;
  EGraph eg(lang);
  Id a = *add_term(eg, "a");
  AttrId s1 = eg.attrs().intern(Attributes{{"stride", std::int64_t{1}}});
  AttrId s2 = eg.attrs().intern(Attributes{{"stride", std::int64_t{2}}});
  Id x = eg.add(ENode(lang.f, s1, {a})).id;
  Id y = eg.add(ENode(lang.f, s2, {a})).id;
  EXPECT_NE(x, y);
  EXPECT_EQ(eg.add(ENode(lang.f, s1, {a})).id, x);
}

// A naive congruence closure over a fixed set of terms, for comparison.
struct NaiveClosure {
  std::vector<ENode> terms;  // children index earlier terms
  std::vector<std::size_t> parent;
  std::size_t find(std::size_t x) {
    while (parent[x] != x) x = parent[x];
    return x;
  }
  void close() {
    bool changed = true;
    while (changed) {
      changed = false;
      for (std::size_t i = 0; i < terms.size(); ++i) {
        for (std::size_t j = i + 1; j < terms.size(); ++j) {
          if (find(i) == find(j)) continue;
          const ENode& x = terms[i];
          const ENode& y = terms[j];
          if (x.op != y.op || x.children.size() != y.children.size()) continue;
          bool same = true;
          for (std::size_t k = 0; k < x.children.size(); ++k) {
            same &= find(x.children[k].index()) == find(y.children[k].index());
          }
          if (same) {
            parent[find(i)] = find(j);
            changed = true;
          }
        }
      }
    }
  }
};

TEST(EGraph, AttributesWithNanInternOnce) {
  // A NaN a model gives (a scale, a constant) interns as one set, as any
  // other value does.
  AttrTable table;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  AttrId a = table.intern(Attributes{{"value", nan}});
  AttrId b = table.intern(Attributes{{"value", nan}});
  AttrId c = table.intern(Attributes{{"value", 0.5}});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(table.find(Attributes{{"value", nan}}), a);
}

TEST(EGraph, RandomAgainstNaiveClosure) {
  TinyLanguage lang;
  for (int seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    EGraph eg(lang);
    NaiveClosure ref;
    std::vector<Id> ids;  // e-graph id of each reference term
    // Adds a random term over earlier ones: in a class of its own, or (with
    // `into`, an earlier term) in that term's class.
    auto add_random = [&](std::optional<std::size_t> into) {
      ENode node;
      // Ternary nodes often share their first two children: node lists are
      // sorted by those first, and in full only on such ties.
      std::uniform_int_distribution<int> kind(0, 3);
      int k = ref.terms.size() < 3 ? 0 : kind(rng);
      std::uniform_int_distribution<std::size_t> pick(0,
                                                      ref.terms.empty() ? 0 : ref.terms.size() - 1);
      if (k == 0) {
        node = ENode(lang.leaves[rng() % lang.leaves.size()], kNoAttributes);
      } else if (k == 1) {
        node = ENode(lang.f, kNoAttributes, {Id(pick(rng))});
      } else if (k == 2) {
        node = ENode(lang.g, kNoAttributes, {Id(pick(rng)), Id(pick(rng))});
      } else {
        const Id x(pick(rng) % 3);
        node = ENode(lang.h, kNoAttributes, {x, x, Id(pick(rng))});
      }
      ENode in_graph = node;
      for (Id& c : in_graph.children) c = ids[c.index()];
      ids.push_back(into ? eg.add_into(in_graph, ids[*into]).id : eg.add(in_graph).id);
      ref.terms.push_back(node);
      ref.parent.push_back(ref.parent.size());
      if (into) ref.parent[ref.find(ref.terms.size() - 1)] = ref.find(*into);
    };
    for (int step = 0; step < 150; ++step) {
      int action = rng() % 12;
      if (action < 7 || ref.terms.size() < 2) {
        add_random(std::nullopt);
      } else if (action < 9) {
        add_random(rng() % ref.terms.size());
      } else if (action < 11) {
        std::size_t i = rng() % ref.terms.size(), j = rng() % ref.terms.size();
        ASSERT_TRUE(eg.merge(ids[i], ids[j]).ok());
        ref.parent[ref.find(i)] = ref.find(j);
      } else {
        eg.rebuild();
      }
    }
    eg.rebuild();
    ref.close();
    ASSERT_TRUE(eg.check_invariants().ok()) << eg.check_invariants();
    for (std::size_t i = 0; i < ref.terms.size(); ++i) {
      for (std::size_t j = 0; j < ref.terms.size(); ++j) {
        ASSERT_EQ(ref.find(i) == ref.find(j), eg.find(ids[i]) == eg.find(ids[j]))
            << "seed " << seed << " terms " << i << " " << j;
      }
    }
  }
}

// What e-matching reads besides the classes: the classes listed under each
// operator, and the operator filter of each class.
std::string operator_index(const EGraph& eg) {
  std::string out;
  for (std::uint32_t op = 0; op < eg.language().num_operators(); ++op) {
    std::span<const Id> listed = eg.classes_with_op(Symbol(op));
    std::vector<Id> with(listed.begin(), listed.end());
    std::sort(with.begin(), with.end());
    out += fmt::format("{}:", op);
    for (Id c : with) out += fmt::format(" {}", c.value);
    out += " |";
    for (Id c : eg.class_ids()) {
      if (eg.may_have_op(c, Symbol(op))) out += fmt::format(" {}", c.value);
    }
    out += '\n';
  }
  return out;
}

// A node added into a class ends where add-then-merge puts it, at less cost.
TEST(EGraph, AddIntoEqualsAddThenMerge) {
  TinyLanguage lang;
  EGraph joined(lang), merged(lang);
  for (EGraph* eg : {&joined, &merged}) {
    ASSERT_TRUE(add_term(*eg, "(g (f a) b)").ok());
    ASSERT_TRUE(add_term(*eg, "(f c)").ok());
    eg->rebuild();
  }
  const Id a = *add_term(joined, "a"), b = *add_term(joined, "b"), c = *add_term(joined, "c");
  const std::size_t added = joined.nodes_added();
  const std::size_t ids = joined.num_ids();
  // (f b) is new: it joins a's class; (f c) exists: its class merges with b's.
  AddResult r = joined.add_into(ENode(lang.f, kNoAttributes, {b}), a);
  EXPECT_EQ(r.status, AddStatus::kAdded);
  EXPECT_EQ(r.id, joined.find(a));
  EXPECT_EQ(joined.add_into(ENode(lang.f, kNoAttributes, {c}), b).status, AddStatus::kExisting);
  EXPECT_EQ(joined.nodes_added(), added + 1);
  EXPECT_EQ(joined.num_ids(), ids);  // no class was made for (f b)
  joined.rebuild();

  ASSERT_TRUE(merged.merge(*add_term(merged, "a"), *add_term(merged, "(f b)")).ok());
  ASSERT_TRUE(merged.merge(*add_term(merged, "b"), *add_term(merged, "(f c)")).ok());
  merged.rebuild();
  EXPECT_EQ(joined.dump(), merged.dump());
  EXPECT_EQ(operator_index(joined), operator_index(merged));
  EXPECT_EQ(joined.nodes_added(), merged.nodes_added());
  EXPECT_LT(joined.memory_bytes(), merged.memory_bytes());
  EXPECT_TRUE(joined.check_invariants().ok()) << joined.check_invariants();
}

// Nodes that join a class are appended, and rebuild sorts them: by operator
// and the first two children, then in full for nodes with more children.
TEST(EGraph, RebuildSortsNodesJoiningAClass) {
  TinyLanguage lang;
  EGraph eg(lang);
  std::vector<Id> leaf;
  for (const char* name : {"a", "b", "c", "d", "e"}) leaf.push_back(*add_term(eg, name));
  eg.rebuild();
  const Id a = leaf[0], b = leaf[1];
  std::vector<ENode> joining;
  for (std::size_t i = leaf.size(); i-- > 2;) {  // c, d, e
    joining.push_back(ENode(lang.h, kNoAttributes, {b, b, leaf[i]}));
    joining.push_back(ENode(lang.h, kNoAttributes, {leaf[i], b, b}));
    joining.push_back(ENode(lang.g, kNoAttributes, {b, leaf[i]}));
    joining.push_back(ENode(lang.f, kNoAttributes, {leaf[i]}));
  }
  for (const ENode& n : joining) ASSERT_EQ(eg.add_into(n, a).status, AddStatus::kAdded);
  eg.rebuild();
  std::span<const ENode> nodes = eg.nodes(eg.find(a));
  ASSERT_EQ(nodes.size(), joining.size() + 1);
  EXPECT_TRUE(std::is_sorted(nodes.begin(), nodes.end()));
  EXPECT_TRUE(eg.check_invariants().ok()) << eg.check_invariants();
}

// An analysis that refuses every g node.
class NoG final : public TypedAnalysis<int> {
 public:
  explicit NoG(Symbol g) : g_(g) {}
  std::optional<int> make_data(const EGraph&, const ENode& node) override {
    return node.op == g_ ? std::nullopt : std::optional<int>(0);
  }
  JoinResult join(int&, const int&) override { return {}; }

 private:
  Symbol g_;
};

TEST(EGraph, AddIntoRefusalsChangeNothing) {
  TinyLanguage lang;
  NoG analysis(lang.g);
  EGraph eg(lang, &analysis);
  const Id a = *add_term(eg, "a"), b = *add_term(eg, "b");
  eg.rebuild();
  const std::string before = eg.dump();
  const std::size_t bytes = eg.memory_bytes();
  EXPECT_EQ(eg.add_into(ENode(lang.g, kNoAttributes, {a, b}), a).status, AddStatus::kRejected);
  eg.set_budget(Budget{.max_nodes = 2});
  EXPECT_EQ(eg.add_into(ENode(lang.f, kNoAttributes, {a}), b).status, AddStatus::kNodeLimit);
  eg.set_budget(Budget{.max_bytes = bytes + 1});
  EXPECT_EQ(eg.add_into(ENode(lang.f, kNoAttributes, {a}), b).status, AddStatus::kByteLimit);
  EXPECT_TRUE(eg.is_clean());
  EXPECT_EQ(eg.dump(), before);
  EXPECT_EQ(eg.memory_bytes(), bytes);
  EXPECT_EQ(eg.nodes_added(), 2u);
  eg.set_budget(Budget{});
  EXPECT_EQ(eg.add_into(ENode(lang.f, kNoAttributes, {a}), b).status, AddStatus::kAdded);
}

// An analysis of two sorts: g nodes are of sort 1, the rest take their first
// child's sort (leaves: 0). Classes of different sorts never merge.
class Sorts final : public TypedAnalysis<int> {
 public:
  explicit Sorts(Symbol g) : g_(g) {}
  std::optional<int> make_data(const EGraph& eg, const ENode& node) override {
    if (node.op == g_) return 1;
    return node.children.empty() ? 0 : data(eg.find(node.children[0]));
  }
  JoinResult join(int&, const int&) override { return {}; }
  bool contradict(const int& a, const int& b) const override { return a != b; }

 private:
  Symbol g_;
};

TEST(EGraph, ConflictingClassesNeverMerge) {
  TinyLanguage lang;
  Sorts sorts(lang.g);
  EGraph eg(lang, &sorts);
  const Id a = *add_term(eg, "a"), fb = *add_term(eg, "(f b)"), gab = *add_term(eg, "(g a b)");
  eg.rebuild();
  const std::string before = eg.dump();
  EXPECT_EQ(eg.merge(a, gab).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(eg.add_into(ENode(lang.g, kNoAttributes, {a, a}), a).status, AddStatus::kConflict);
  // A node already present in a class of the other sort: its class is not merged.
  EXPECT_EQ(eg.add_into(ENode(lang.g, kNoAttributes, {a, *add_term(eg, "b")}), fb).status,
            AddStatus::kConflict);
  eg.rebuild();
  EXPECT_EQ(eg.dump(), before);
  ASSERT_TRUE(eg.merge(a, fb).ok());
  eg.rebuild();
  EXPECT_TRUE(eg.check_invariants().ok());

  // The runner counts the refusals per rule; a multi-pattern rule with one
  // conflicting result merges none of its results.
  ConditionRegistry conditions;
  absl::StatusOr<RuleSet> rules = parse_rules(
      "rule to-g: (f ?x) => (g ?x ?x)\n"
      "rule pair: (f ?x), (h ?x ?x ?x) => (h ?x ?x ?x), (g ?x ?x)\n"
      "rule to-h: (f ?x) => (h ?x ?x ?x)\n",
      "sorts.rules", lang, conditions);
  ASSERT_TRUE(rules.ok()) << rules.status();
  Sorts grown_sorts(lang.g);
  EGraph grown(lang, &grown_sorts);
  ASSERT_TRUE(add_term(grown, "(f c)").ok());
  RunReport r = Runner().with_iteration_limit(5).run(grown, *rules);
  EXPECT_GT(r.rules[0].conflicts, 0u);
  EXPECT_EQ(r.rules[0].applied, 0u);
  EXPECT_GT(r.rules[1].conflicts, 0u);
  EXPECT_EQ(r.rules[1].applied, 0u);
  EXPECT_GT(r.rules[2].applied, 0u);
  EXPECT_TRUE(grown.check_invariants().ok());
  const Id fc = *add_term(grown, "(f c)");
  const Id hc = *add_term(grown, "(h c c c)");
  EXPECT_EQ(grown.find(fc), grown.find(hc));  // to-h merged them, pair did not add a g
  for (const ENode& n : grown.nodes(grown.find(fc))) EXPECT_NE(n.op, lang.g);
}

// Grows a math e-graph with the math rules.
class MathFixture : public ::testing::Test, protected MathSetup {};

TEST_F(MathFixture, RollbackRestoresIdenticalState) {
  ASSERT_TRUE(add_term(eg, "(d x (+ 1 (* 2 x)))").ok());
  ASSERT_TRUE(add_term(eg, "(+ (* y (+ x y)) (- (+ x 2) (+ x x)))").ok());
  Runner().with_iteration_limit(2).run(eg, rules);
  const std::string before = eg.dump();
  const std::string index_before = operator_index(eg);
  const std::size_t nodes = eg.num_nodes(), bytes = eg.memory_bytes();
  // A state keeps its version through a rollback; new states get new ones.
  const std::uint64_t version_before = eg.version();

  eg.mark();
  Runner().with_iteration_limit(3).run(eg, rules);
  const std::string middle = eg.dump();
  const std::uint64_t version_middle = eg.version();
  ASSERT_NE(before, middle);
  EXPECT_NE(version_middle, version_before);
  eg.mark();  // nested
  Runner().with_iteration_limit(2).run(eg, rules);
  const std::uint64_t version_inner = eg.version();
  eg.rollback();
  EXPECT_EQ(eg.dump(), middle);
  EXPECT_EQ(eg.version(), version_middle);
  EXPECT_TRUE(eg.check_invariants().ok());
  eg.rollback();
  EXPECT_EQ(eg.dump(), before);
  EXPECT_EQ(eg.version(), version_before);
  eg.mark();
  ASSERT_TRUE(add_term(eg, "(+ q r)").ok());
  eg.rebuild();
  for (std::uint64_t seen : {version_before, version_middle, version_inner})
    EXPECT_NE(eg.version(), seen);
  eg.rollback();
  EXPECT_EQ(eg.version(), version_before);
  EXPECT_EQ(operator_index(eg), index_before);
  EXPECT_EQ(eg.num_nodes(), nodes);
  EXPECT_EQ(eg.memory_bytes(), bytes);
  EXPECT_EQ(eg.trail_size(), 0u);
  EXPECT_TRUE(eg.check_invariants().ok());

  // The e-graph keeps working after a rollback, and a second run from the
  // same state gives the same result.
  eg.mark();
  Runner().with_iteration_limit(3).run(eg, rules);
  EXPECT_EQ(eg.dump(), middle);
  eg.release();
  EXPECT_EQ(eg.dump(), middle);
}

TEST_F(MathFixture, RollbackCostFollowsChangeNotSize) {
  ASSERT_TRUE(add_term(eg, "(i (* (cos x) x) x)").ok());
  Runner().with_iteration_limit(5).run(eg, rules);
  eg.mark();
  ASSERT_TRUE(add_term(eg, "(+ q r)").ok());
  eg.rebuild();
  // Two new nodes and one parent link on each old child: a handful of entries.
  EXPECT_LE(eg.trail_size(), 8u);
  eg.rollback();
}

TEST_F(MathFixture, NodeBudgetNeverExceeded) {
  for (std::size_t limit : {50u, 333u, 1000u, 2500u}) {
    MathLanguage l;
    ConstantFolding f(l);
    EGraph g(l, &f);
    ASSERT_TRUE(add_term(g, "(i (* (cos x) x) x)").ok());
    RunReport r = Runner().with_iteration_limit(50).with_node_limit(limit).run(g, rules);
    EXPECT_LE(g.num_nodes(), limit);
    EXPECT_EQ(r.stop_reason, StopReason::kNodeLimit) << limit;
    for (const auto& it : r.iterations) EXPECT_LE(it.nodes, limit);
  }
}

TEST_F(MathFixture, ByteBudgetNeverExceeded) {
  ASSERT_TRUE(add_term(eg, "(i (* (cos x) x) x)").ok());
  const std::size_t limit = 200'000;
  RunReport r = Runner().with_iteration_limit(50).with_byte_limit(limit).run(eg, rules);
  EXPECT_LE(eg.memory_bytes(), limit);
  EXPECT_EQ(r.stop_reason, StopReason::kByteLimit);
  EXPECT_GT(eg.memory_bytes(), limit / 2);
}

TEST_F(MathFixture, MultiPatternBudgetNeverExceeded) {
  auto multi = parse_rules("rule sin-cos: (sin ?x), (cos ?x) => (sin (+ ?x 0)), (cos (* ?x 1))\n",
                           "multi.rules", lang, conditions);
  ASSERT_TRUE(multi.ok()) << multi.status();
  RuleSet all = *multi;
  all.append(rules);
  for (std::size_t limit : {60u, 777u, 3000u}) {
    MathLanguage l;
    ConstantFolding f(l);
    EGraph g(l, &f);
    ASSERT_TRUE(add_term(g, "(i (* (cos x) x) x)").ok());
    ASSERT_TRUE(add_term(g, "(+ (sin x) (sin y))").ok());
    RunReport r = Runner().with_iteration_limit(100).with_node_limit(limit).run(g, all);
    EXPECT_LE(g.num_nodes(), limit);
    EXPECT_EQ(r.stop_reason, StopReason::kNodeLimit);
    EXPECT_GT(r.rules[0].applied, 0u) << limit;
  }
}

TEST_F(MathFixture, SerializeRoundTrip) {
  Id root = *add_term(eg, "(d x (+ 1 (* 2 x)))");
  Runner().with_iteration_limit(3).run(eg, rules);
  std::vector<Id> roots{root};
  SerializedEGraph s = serialize(eg, roots, [](const ENode&) { return 1.0; });
  auto parsed = parse_serialized(to_json(s), "roundtrip.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->nodes.size(), eg.num_nodes());
  EXPECT_EQ(parsed->class_names.size(), eg.num_classes());

  ConstantFolding f2(lang);
  EGraph copy(lang, &f2);
  auto copied_roots = add_serialized(copy, *parsed, "roundtrip.json");
  ASSERT_TRUE(copied_roots.ok()) << copied_roots.status();
  EXPECT_EQ(copy.num_classes(), eg.num_classes());
  EXPECT_EQ(copy.num_nodes(), eg.num_nodes());
  std::string dot = to_dot(copy, *copied_roots);
  EXPECT_NE(dot.find("subgraph cluster_"), std::string::npos);
}

TEST(Serialize, ReadsEveryExtractionGymFile) {
  const std::filesystem::path dir = std::filesystem::path(SATURN_TEST_DATA) / "extraction-gym";
  ASSERT_TRUE(std::filesystem::exists(dir)) << dir;
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    auto s = read_serialized(entry.path().string());
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_FALSE(s->nodes.empty());
    EXPECT_FALSE(s->roots.empty()) << entry.path();
    for (const auto& n : s->nodes) {
      for (std::uint32_t c : n.children) ASSERT_LT(c, s->class_names.size());
    }
    ++files;
  }
  EXPECT_EQ(files, 33u);
  auto bert = read_serialized((dir / "tensat/bert.json").string());
  EXPECT_EQ(bert->nodes.size(), 20244u);
  EXPECT_EQ(bert->class_names.size(), 7315u);
}

TEST(Serialize, ImportsEggMathEGraph) {
  MathLanguage lang;
  EGraph eg(lang);
  auto s =
      read_serialized(std::string(SATURN_TEST_DATA) + "/extraction-gym/egg/math_powers.json");
  ASSERT_TRUE(s.ok());
  auto roots = add_serialized(eg, *s, "math_powers.json");
  ASSERT_TRUE(roots.ok()) << roots.status();
  EXPECT_EQ(eg.num_classes(), s->class_names.size());
  EXPECT_TRUE(eg.check_invariants().ok());
}

TEST(Serialize, RejectsMalformedJson) {
  auto bad = parse_serialized("{\"nodes\": {\"a\": {\"op\": 3}}}", "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("bad.json: node \"a\""), std::string::npos);
  EXPECT_FALSE(parse_serialized("not json", "x.json").ok());
  auto child = parse_serialized(
      "{\"nodes\": {\"a\": {\"op\": \"f\", \"eclass\": \"1\", \"children\": [\"zz\"]}}}", "c.json");
  ASSERT_FALSE(child.ok());
  EXPECT_NE(std::string(child.status().message()).find("unknown child"), std::string::npos);
  // Found by fuzzing: a negative cost on a cycle left extraction no minimum.
  auto negative = parse_serialized(
      "{\"nodes\": {\"a\": {\"op\": \"f\", \"eclass\": \"1\", \"children\": [\"a\"], "
      "\"cost\": -4}}}",
      "n.json");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(std::string(negative.status().message()).find("must be a non-negative number"),
            std::string::npos);
}

}  // namespace
}  // namespace saturn

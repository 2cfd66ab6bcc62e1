// The engine at scale: one math e-graph grown from egg's seven benchmark
// terms with every math rule every iteration (no pruning, so it keeps
// growing; each rule's matches capped by what is left to add) to 10^4, 10^5
// and 10^6 e-nodes, each size on a fresh e-graph.
// For each it prints:
//   - bytes per e-node by memory_bytes() (exact content, no container slack)
//     and the process's peak RSS so far;
//   - the time per e-node added and the time spent in rebuild;
//   - checkpoints: the e-graph is grown to 90% of the size, marked, grown
//     the last 10%, and rolled back. Rollback undoes only what changed, so
//     it should take a fraction of the time that adding those nodes took.
//
//   build/bench/engine_scale [--sizes 10000,100000,1000000]
#include <sys/resource.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "CLI/CLI.hpp"
#include "saturn/base/cli.h"
#include "saturn/base/status.h"
#include "saturn/base/stopwatch.h"
#include "saturn/egraph/egraph.h"
#include "saturn/egraph/term.h"
#include "fmt/format.h"
#include "saturn/rules/math/math_language.h"
#include "saturn/rules/parser.h"
#include "saturn/rules/runner.h"

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Every rule every iteration, each finding at most a share of the e-nodes
// still to add: enough to reach the size, without holding the tens of
// millions of matches a large e-graph has (they would dwarf the e-graph).
class GrowthScheduler final : public saturn::Scheduler {
 public:
  GrowthScheduler(const saturn::EGraph& egraph, std::size_t target)
      : egraph_(egraph), target_(target) {}
  void reset(std::size_t) override {}
  bool should_search(std::size_t, std::size_t) override { return true; }
  bool accept(std::size_t, std::size_t, std::size_t) override { return true; }
  std::size_t search_limit(std::size_t) const override {
    const std::size_t have = egraph_.num_nodes();
    return 1000 + (target_ > have ? (target_ - have) / 4 : 0);
  }
  bool can_stop(std::size_t) override { return true; }

 private:
  const saturn::EGraph& egraph_;
  std::size_t target_;
};

struct Grown {
  saturn::RunReport report;
  double seconds = 0;
  std::size_t added = 0;  // e-nodes created (also those later merged away)
};

// Grows `egraph` with every rule every iteration until it holds `nodes`
// e-nodes: the node limit stops a run there, and the run is repeated while
// congruences merged away more than 1% of them.
Grown grow(saturn::EGraph& egraph, const saturn::RuleSet& rules, std::size_t nodes) {
  const std::size_t added_before = egraph.nodes_added();
  const saturn::Stopwatch clock;
  Grown g;
  while (egraph.num_nodes() < nodes / 100 * 99) {
    const std::size_t had = egraph.num_nodes();
    saturn::RunReport r = saturn::Runner()
                              .with_iteration_limit(100)
                              .with_node_limit(nodes)
                              .with_time_limit(std::chrono::seconds(600))
                              .with_scheduler(std::make_unique<GrowthScheduler>(egraph, nodes))
                              .run(egraph, rules);
    g.report.rebuild_seconds += r.rebuild_seconds;
    if (egraph.num_nodes() <= had) break;
  }
  g.seconds = clock.seconds();
  g.added = egraph.nodes_added() - added_before;
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes = {10'000, 100'000, 1'000'000};
  CLI::App app{"the e-graph engine grown to a million e-nodes", "engine_scale"};
  app.add_option("--sizes", sizes, "e-node counts to grow to")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{100}, std::size_t{100'000'000}));
  if (std::optional<int> exit = saturn::parse_command_line(app, argc, argv)) return *exit;
  saturn::MathLanguage lang;
  saturn::ConditionRegistry conditions = saturn::math_conditions(lang);
  auto rules = saturn::load_math_rules(lang, conditions);
  if (!rules.ok()) {
    fmt::print(stderr, "{}\n", saturn::message(rules.status()));
    return 1;
  }
  fmt::print("{:>10} {:>10} {:>12} {:>10} {:>12} {:>10} {:>12} {:>12} {:>9}\n", "e-nodes",
             "e-classes", "bytes/e-node", "RSS MiB", "ns/e-node", "rebuild s", "last 10% s",
             "rollback s", "rollback");
  for (std::size_t size : sizes) {
    saturn::ConstantFolding folding(lang);
    saturn::EGraph egraph(lang, &folding);
    if (absl::Status s = saturn::add_egg_bench_terms(egraph); !s.ok()) {
      fmt::print(stderr, "{}\n", saturn::message(s));
      return 1;
    }
    const std::size_t nine_tenths = size / 10 * 9;
    const Grown first = grow(egraph, *rules, nine_tenths);
    egraph.mark();
    const std::size_t before = egraph.num_nodes();
    const Grown last = grow(egraph, *rules, size);
    const std::size_t nodes = egraph.num_nodes(), classes = egraph.num_classes();
    const double bytes_per_node = static_cast<double>(egraph.memory_bytes()) / nodes;
    const double rss = peak_rss_mib();
    const saturn::Stopwatch clock;
    egraph.rollback();
    const double rollback = clock.seconds();
    if (egraph.num_nodes() != before) {
      fmt::print(stderr, "engine_scale: rollback left {} e-nodes, not {}\n", egraph.num_nodes(),
                 before);
      return 1;
    }
    const double seconds = first.seconds + last.seconds;
    const double rebuild = first.report.rebuild_seconds + last.report.rebuild_seconds;
    fmt::print(
        "{:>10} {:>10} {:>12.1f} {:>10.1f} {:>12.1f} {:>10.3f} {:>12.4f} {:>12.4f} {:>8.1f}%\n",
        nodes, classes, bytes_per_node, rss,
        1e9 * seconds / static_cast<double>(first.added + last.added), rebuild, last.seconds,
        rollback, last.seconds > 0 ? 100 * rollback / last.seconds : 0.0);
  }
  fmt::print(
      "bytes/e-node: memory_bytes() / e-nodes; RSS: the process's peak so far; ns/e-node: "
      "growth time per e-node added; rollback: of the last 10%, as a share of adding it\n");
  return 0;
}

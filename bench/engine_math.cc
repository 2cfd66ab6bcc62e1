// The engine benchmark: egg's math_ematching_bench workload. Starts from its
// seven terms, runs the full math rule set for 7 iterations (backoff
// scheduler, no effective node limit) and prints e-nodes, e-classes, phase
// times, e-nodes added per second and peak RSS.
//
//   build/bench/engine_math [--iterations N]
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

#include "egraph/egraph.h"
#include "egraph/term.h"
#include "fmt/format.h"
#include "rules/math/math_language.h"
#include "rules/parser.h"
#include "rules/runner.h"

namespace {

constexpr const char* kTerms[] = {
    "(i (ln x) x)",
    "(i (+ x (cos x)) x)",
    "(i (* (cos x) x) x)",
    "(d x (+ 1 (* 2 x)))",
    "(d x (- (pow x 3) (* 7 (pow x 2))))",
    "(+ (* y (+ x y)) (- (+ x 2) (+ x x)))",
    "(/ 1 (- (/ (+ 1 (sqrt five)) 2) (/ (- 1 (sqrt five)) 2)))",
};

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t iterations = 7;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--iterations") == 0 && a + 1 < argc) {
      iterations = std::strtoul(argv[++a], nullptr, 10);
    } else {
      fmt::print(stderr, "usage: engine_math [--iterations N]\n");
      return 2;
    }
  }
  saturn::MathLanguage lang;
  saturn::ConstantFolding folding(lang);
  saturn::EGraph egraph(lang, &folding);
  saturn::ConditionRegistry conditions = saturn::math_conditions(lang);
  auto rules = saturn::load_rules(saturn::math_rules_path(), lang, conditions);
  if (!rules.ok()) {
    fmt::print(stderr, "{}\n", rules.status().message().data());
    return 1;
  }
  std::size_t ids_before = 0;
  for (const char* term : kTerms) {
    if (auto id = saturn::add_term(egraph, term); !id.ok()) {
      fmt::print(stderr, "{}\n", id.status().message().data());
      return 1;
    }
  }
  egraph.rebuild();
  ids_before = egraph.num_ids();
  saturn::RunReport report = saturn::Runner()
                                 .with_iteration_limit(iterations)
                                 .with_node_limit(saturn::Budget::kUnlimited)
                                 .with_time_limit(std::chrono::seconds(600))
                                 .run(egraph, *rules);

  fmt::print("engine_math: {} rules, {} start terms\n", rules->size(), std::size(kTerms));
  fmt::print("{:>4} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}\n", "iter", "matches", "applied",
             "e-nodes", "e-classes", "search s", "apply s", "rebuild s");
  for (std::size_t i = 0; i < report.iterations.size(); ++i) {
    const auto& it = report.iterations[i];
    fmt::print("{:>4} {:>10} {:>10} {:>10} {:>10} {:>9.4f} {:>9.4f} {:>9.4f}\n", i, it.matches,
               it.applied, it.nodes, it.classes, it.search_seconds, it.apply_seconds,
               it.rebuild_seconds);
  }
  const double total = report.total_seconds();
  // Every e-node ever created made a new id, so ids count the nodes added
  // (some merge away later as duplicates).
  const double added = static_cast<double>(egraph.num_ids() - ids_before);
  fmt::print("stop reason:        {}\n", saturn::to_string(report.stop_reason));
  fmt::print("e-nodes:            {}\n", egraph.num_nodes());
  fmt::print("e-nodes added:      {:.0f}\n", added);
  fmt::print("e-classes:          {}\n", egraph.num_classes());
  fmt::print("memory_bytes:       {}\n", egraph.memory_bytes());
  fmt::print("search seconds:     {:.4f}\n", report.search_seconds);
  fmt::print("apply seconds:      {:.4f}\n", report.apply_seconds);
  fmt::print("rebuild seconds:    {:.4f}\n", report.rebuild_seconds);
  fmt::print("total seconds:      {:.4f}\n", total);
  fmt::print("e-nodes added/s:    {:.0f}\n", total > 0 ? added / total : 0.0);
  fmt::print("peak RSS MiB:       {:.1f}\n", peak_rss_mib());
  return 0;
}

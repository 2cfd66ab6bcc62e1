// The engine benchmark: egg's math_ematching_bench workload. Starts from its
// seven terms, runs the full math rule set for 7 iterations (backoff
// scheduler, no effective node limit) and prints e-nodes, e-classes, phase
// times, e-nodes added per second and peak RSS.
//
// The workload takes milliseconds, so it runs --repeat times (default 25),
// each time on a fresh e-graph in the same process; the first run also pays
// for paging in code and warming the allocator. The table is the last run's;
// the rate is reported per run, with the median and the first (cold) run.
//
// Then it runs --repeat times more with the heap kept: glibc normally hands
// a freed e-graph's memory back to the kernel, and the next run pays again
// for page faults on fresh pages (about a tenth of a run's time here). With
// mallopt telling it to keep freed memory, as a long-lived process's heap
// would be, that series measures the engine alone. Both medians are printed.
//
//   build/bench/engine_math [--iterations N] [--repeat N] [--rules]
//
// --rules adds each rule's matches and applications (summed over the
// iterations of the last run).
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "CLI/CLI.hpp"
#include "base/cli.h"
#include "base/status.h"
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

struct Run {
  saturn::RunReport report;
  std::size_t nodes = 0, classes = 0, memory = 0;
  double added = 0;
};

// One run on a fresh e-graph.
absl::StatusOr<Run> run_once(const saturn::MathLanguage& lang, const saturn::RuleSet& rules,
                             std::size_t iterations) {
  saturn::ConstantFolding folding(lang);
  saturn::EGraph egraph(lang, &folding);
  for (const char* term : kTerms) {
    if (auto id = saturn::add_term(egraph, term); !id.ok()) return id.status();
  }
  egraph.rebuild();
  const std::size_t added_before = egraph.nodes_added();
  Run run;
  run.report = saturn::Runner()
                   .with_iteration_limit(iterations)
                   .with_node_limit(saturn::Budget::kUnlimited)
                   .with_time_limit(std::chrono::seconds(600))
                   .run(egraph, rules);
  run.nodes = egraph.num_nodes();
  run.classes = egraph.num_classes();
  run.memory = egraph.memory_bytes();
  // Every e-node created, also those that later merge away as duplicates.
  run.added = static_cast<double>(egraph.nodes_added() - added_before);
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t iterations = 7, repeat = 25;
  bool per_rule = false;
  CLI::App app{"egg's math_ematching_bench workload on saturn's engine", "engine_math"};
  app.add_option("--iterations", iterations, "rule iterations")->capture_default_str();
  app.add_option("--repeat", repeat, "runs to time")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_flag("--rules", per_rule, "also print the time per rule");
  if (std::optional<int> exit = saturn::parse_command_line(app, argc, argv)) return *exit;
  saturn::MathLanguage lang;
  saturn::ConditionRegistry conditions = saturn::math_conditions(lang);
  auto rules = saturn::load_rules(saturn::math_rules_path(), lang, conditions);
  if (!rules.ok()) {
    fmt::print(stderr, "{}\n", saturn::message(rules.status()));
    return 1;
  }
  Run last;
  // Runs the workload `repeat` times; the rates, e-nodes added per second.
  auto series = [&]() -> std::optional<std::vector<double>> {
    std::vector<double> rates;
    for (std::size_t r = 0; r < repeat; ++r) {
      absl::StatusOr<Run> run = run_once(lang, *rules, iterations);
      if (!run.ok()) {
        fmt::print(stderr, "{}\n", saturn::message(run.status()));
        return std::nullopt;
      }
      const double total = run->report.total_seconds();
      rates.push_back(total > 0 ? run->added / total : 0.0);
      last = std::move(*run);
    }
    return rates;
  };
  std::optional<std::vector<double>> rates = series();
  if (!rates) return 1;
  // glibc's largest mmap threshold; the trim threshold keeps the heap's top.
  constexpr int kKeep = 32 << 20;
  if (mallopt(M_MMAP_THRESHOLD, kKeep) != 1 || mallopt(M_TRIM_THRESHOLD, kKeep) != 1) {
    fmt::print(stderr, "engine_math: mallopt failed\n");
    return 1;
  }
  std::optional<std::vector<double>> kept = series();
  if (!kept) return 1;
  const saturn::RunReport& report = last.report;
  fmt::print("engine_math: {} rules, {} start terms\n", rules->size(), std::size(kTerms));
  fmt::print("{:>4} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}\n", "iter", "matches", "applied",
             "e-nodes", "e-classes", "search s", "apply s", "rebuild s");
  for (std::size_t i = 0; i < report.iterations.size(); ++i) {
    const auto& it = report.iterations[i];
    fmt::print("{:>4} {:>10} {:>10} {:>10} {:>10} {:>9.4f} {:>9.4f} {:>9.4f}\n", i, it.matches,
               it.applied, it.nodes, it.classes, it.search_seconds, it.apply_seconds,
               it.rebuild_seconds);
  }
  if (per_rule) {
    fmt::print("{:<24} {:>10} {:>10}\n", "rule", "matches", "applied");
    for (std::size_t r = 0; r < rules->size(); ++r) {
      fmt::print("{:<24} {:>10} {:>10}\n", (*rules)[r].name, report.rules[r].matches,
                 report.rules[r].applied);
    }
  }
  fmt::print("stop reason:        {}\n", saturn::to_string(report.stop_reason));
  fmt::print("e-nodes:            {}\n", last.nodes);
  fmt::print("e-nodes added:      {:.0f}\n", last.added);
  fmt::print("e-classes:          {}\n", last.classes);
  fmt::print("memory_bytes:       {}\n", last.memory);
  fmt::print("search seconds:     {:.4f}\n", report.search_seconds);
  fmt::print("apply seconds:      {:.4f}\n", report.apply_seconds);
  fmt::print("rebuild seconds:    {:.4f}\n", report.rebuild_seconds);
  fmt::print("total seconds:      {:.4f}\n", report.total_seconds());
  auto print_rates = [](const char* label, std::vector<double> rates) {
    std::string per_run;
    for (double r : rates) per_run += fmt::format(" {:.0f}", r);
    fmt::print("{} per run:{}\n", label, per_run);
    const double cold = rates.front();
    std::sort(rates.begin(), rates.end());
    fmt::print("{}: {:.0f} (median of {} runs; first run {:.0f})\n", label, rates[rates.size() / 2],
               rates.size(), cold);
  };
  print_rates("e-nodes added/s", *rates);
  print_rates("e-nodes added/s, heap kept", *kept);
  fmt::print("peak RSS MiB:       {:.1f}\n", peak_rss_mib());
  return 0;
}

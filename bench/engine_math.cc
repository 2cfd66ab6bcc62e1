// The engine benchmark on egg's math workload: its seven terms, the 36 rules
// of egg's tests/math.rs (rules/math/math.rules), 7 iterations. Prints
// e-nodes, e-classes, phase times, e-nodes added per second and peak RSS.
//
// Two series:
//   --egg      egg's math_ematching_bench exactly: every rule every iteration
//              (SimpleScheduler), constant folding that prunes a constant
//              class to its leaves (ConstantFold's modify), e-nodes counted
//              as egg counts them (the classes' node lists; EGraph::
//              num_visible_nodes), with egg's own counts beside saturn's.
//   (default)  the backoff scheduler (egg's default Runner) without pruning:
//              the series this benchmark reported before --egg.
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
//   build/bench/engine_math [--egg] [--iterations N] [--repeat N] [--rules]
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
#include "saturn/base/cli.h"
#include "saturn/base/status.h"
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

// egg's math_ematching_bench (egg f94c346, tests/math.rs and src/test.rs,
// measured by running it): node limit, the e-nodes before each of its 7
// iterations, and after the last, e-nodes, e-classes and hash-cons entries.
constexpr std::size_t kEggNodeLimit = 2'000'000;
constexpr std::size_t kEggNodesBefore[] = {35, 137, 321, 611, 1420, 3643, 10397};
constexpr std::size_t kEggNodes = 52'432, kEggClasses = 20'449, kEggMemo = 123'394;

struct Run {
  saturn::RunReport report;
  std::size_t nodes = 0, memo = 0, classes = 0, memory = 0;
  double added = 0;
};

// One run on a fresh e-graph.
absl::StatusOr<Run> run_once(const saturn::MathLanguage& lang, const saturn::RuleSet& rules,
                             std::size_t iterations, bool egg) {
  saturn::ConstantFolding folding(lang, /*prune=*/egg);
  saturn::EGraph egraph(lang, &folding);
  if (absl::Status s = saturn::add_egg_bench_terms(egraph); !s.ok()) return s;
  const std::size_t added_before = egraph.nodes_added();
  Run run;
  saturn::Runner runner;
  runner.with_iteration_limit(iterations)
      .with_node_limit(egg ? kEggNodeLimit : saturn::Budget::kUnlimited)
      .with_time_limit(std::chrono::seconds(600));
  if (egg) runner.with_scheduler(std::make_unique<saturn::SimpleScheduler>());
  run.report = runner.run(egraph, rules);
  run.nodes = egg ? egraph.num_visible_nodes() : egraph.num_nodes();
  run.memo = egraph.num_nodes();
  run.classes = egraph.num_classes();
  run.memory = egraph.memory_bytes();
  // Every e-node created, also those that later merge away as duplicates.
  run.added = static_cast<double>(egraph.nodes_added() - added_before);
  return run;
}

struct Args {
  std::size_t iterations = 7, repeat = 25;
  bool per_rule = false, egg = false;
};

// The benchmark's options; the exit code when the program is done (--help,
// a usage error).
std::optional<int> parse_args(int argc, char** argv, Args& a) {
  CLI::App app{"egg's math workload on saturn's engine", "engine_math"};
  app.add_flag("--egg", a.egg,
               "egg's math_ematching_bench exactly: SimpleScheduler, pruning constant folding, "
               "egg's counting (--repeat 21 as its figures)");
  app.add_option("--iterations", a.iterations, "rule iterations")->capture_default_str();
  app.add_option("--repeat", a.repeat, "runs to time")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_flag("--rules", a.per_rule, "also print each rule's matches and applications");
  return saturn::parse_command_line(app, argc, argv);
}

// A series of runs: e-nodes added per second, and seconds, per run.
struct Series {
  std::vector<double> rates, seconds;
};

// Runs the workload `repeat` times into `series`; `last` is the last run.
// False (the error printed) when a run fails.
bool run_series(const saturn::MathLanguage& lang, const saturn::RuleSet& rules, const Args& args,
                Series& series, Run& last) {
  for (std::size_t r = 0; r < args.repeat; ++r) {
    absl::StatusOr<Run> run = run_once(lang, rules, args.iterations, args.egg);
    if (!run.ok()) {
      fmt::print(stderr, "{}\n", saturn::message(run.status()));
      return false;
    }
    const double total = run->report.total_seconds();
    series.rates.push_back(total > 0 ? run->added / total : 0.0);
    series.seconds.push_back(total);
    last = std::move(*run);
  }
  return true;
}

// Tells glibc to keep freed memory in the heap instead of handing it back
// to the kernel; false when it refuses.
bool keep_freed_memory() {
  // glibc's largest mmap threshold; the trim threshold keeps the heap's top.
  constexpr int kKeep = 32 << 20;
  return mallopt(M_MMAP_THRESHOLD, kKeep) == 1 && mallopt(M_TRIM_THRESHOLD, kKeep) == 1;
}

// The last run: each iteration's figures, each rule's with --rules, and the
// totals.
void print_run(const Run& last, const saturn::RuleSet& rules, const Args& args) {
  const saturn::RunReport& report = last.report;
  fmt::print("engine_math{}: {} rules, {} start terms, {} scheduler\n", args.egg ? " --egg" : "",
             rules.size(), std::size(saturn::kEggBenchTerms),
             args.egg ? "simple (every rule)" : "backoff");
  fmt::print("{:>4} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}\n", "iter", "matches",
             "applied", "e-nodes", "hash-cons", "e-classes", "search s", "apply s", "rebuild s");
  for (std::size_t i = 0; i < report.iterations.size(); ++i) {
    const auto& it = report.iterations[i];
    fmt::print("{:>4} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9.4f} {:>9.4f} {:>9.4f}\n", i + 1,
               it.matches, it.applied, it.visible_nodes, it.nodes, it.classes, it.search_seconds,
               it.apply_seconds, it.rebuild_seconds);
  }
  if (args.per_rule) {
    fmt::print("{:<24} {:>10} {:>10}\n", "rule", "matches", "applied");
    for (std::size_t r = 0; r < rules.size(); ++r) {
      fmt::print("{:<24} {:>10} {:>10}\n", rules[r].name, report.rules[r].matches,
                 report.rules[r].applied);
    }
  }
  fmt::print("stop reason:        {}\n", saturn::to_string(report.stop_reason));
  fmt::print("e-nodes:            {}\n", last.nodes);
  fmt::print("hash-cons entries:  {}\n", last.memo);
  fmt::print("e-nodes added:      {:.0f}\n", last.added);
  fmt::print("e-classes:          {}\n", last.classes);
  fmt::print("memory_bytes:       {}\n", last.memory);
  fmt::print("search seconds:     {:.4f}\n", report.search_seconds);
  fmt::print("apply seconds:      {:.4f}\n", report.apply_seconds);
  fmt::print("rebuild seconds:    {:.4f}\n", report.rebuild_seconds);
  fmt::print("total seconds:      {:.4f}\n", report.total_seconds());
}

}  // namespace

// The median of `values` (which it sorts).
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void print_series(const char* label, const std::vector<double>& rates,
                  const std::vector<double>& seconds) {
  std::string per_run;
  for (double r : rates) per_run += fmt::format(" {:.0f}", r);
  fmt::print("{} per run:{}\n", label, per_run);
  fmt::print(
      "{}: {:.0f} e-nodes added/s, {:.4f} s a run (medians of {} runs; first run {:.0f}/s, "
      "{:.4f} s)\n",
      label, median(rates), median(seconds), rates.size(), rates.front(), seconds.front());
}

// Saturn's counts against egg's, iteration by iteration.
bool print_egg_counts(const Run& run) {
  const saturn::RunReport& report = run.report;
  bool same = true;
  auto row = [&same](const std::string& what, std::size_t ours, std::size_t eggs) {
    same = same && ours == eggs;
    fmt::print("{:<32} {:>10} {:>10}  {}\n", what, ours, eggs, ours == eggs ? "same" : "DIFFERS");
  };
  fmt::print("{:<32} {:>10} {:>10}\n", "egg's counting", "saturn", "egg");
  for (std::size_t i = 0; i < report.iterations.size() && i < std::size(kEggNodesBefore); ++i) {
    const std::size_t before =
        i == 0 ? report.initial_visible_nodes : report.iterations[i - 1].visible_nodes;
    row(fmt::format("e-nodes before iteration {}", i + 1), before, kEggNodesBefore[i]);
  }
  row("e-nodes after the last", run.nodes, kEggNodes);
  row("e-classes after the last", run.classes, kEggClasses);
  fmt::print("{:<32} {:>10} {:>10}  (egg keeps stale keys)\n", "hash-cons entries", run.memo,
             kEggMemo);
  return same;
}

int main(int argc, char** argv) {
  Args args;
  if (std::optional<int> exit = parse_args(argc, argv, args)) return *exit;
  saturn::MathLanguage lang;
  saturn::ConditionRegistry conditions = saturn::math_conditions(lang);
  auto rules = saturn::load_math_rules(lang, conditions);
  if (!rules.ok()) {
    fmt::print(stderr, "{}\n", saturn::message(rules.status()));
    return 1;
  }
  Run last;
  Series fresh_heap, heap_kept;
  if (!run_series(lang, *rules, args, fresh_heap, last)) return 1;
  if (!keep_freed_memory()) {
    fmt::print(stderr, "engine_math: mallopt failed\n");
    return 1;
  }
  if (!run_series(lang, *rules, args, heap_kept, last)) return 1;
  print_run(last, *rules, args);
  print_series("fresh heap", fresh_heap.rates, fresh_heap.seconds);
  print_series("heap kept", heap_kept.rates, heap_kept.seconds);
  fmt::print("peak RSS MiB:       {:.1f}\n", peak_rss_mib());
  if (args.egg && args.iterations == std::size(kEggNodesBefore)) print_egg_counts(last);
  return 0;
}

// bench/extract: every extractor over the extraction-gym e-graphs (TENSAT's
// BERT, ResNet-50 and VGG with measured costs, cyclic and acyclic, and egg's
// e-graphs), with the node costs given in the files. Prints one Markdown row
// per file: the tree extractor's and the DAG greedy extractor's DAG cost and
// time, the ILP's cost, status and time, and greedy's gap to the ILP.
//
// The ILP's lower bound (CBC's best possible objective, the LP bound when
// the relaxation alone proves the warm start optimal, or the derivation
// search's bound) is shown too, with greedy's gap to it (greedy is at most
// that far above the optimum, proven or not), the cycle cuts the ILP used,
// the nodes its reduced-cost fixing dropped, and the derivation search's
// parts and states where it ran. "on
// cycles" counts the classes that lie on a cycle of the e-graph: a file named
// acyclic is not always so (TENSAT's bert_acyclic.json has the same nodes as
// bert.json, cycles included).
//
//   build/bench/extract [--ilp-seconds 60] [--cycle-cut-length 4] [--fixing-rounds 8]
//                       [--only SUBSTRING] [DIR]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "saturn/base/cli.h"
#include "saturn/base/status.h"
#include "saturn/egraph/serialize.h"
#include "saturn/extract/extractor.h"
#include "fmt/format.h"

int main(int argc, char** argv) {
  using namespace saturn;
  IlpOptions ilp_options{.time_limit_seconds = 60};
  std::string only;
  std::string dir = std::string(SATURN_EXTRACTION_GYM);
  CLI::App app{"Every extractor over the extraction-gym e-graphs", "extract"};
  app.add_option("DIR", dir, "a folder of egraph-serialize JSON files")->capture_default_str();
  app.add_option("--ilp-seconds", ilp_options.time_limit_seconds, "the ILP's time limit per file")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber & kFinite);
  app.add_option("--cycle-cut-length", ilp_options.cycle_cut_length,
                 "the longest cycle the ILP cuts up front")
      ->capture_default_str();
  app.add_option("--fixing-rounds", ilp_options.reduced_cost_rounds,
                 "rounds of reduced-cost fixing")
      ->capture_default_str();
  app.add_option("--only", only, "only the files whose path contains this");
  if (std::optional<int> exit = parse_command_line(app, argc, argv)) return *exit;
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json" &&
        entry.path().string().find(only) != std::string::npos)
      files.push_back(entry.path());
  }
  if (ec || files.empty()) {
    fmt::print(stderr, "extract: no egraph-serialize files under {}\n", dir);
    return 1;
  }
  std::sort(files.begin(), files.end());
  fmt::print(
      "| file | nodes | classes | on cycles | tree: DAG cost | ms | greedy: DAG cost | ms "
      "| ILP: DAG cost | bound | cycle cuts | fixed | search parts/states | status | s "
      "| greedy vs ILP | greedy vs bound |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  double worst_gap = 0, worst_bound_gap = 0, slowest_greedy = 0;
  int acyclic = 0, acyclic_proven = 0;  // files with no class on a cycle
  for (const auto& file : files) {
    absl::StatusOr<SerializedEGraph> s = read_serialized(file.string());
    if (!s.ok()) {
      fmt::print(stderr, "extract: {}\n", message(s.status()));
      return 1;
    }
    ExtractionProblem p = problem_from_serialized(*s);
    ExtractionResult tree = TreeExtractor().extract(p);
    ExtractionResult greedy = DagGreedyExtractor().extract(p);
    ExtractionResult ilp = IlpExtractor(ilp_options).extract(p);
    for (const ExtractionResult* r : {&tree, &greedy, &ilp}) {
      if (!check_selection(p, r->selection).ok()) {
        fmt::print(stderr, "extract: {}: an extractor returned an invalid selection\n",
                   file.string());
        return 1;
      }
    }
    double gap = ilp.dag_cost > 0 ? (greedy.dag_cost - ilp.dag_cost) / ilp.dag_cost * 100 : 0;
    worst_gap = std::max(worst_gap, gap);
    const double bound_gap =
        ilp.lower_bound > 0 ? (greedy.dag_cost - ilp.lower_bound) / ilp.lower_bound * 100 : 0;
    worst_bound_gap = std::max(worst_bound_gap, bound_gap);
    const std::string search =
        ilp.search_parts > 0 ? fmt::format("{}/{}", ilp.search_parts, ilp.search_states) : "-";
    slowest_greedy = std::max(slowest_greedy, greedy.seconds);
    std::string name = std::filesystem::relative(file, dir).string();
    const std::size_t on_cycles = classes_on_cycles(p);
    if (on_cycles == 0) {
      ++acyclic;
      acyclic_proven += ilp.status == ExtractionStatus::kOptimal;
    }
    fmt::print(
        "| {} | {} | {} | {} | {:.4f} | {:.1f} | {:.4f} | {:.1f} | {:.4f} | {:.4f} | {} | {} "
        "| {} | {} | {:.2f} | {:+.3f}% | {:+.4f}% |\n",
        name, p.num_nodes(), p.num_classes(), on_cycles, tree.dag_cost, tree.seconds * 1e3,
        greedy.dag_cost, greedy.seconds * 1e3, ilp.dag_cost, ilp.lower_bound, ilp.cycle_cuts,
        ilp.fixed_nodes, search, to_string(ilp.status), ilp.seconds, gap, bound_gap);
    std::fflush(stdout);
  }
  fmt::print(
      "\nworst greedy gap to ILP: {:.3f}%; to the ILP's lower bound: {:.4f}%; slowest greedy: "
      "{:.1f} ms\n",
      worst_gap, worst_bound_gap, slowest_greedy * 1e3);
  fmt::print("ILP proven optimal on {} of the {} files with no class on a cycle\n", acyclic_proven,
             acyclic);
  return 0;
}

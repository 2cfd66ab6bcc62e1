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

using namespace saturn;

namespace {

struct Args {
  IlpOptions ilp{.time_limit_seconds = 60};
  std::string only;
  std::string dir = std::string(SATURN_EXTRACTION_GYM);
};

// The benchmark's options; the exit code when the program is done (--help,
// a usage error).
std::optional<int> parse_args(int argc, char** argv, Args& a) {
  CLI::App app{"Every extractor over the extraction-gym e-graphs", "extract"};
  app.add_option("DIR", a.dir, "a folder of egraph-serialize JSON files")->capture_default_str();
  app.add_option("--ilp-seconds", a.ilp.time_limit_seconds, "the ILP's time limit per file")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber & kFinite);
  app.add_option("--cycle-cut-length", a.ilp.cycle_cut_length,
                 "the longest cycle the ILP cuts up front")
      ->capture_default_str();
  app.add_option("--fixing-rounds", a.ilp.reduced_cost_rounds, "rounds of reduced-cost fixing")
      ->capture_default_str();
  app.add_option("--only", a.only, "only the files whose path contains this");
  return parse_command_line(app, argc, argv);
}

// The JSON files under `dir` whose path contains `only`, sorted; none when
// `dir` cannot be read.
std::vector<std::filesystem::path> serialized_files(const std::string& dir,
                                                    const std::string& only) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json" &&
        entry.path().string().find(only) != std::string::npos)
      files.push_back(entry.path());
  }
  if (ec) return {};
  std::sort(files.begin(), files.end());
  return files;
}

// The figures of the summary, over every file.
struct Summary {
  double worst_gap = 0, worst_bound_gap = 0, slowest_greedy = 0;
  int acyclic = 0, acyclic_proven = 0;  // files with no class on a cycle
};

// Runs every extractor on `file` and prints its row.
absl::Status extract_file(const std::filesystem::path& file, const Args& args, Summary& summary) {
  absl::StatusOr<SerializedEGraph> s = read_serialized(file.string());
  if (!s.ok()) return s.status();
  ExtractionProblem p = problem_from_serialized(*s);
  ExtractionResult tree = TreeExtractor().extract(p);
  ExtractionResult greedy = DagGreedyExtractor().extract(p);
  ExtractionResult ilp = IlpExtractor(args.ilp).extract(p);
  for (const ExtractionResult* r : {&tree, &greedy, &ilp}) {
    if (!check_selection(p, r->selection).ok()) {
      return absl::InternalError(
          fmt::format("{}: an extractor returned an invalid selection", file.string()));
    }
  }
  double gap = ilp.dag_cost > 0 ? (greedy.dag_cost - ilp.dag_cost) / ilp.dag_cost * 100 : 0;
  summary.worst_gap = std::max(summary.worst_gap, gap);
  const double bound_gap =
      ilp.lower_bound > 0 ? (greedy.dag_cost - ilp.lower_bound) / ilp.lower_bound * 100 : 0;
  summary.worst_bound_gap = std::max(summary.worst_bound_gap, bound_gap);
  const std::string search =
      ilp.search_parts > 0 ? fmt::format("{}/{}", ilp.search_parts, ilp.search_states) : "-";
  summary.slowest_greedy = std::max(summary.slowest_greedy, greedy.seconds);
  std::string name = std::filesystem::relative(file, args.dir).string();
  const std::size_t on_cycles = classes_on_cycles(p);
  if (on_cycles == 0) {
    ++summary.acyclic;
    summary.acyclic_proven += ilp.status == ExtractionStatus::kOptimal;
  }
  fmt::print(
      "| {} | {} | {} | {} | {:.4f} | {:.1f} | {:.4f} | {:.1f} | {:.4f} | {:.4f} | {} | {} "
      "| {} | {} | {:.2f} | {:+.3f}% | {:+.4f}% |\n",
      name, p.num_nodes(), p.num_classes(), on_cycles, tree.dag_cost, tree.seconds * 1e3,
      greedy.dag_cost, greedy.seconds * 1e3, ilp.dag_cost, ilp.lower_bound, ilp.cycle_cuts,
      ilp.fixed_nodes, search, to_string(ilp.status), ilp.seconds, gap, bound_gap);
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (std::optional<int> exit = parse_args(argc, argv, args)) return *exit;
  const std::vector<std::filesystem::path> files = serialized_files(args.dir, args.only);
  if (files.empty()) {
    fmt::print(stderr, "extract: no egraph-serialize files under {}\n", args.dir);
    return 1;
  }
  fmt::print(
      "| file | nodes | classes | on cycles | tree: DAG cost | ms | greedy: DAG cost | ms "
      "| ILP: DAG cost | bound | cycle cuts | fixed | search parts/states | status | s "
      "| greedy vs ILP | greedy vs bound |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  Summary summary;
  for (const auto& file : files) {
    if (absl::Status s = extract_file(file, args, summary); !s.ok()) {
      fmt::print(stderr, "extract: {}\n", message(s));
      return 1;
    }
  }
  fmt::print(
      "\nworst greedy gap to ILP: {:.3f}%; to the ILP's lower bound: {:.4f}%; slowest greedy: "
      "{:.1f} ms\n",
      summary.worst_gap, summary.worst_bound_gap, summary.slowest_greedy * 1e3);
  fmt::print("ILP proven optimal on {} of the {} files with no class on a cycle\n",
             summary.acyclic_proven, summary.acyclic);
  return 0;
}

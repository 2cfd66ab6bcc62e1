// bench/real_latency: the number saturn must win on. For every ONNX fixture
// and zoo model, every search strategy optimizes the model under the cost
// model measured in onnxruntime (calibrated first, cached in the table), and
// onnxruntime (CPU, all its graph optimizations on) runs the original and
// the optimized model on the same inputs: outputs compared, median latency
// over alternating A/B runs. Prints a Markdown table and writes it as JSON
// and an SVG plot. A strategy that keeps the input (nothing predicted
// cheaper) counts as speedup 1; its measured ratio is printed as the noise.
//
//   build/bench/real_latency [--models resnet50,bert,...] [--strategies mcts,greedy,default,taso]
//       [--budget 2000] [--time-limit 30] [--ilp-seconds 10] [--min-gain 0.5] [--runs 20]
//       [--threads 2] [--costs FILE] [--out DIR]
//
// --min-gain P keeps the input unless the result is predicted P% faster, as
// `saturn optimize` does by default under a latency cost.
//
// A model name is a fixture (tensor/fixtures/NAME.onnx) when one exists,
// otherwise a zoo model (exported to ONNX for onnxruntime); "zoo:NAME" is
// always the zoo model (the default list names the zoo models so).
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "saturn/base/cli.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "saturn/base/stopwatch.h"
#include "saturn/bench/options.h"
#include "saturn/bench/report.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/ort/runtime.h"
#include "saturn/saturn.h"
#include "saturn/onnx/onnx.h"

using namespace saturn;
namespace fs = std::filesystem;

namespace {

const char* const kFixtures[] = {"resnet50",      "inception_v3", "squeezenet1_1",
                                 "mobilenet_v2",  "bert_base",    "llama_decoder",
                                 "llama_block",   "vit_encoder",  "swin_like"};

struct Args {
  std::vector<std::string> models, strategies = {"mcts", "greedy", "default", "taso"};
  std::size_t budget = 2000;
  double time_limit = 30, ilp_seconds = 10, min_gain_percent = 0.5;
  int runs = 20, threads = 2;
  // Default: the shipped table at --threads (1 or 2), which the run extends.
  std::string costs, out = "real_latency";
};

// The sweep's options; the exit code when the program is done (--help, a
// usage error).
std::optional<int> parse_args(int argc, char** argv, Args& a) {
  CLI::App app{
      "Every fixture and zoo model x strategy under the onnxruntime-measured cost model, "
      "verified and timed in onnxruntime: Markdown, JSON and SVG",
      "real_latency"};
  app.add_option("--models", a.models, "fixture names, zoo:NAME (default: all)")->delimiter(',');
  bench::add_strategies_option(app, a.strategies);
  app.add_option("--budget", a.budget, "e-node budget")->capture_default_str();
  bench::add_search_limit_options(app, a.threads, a.ilp_seconds, a.time_limit);
  app.add_option("--min-gain", a.min_gain_percent, "the minimum predicted gain in percent")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 99.999999));
  app.add_option("--runs", a.runs, "timed onnxruntime runs per model")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--costs", a.costs,
                 "the measured cost table to extend and price with (default: the shipped table "
                 "at --threads, costmodel/tables/onnxruntime-cpu-1thread.json or -2threads.json)");
  app.add_option("--out", a.out, "where the tables and plots go")->capture_default_str();
  if (std::optional<int> exit = parse_command_line(app, argc, argv)) return exit;
  if (a.costs.empty()) {
    if (a.threads > 2) {
      fmt::print(stderr, "real_latency: no shipped table is timed at {} threads: give --costs\n",
                 a.threads);
      return 2;
    }
    a.costs = a.threads == 1 ? "costmodel/tables/onnxruntime-cpu-1thread.json"
                             : "costmodel/tables/onnxruntime-cpu-2threads.json";
  }
  if (a.models.empty()) {
    for (const char* f : kFixtures) a.models.emplace_back(f);
    for (const tensor::ZooModel& m : tensor::zoo_models())
      a.models.push_back("zoo:" + std::string(m.name));
  }
  return std::nullopt;
}

struct Model {
  std::string name, source;  // source: the ONNX file, or the zoo name
  tensor::Graph graph;
};

absl::StatusOr<Model> load(const std::string& name) {
  if (name.starts_with("zoo:")) {
    absl::StatusOr<tensor::Graph> g = tensor::build_zoo_model(name.substr(4));
    if (!g.ok()) return g.status();
    return Model{name, name.substr(4), std::move(*g)};
  }
  const std::string fixture = fmt::format("{}/{}.onnx", SATURN_FIXTURES, name);
  if (fs::exists(fixture)) {
    absl::StatusOr<tensor::Graph> g = tensor::load_onnx_model(fixture);
    if (!g.ok()) return g.status();
    return Model{name, fixture, std::move(*g)};
  }
  absl::StatusOr<tensor::Graph> g = tensor::build_zoo_model(name);
  if (!g.ok()) return g.status();
  return Model{name, name, std::move(*g)};
}

double geometric_mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}

absl::StatusOr<std::vector<Model>> load_models(const std::vector<std::string>& names) {
  std::vector<Model> models;
  for (const std::string& name : names) {
    absl::StatusOr<Model> m = load(name);
    if (!m.ok()) return m.status();
    models.push_back(std::move(*m));
  }
  return models;
}

// The measured cost model: every operator signature timed in onnxruntime.
absl::StatusOr<std::shared_ptr<const CostModel>> measured_cost_model(
    const Args& args, const std::vector<Model>& models) {
  ort::CalibrationOptions calibration;
  calibration.runtime.threads = args.threads;
  calibration.explore_nodes = args.budget;
  std::vector<const tensor::Graph*> graphs;
  for (const Model& m : models) graphs.push_back(&m.graph);
  Stopwatch clock;
  absl::StatusOr<ort::CalibrationStats> cal = ort::calibrate(graphs, args.costs, calibration);
  if (!cal.ok()) return cal.status();
  fmt::print(
      "calibration: {} signatures ({} measured now, {} cached, {} not measurable), {:.1f} s\n",
      cal->signatures, cal->measured, cal->cached, cal->skipped, clock.seconds());
  if (cal->measured > 0) fmt::print("profiler correction: {}\n", ort::describe(cal->correction));
  if (cal->foreign > 0) fmt::print("cost table: {}\n", ort::describe_foreign(*cal));
  fmt::print("\n");
  return cost_model_by_name("measured:" + args.costs);
}

// What the sweep gathers, row by row.
struct Results {
  nlohmann::json rows = nlohmann::json::array();
  std::map<std::string, std::vector<double>> speedups;  // per strategy
  std::vector<std::vector<double>> chart;               // per model, per strategy
  bool all_match = true;
};

OptimizeOptions search_options(const Args& args, const std::string& strategy,
                               const std::shared_ptr<const CostModel>& cost) {
  OptimizeOptions options;
  options.search.strategy = *parse_strategy(strategy);
  options.search.threads = args.threads;
  options.budget.max_nodes = args.budget;
  options.budget.time_limit_seconds = args.time_limit;
  options.ilp_seconds = args.ilp_seconds;
  options.min_gain = args.min_gain_percent / 100;
  options.cost_model = cost;
  return options;
}

void print_row(const std::string& model, const std::string& strategy, const OptimizeResult& r,
               const ort::VerifyReport& v) {
  const nlohmann::json& a = v.json["latency"]["original"];
  const nlohmann::json& b = v.json["latency"]["optimized"];
  auto ms = [](const nlohmann::json& s, const char* k) { return s[k].get<double>() / 1000; };
  const std::string measured =
      fmt::format("{:.3f} [{:.3f}, {:.3f}]", v.speedup, v.json["speedup_p10"].get<double>(),
                  v.json["speedup_p90"].get<double>());
  std::string predicted = fmt::format("{:.1f} -> {:.1f}", r.cost_before, r.cost_after);
  if (r.kept_input() && r.found_cheaper())
    predicted += fmt::format(" (found {:.1f})", r.cost_found);
  fmt::print(
      "| {} | {} | {:.3f} [{:.3f}, {:.3f}] | {:.3f} [{:.3f}, {:.3f}] | {} | {} | {} | {:.1f} "
      "|\n",
      model, strategy, ms(a, "median_us"), ms(a, "p10_us"), ms(a, "p90_us"), ms(b, "median_us"),
      ms(b, "p10_us"), ms(b, "p90_us"),
      r.kept_input() ? "1 (input kept; noise " + measured + ")" : measured,
      v.ok ? "match" : "DIFFER", predicted, r.times.total);
  std::fflush(stdout);
}

nlohmann::json row_json(const Model& m, const std::string& strategy, const OptimizeResult& r,
                        const ort::VerifyReport& v, double speedup) {
  return {{"model", m.name},
          {"strategy", strategy},
          {"outputs_match", v.ok},
          {"input_kept", r.kept_input()},
          {"speedup", speedup},
          {"measured_speedup", v.speedup},
          {"speedup_p10", v.json["speedup_p10"]},
          {"speedup_p90", v.json["speedup_p90"]},
          {"latency_us", v.json["latency"]},
          {"outputs", v.json["outputs"]},
          {"predicted_us_before", r.cost_before},
          {"predicted_us_after", r.cost_after},
          {"predicted_us_found", r.cost_found},
          {"ops_before", tensor::total_ops(m.graph)},
          {"ops_after", tensor::total_ops(r.graph)},
          {"optimize_seconds", r.times.total}};
}

// One model under one strategy: optimized, written to `dir`, run against
// `original` in onnxruntime; its row printed and added to `results`.
absl::Status measure_strategy(const Args& args, const Model& m, const std::string& strategy,
                              const std::shared_ptr<const CostModel>& cost,
                              const std::string& original, const ort::TempDir& dir,
                              std::vector<double>& chart_row, Results& results) {
  absl::StatusOr<OptimizeResult> r = optimize(m.graph, search_options(args, strategy, cost));
  if (!r.ok()) return with_context(r.status(), m.name);
  const std::string optimized = (dir.path() / (strategy + ".onnx")).string();
  if (absl::Status s = tensor::save_onnx_model(r->graph, optimized); !s.ok())
    return with_context(s, m.name);
  ort::RuntimeOptions timing;
  timing.runs = args.runs;
  timing.threads = args.threads;
  absl::StatusOr<ort::VerifyReport> v = ort::verify_models(original, optimized, timing);
  if (!v.ok()) return with_context(v.status(), m.name);
  // When the search found nothing cheaper by the minimum gain, the input
  // graph comes back (written anew): both files run the same kernels, so
  // the speedup is 1 and the measured ratio shows the noise of the
  // measurement.
  const double speedup = r->kept_input() ? 1.0 : v->speedup;
  print_row(m.name, strategy, *r, *v);
  results.all_match = results.all_match && v->ok;
  results.speedups[strategy].push_back(speedup);
  chart_row.push_back(100.0 * (1.0 - 1.0 / speedup));
  results.rows.push_back(row_json(m, strategy, *r, *v, speedup));
  return absl::OkStatus();
}

// Every model under every strategy.
absl::StatusOr<Results> measure(const Args& args, const std::vector<Model>& models,
                                const std::shared_ptr<const CostModel>& cost) {
  fmt::print(
      "| model | strategy | before ms [p10, p90] | after ms [p10, p90] | speedup [p10, p90] | "
      "outputs | predicted us before -> after | optimize s |\n");
  fmt::print("|---|---|---|---|---|---|---|---|\n");
  Results results;
  results.chart.resize(models.size());
  for (std::size_t mi = 0; mi < models.size(); ++mi) {
    const Model& m = models[mi];
    ort::TempDir dir;
    absl::StatusOr<std::string> original = ort::runtime_file(m.source, m.graph, dir, "original");
    if (!original.ok()) return original.status();
    for (const std::string& strategy : args.strategies) {
      if (absl::Status s = measure_strategy(args, m, strategy, cost, *original, dir,
                                            results.chart[mi], results);
          !s.ok())
        return s;
    }
  }
  return results;
}

// Prints the geometric mean of each strategy's speedups, and returns them.
nlohmann::json print_geometric_means(const Args& args, const Results& results,
                                     std::size_t num_models) {
  fmt::print("\ngeometric-mean onnxruntime speedup over {} models:", num_models);
  nlohmann::json geomeans = nlohmann::json::object();
  for (const std::string& s : args.strategies) {
    auto it = results.speedups.find(s);
    const double mean = geometric_mean(it != results.speedups.end() ? it->second
                                                                     : std::vector<double>{});
    geomeans[s] = mean;
    fmt::print(" {} {:.3f}x", s, mean);
  }
  return geomeans;
}

// The JSON and the SVG plot in args.out.
absl::Status write_results(const Args& args, const std::string& machine,
                           const std::vector<Model>& models, const Results& results,
                           const nlohmann::json& geomeans) {
  std::error_code ec;
  fs::create_directories(args.out, ec);
  nlohmann::json j = {{"machine", machine},
                      {"budget_nodes", args.budget},
                      {"runs", args.runs},
                      {"min_gain_percent", args.min_gain_percent},
                      {"cost_table", args.costs},
                      {"geometric_mean_speedup", geomeans},
                      {"rows", results.rows}};
  const std::string json_path = args.out + "/real_latency.json";
  if (absl::Status s = write_text_file(json_path, j.dump(1) + "\n"); !s.ok()) return s;
  std::vector<std::string> names;
  for (const Model& m : models) names.push_back(m.name);
  std::string svg = bench::bar_chart(
      fmt::format("onnxruntime latency reduction (%) per model, measured cost, {} e-nodes",
                  args.budget),
      names, args.strategies, results.chart, 10, 10);
  svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"920\" height=\"300\" "
      "font-family=\"sans-serif\">\n{}<text x=\"10\" y=\"290\" "
      "font-size=\"10\">{}</text>\n</svg>\n",
      svg, machine);
  const std::string svg_path = args.out + "/real_latency.svg";
  if (absl::Status s = write_text_file(svg_path, svg); !s.ok()) return s;
  fmt::print("wrote {} and {}\n", json_path, svg_path);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (std::optional<int> exit = parse_args(argc, argv, args)) return *exit;
  absl::StatusOr<std::vector<Model>> models = load_models(args.models);
  if (!models.ok()) return fmt::print(stderr, "real_latency: {}\n", message(models.status())), 2;
  const std::string machine = machine_description();
  fmt::print("machine: {}\n", machine);
  absl::StatusOr<std::shared_ptr<const CostModel>> cost = measured_cost_model(args, *models);
  if (!cost.ok()) return fmt::print(stderr, "real_latency: {}\n", message(cost.status())), 1;
  absl::StatusOr<Results> results = measure(args, *models, *cost);
  if (!results.ok()) return fmt::print(stderr, "real_latency: {}\n", message(results.status())), 1;
  const nlohmann::json geomeans = print_geometric_means(args, *results, models->size());
  fmt::print("\noutputs: {}\n", results->all_match ? "all match" : "SOME DIFFER");
  if (absl::Status s = write_results(args, machine, *models, *results, geomeans); !s.ok())
    return fmt::print(stderr, "real_latency: {}\n", message(s)), 1;
  return results->all_match ? 0 : 1;
}

// The subcommands that run models in onnxruntime: verify and calibrate.
#include "saturn/tools/runtime_commands.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "saturn/base/cli.h"
#include "saturn/base/file.h"
#include "saturn/base/stopwatch.h"
#include "saturn/costmodel/cost_model.h"
#include "fmt/format.h"
#include "saturn/tools/commands.h"
#include "saturn/tools/model_files.h"

namespace saturn::tools {

using tensor::Graph;

int run_verify(const std::string& original, const Graph& original_graph,
               const std::string& optimized, const Graph& optimized_graph,
               const ort::RuntimeOptions& options, const std::string& json,
               const tensor::OnnxImportOptions& onnx) {
  ort::TempDir dir;
  absl::StatusOr<std::string> a =
      ort::runtime_file(original, original_graph, dir, "original", onnx);
  if (!a.ok()) return fail(a.status());
  absl::StatusOr<std::string> b =
      ort::runtime_file(optimized, optimized_graph, dir, "optimized", onnx);
  if (!b.ok()) return fail(b.status());
  absl::StatusOr<ort::VerifyReport> r = ort::verify_models(*a, *b, options);
  if (!r.ok()) return fail(r.status());
  r->json["original"] = original;
  r->json["optimized"] = optimized;
  fmt::print("verify {} against {}:\n{}", optimized, original, ort::describe(*r));
  if (!json.empty()) {
    if (absl::Status s = write_text_file(json, r->json.dump(2) + "\n"); !s.ok()) return fail(s);
  }
  return r->ok ? 0 : 1;
}

void add_runtime_options(CLI::App& app, ort::RuntimeOptions& o, bool compares) {
  app.add_option("--runs", o.runs, "timed runs per model")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--warmup", o.warmup, "untimed runs first")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--seed", o.seed, "seed of the random inputs")->capture_default_str();
  o.threads = ort::default_runtime_threads();
  app.add_option("--runtime-threads,--threads", o.threads,
                 "onnxruntime intra-op threads (default: onnxruntime's own, a thread per core "
                 "this process may use)")
      ->capture_default_str()
      ->check(CLI::Range(1, ort::kMaxRuntimeThreads));
  if (!compares) return;
  app.add_option("--rtol", o.rtol, "relative tolerance")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber & kFinite);
  app.add_option("--atol", o.atol, "absolute tolerance")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber & kFinite);
}

Command add_verify_command(CLI::App& program) {
  struct Options {
    std::string original, optimized, json;
    ort::RuntimeOptions runtime;
    tensor::OnnxImportOptions onnx;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = program.add_subcommand(
      "verify",
      "Run two models in onnxruntime (CPU, all graph optimizations) on the same seeded inputs: "
      "compare every output and time both (median, A/B alternating); exit 1 on a mismatch");
  app->add_option("ORIGINAL", o->original, "the reference model")->required();
  app->add_option("OPTIMIZED", o->optimized, "the model to check against it")->required();
  app->add_option("--json", o->json, "write everything measured to FILE");
  add_runtime_options(*app, o->runtime, /*compares=*/true);
  add_dim_option(*app, o->onnx.dims);
  return {app, [o] {
            if (absl::Status s = check_outputs({o->original, o->optimized}, {o->json}); !s.ok())
              return fail(s);
            absl::StatusOr<Graph> a = load_model(o->original, o->onnx);
            if (!a.ok()) return fail(a.status());
            absl::StatusOr<Graph> b = load_model(o->optimized, o->onnx);
            if (!b.ok()) return fail(b.status());
            return run_verify(o->original, *a, o->optimized, *b, o->runtime, o->json, o->onnx);
          }};
}

namespace {

struct CalibrateOptions {
  std::vector<std::string> models;
  std::string out;
  ort::CalibrationOptions calibration;
  tensor::OnnxImportOptions onnx;
};

int run_calibrate(CalibrateOptions o) {
  if (o.out.empty()) o.out = calibrated_table_path(o.calibration.runtime.threads);
  if (o.out.empty())
    return fail(absl::InvalidArgumentError(
        "no cache folder for this machine's table (set SATURN_CACHE_DIR or HOME), and no -o"));
  std::error_code ec;  // an unwritable folder: check_outputs or the write says so
  std::filesystem::create_directories(std::filesystem::path(o.out).parent_path(), ec);
  if (absl::Status s = check_outputs(o.models, {o.out}); !s.ok()) return fail(s);
  std::vector<Graph> graphs;
  for (const std::string& m : o.models) {
    absl::StatusOr<Graph> g = load_model(m, o.onnx);
    if (!g.ok()) return fail(g.status());
    graphs.push_back(std::move(*g));
  }
  std::vector<const Graph*> pointers;
  for (const Graph& g : graphs) pointers.push_back(&g);
  const Stopwatch clock;
  absl::StatusOr<ort::CalibrationStats> stats = ort::calibrate(pointers, o.out, o.calibration);
  if (!stats.ok()) return fail(stats.status());
  if (stats->stale > 0)
    fmt::print(
        "{} held {} entries timed another way (an older saturn, or other threads); measured "
        "anew\n",
        o.out, stats->stale);
  if (stats->foreign > 0)
    fmt::print("{} keeps {}; --refresh times them here\n", o.out, ort::describe_foreign(*stats));
  fmt::print(
      "{} operator signatures: {} measured, {} already in the table, {} not measurable; wrote {} "
      "({:.1f} s)\n",
      stats->signatures, stats->measured, stats->cached, stats->skipped, o.out, clock.seconds());
  if (stats->unsigned_weight_us_per_mac)
    fmt::print(
        "quantized weights: a uint8 weight's kernel takes {:.2f} ps a multiply-add beyond an int8 "
        "one's ({})\n",
        *stats->unsigned_weight_us_per_mac * 1e6,
        stats->weight_products == 1
            ? std::string("one product")
            : fmt::format("the median of {} products", stats->weight_products));
  if (stats->measured > 0)
    fmt::print("{}{}\n", ort::describe(stats->correction),
               stats->correction_kept ? " (the table's, timed on this machine)" : "");
  return 0;
}

}  // namespace

Command add_calibrate_command(CLI::App& program) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* app = program.add_subcommand(
      "calibrate",
      "Time each distinct operator signature in onnxruntime (its kernel time) and write the "
      "table for --cost measured:COSTS.json; an operator that reads a convolution is also timed "
      "between convolutions, the layout reorders it causes included");
  app->add_option("MODEL", o->models, "models whose operators to time")->required();
  app->add_option("-o", o->out,
                  "the cost table to write or extend (COSTS.json); default: this machine's table "
                  "at --runtime-threads, which the default cost (onnxruntime) then prices with at "
                  "those threads")
      ->default_str(calibrated_table_path(ort::default_runtime_threads()));
  app->add_option("--explore", o->calibration.explore_nodes,
                  "also time the operators the rules reach in an e-graph of N e-nodes (0: the "
                  "models' own only)")
      ->capture_default_str();
  app->add_option("--passes", o->calibration.passes,
                  "time each model in P passes and keep its fastest")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app->add_flag("--refresh", o->calibration.refresh, "time the table's entries again");
  add_runtime_options(*app, o->calibration.runtime, /*compares=*/false);
  add_dim_option(*app, o->onnx.dims);
  return {app, [o] { return run_calibrate(*o); }};
}

}  // namespace saturn::tools

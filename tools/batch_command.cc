// `saturn batch`: many models, each as `saturn optimize` would do it, spread
// over the ranks of an MPI launch (tools/ranks.h) or run in one process.
//
//   saturn batch a.onnx b.onnx bert --out DIR [search options]
//   mpirun -np 4 saturn batch models/*.onnx --out DIR --threads 1
//
// Each model goes to DIR/STEM.opt.onnx (.json for a JSON input); rank 0
// writes DIR/batch.json and DIR/batch.md. A model that fails (it does not
// load, its search fails) is reported with its error and the rank that ran
// it; the others still finish; the exit code is then 1. Outputs are written
// to a temporary name and renamed, so no partial file is left.
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "nlohmann/json.hpp"
#include "saturn/base/cli.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "saturn/base/stopwatch.h"
#include "saturn/tensor/zoo/zoo.h"
#include "saturn/tools/commands.h"
#include "saturn/tools/model_files.h"
#include "saturn/optimize/report.h"
#include "saturn/tools/optimize_command.h"
#include "saturn/base/ranks.h"

namespace saturn::tools {

namespace {

namespace fs = std::filesystem;

struct BatchOptions {
  std::vector<std::string> models;
  std::string out_dir;
  OptimizeCommandOptions optimize;
};

// Where a model's result goes: STEM.opt.onnx, or .json for a JSON input.
std::string output_name(const std::string& model) {
  const fs::path p(model);
  const bool json = p.extension() == ".json";
  return p.stem().string() + (json ? ".opt.json" : ".opt.onnx");
}

// A size to order the models by, largest first: the file's bytes, or a zoo
// model's operator count (in the same rough units as an ONNX file's bytes
// per operator).
std::uintmax_t size_of(const std::string& model) {
  std::error_code ec;
  if (fs::is_regular_file(model, ec)) return fs::file_size(model, ec);
  absl::StatusOr<tensor::Graph> g = tensor::build_zoo_model(model);
  return g.ok() ? static_cast<std::uintmax_t>(tensor::total_ops(*g)) * 100'000 : 0;
}

// One model: the row of the batch report.
nlohmann::json run_one(const BatchOptions& b, const std::string& model, int rank) {
  OptimizeCommandOptions o = b.optimize;
  o.model = model;
  o.out = (fs::path(b.out_dir) / output_name(model)).string();
  o.quiet = true;
  const Stopwatch clock;
  nlohmann::json row = {{"model", model}, {"rank", rank}};
  absl::StatusOr<OptimizeOutcome> outcome = optimize_file(o);
  row["seconds"] = clock.seconds();
  if (!outcome.ok()) {
    row["ok"] = false;
    row["error"] = std::string(message(outcome.status()));
    return row;
  }
  row["ok"] = true;
  row["output"] = o.out;
  row["report"] = optimize_report(outcome->input, outcome->result, o.optimize);
  return row;
}

std::string markdown(const nlohmann::json& rows, int ranks) {
  std::string md = fmt::format(
      "# saturn batch\n\n{} models on {} rank{}\n\n| model | rank | ops | cost before | cost "
      "after | lower | kept input | seconds | result |\n|---|---|---|---|---|---|---|---|---|\n",
      rows.size(), ranks, ranks == 1 ? "" : "s");
  for (const nlohmann::json& row : rows) {
    if (!row["ok"].get<bool>()) {
      md += fmt::format("| {} | {} | | | | | | {:.2f} | FAILED: {} |\n",
                        row["model"].get<std::string>(), row["rank"].get<int>(),
                        row["seconds"].get<double>(), row["error"].get<std::string>());
      continue;
    }
    const nlohmann::json& r = row["report"];
    md += fmt::format(
        "| {} | {} | {} -> {} | {:.2f} | {:.2f} | {:.2f}% | {} | {:.2f} | {} |\n",
        row["model"].get<std::string>(), row["rank"].get<int>(), r["ops_before"].get<int>(),
        r["ops_after"].get<int>(), r["cost_before"].get<double>(), r["cost_after"].get<double>(),
        r["improvement_percent"].get<double>(), r["kept_input"].get<bool>() ? "yes" : "no",
        row["seconds"].get<double>(), row["output"].get<std::string>());
  }
  return md;
}

int run_batch(const CLI::App& app, BatchOptions& b) {
  // Two inputs with one stem would write one output.
  std::map<std::string, std::string> outputs;
  for (const std::string& model : b.models) {
    auto [it, fresh] = outputs.emplace(output_name(model), model);
    if (!fresh)
      return usage_error(
          app, fmt::format("{} and {} would both write {}", it->second, model, it->first));
  }
  std::vector<std::string> inputs = b.models;
  std::vector<std::string> written = {(fs::path(b.out_dir) / "batch.json").string(),
                                      (fs::path(b.out_dir) / "batch.md").string()};
  for (const auto& [name, model] : outputs)
    written.push_back((fs::path(b.out_dir) / name).string());
  if (absl::Status s = check_outputs(inputs, written); !s.ok()) return fail(s);

  Ranks ranks;
  if (ranks.rank() == 0) {
    std::error_code ec;
    fs::create_directories(b.out_dir, ec);
    if (ec)
      return fail(absl::PermissionDeniedError(fmt::format("{}: {}", b.out_dir, ec.message())));
  }
  // Largest first, so that the last task to start is a small one.
  std::vector<std::string> order = b.models;
  std::vector<std::uintmax_t> sizes;
  for (const std::string& m : order) sizes.push_back(size_of(m));
  std::vector<std::size_t> index(order.size());
  for (std::size_t i = 0; i < index.size(); ++i) index[i] = i;
  std::stable_sort(index.begin(), index.end(),
                   [&](std::size_t a, std::size_t c) { return sizes[a] > sizes[c]; });
  if (ranks.size() > 1) ranks.broadcast(0);  // the folder exists before any rank writes

  nlohmann::json mine = nlohmann::json::array();
  for (std::size_t t; (t = ranks.next_task(index.size())) < index.size();) {
    const std::string& model = order[index[t]];
    nlohmann::json row = run_one(b, model, ranks.rank());
    if (!row["ok"].get<bool>())
      fmt::print(stderr, "saturn: rank {}: {}\n", ranks.rank(), row["error"].get<std::string>());
    mine.push_back(std::move(row));
  }
  std::vector<std::string> gathered = ranks.gather(mine.dump());
  int code = 0;
  if (ranks.rank() == 0) {
    // In the order the models were named.
    std::map<std::string, nlohmann::json> by_model;
    for (const std::string& part : gathered) {
      for (nlohmann::json& row : nlohmann::json::parse(part)) {
        const std::string model = row["model"].get<std::string>();
        by_model[model] = std::move(row);
      }
    }
    nlohmann::json rows = nlohmann::json::array();
    std::vector<std::string> failed;
    for (const std::string& model : b.models) {
      rows.push_back(by_model[model]);
      if (!by_model[model]["ok"].get<bool>()) failed.push_back(model);
    }
    const nlohmann::json report = {{"ranks", ranks.size()}, {"models", rows}, {"failed", failed}};
    absl::Status s = write_text_file(written[0], report.dump(2) + "\n");
    if (s.ok()) s = write_text_file(written[1], markdown(rows, ranks.size()));
    if (!s.ok()) return ranks.broadcast(fail(s));
    fmt::print("{}", markdown(rows, ranks.size()));
    fmt::print("wrote {} and {}\n", written[0], written[1]);
    if (!failed.empty()) {
      fmt::print(stderr, "saturn: {} of {} models failed: {}\n", failed.size(), rows.size(),
                 fmt::join(failed, ", "));
      code = 1;
    }
  }
  return ranks.broadcast(code);
}

}  // namespace

Command add_batch_command(CLI::App& program) {
  auto b = std::make_shared<BatchOptions>();
  CLI::App* app = program.add_subcommand(
      "batch",
      "Optimize many models, each as optimize does; under mpirun, spread over the ranks. Writes "
      "DIR/STEM.opt.onnx for each, and DIR/batch.json and DIR/batch.md");
  app->add_option("MODEL", b->models, "ONNX files, saturn JSON files or zoo model names")
      ->required();
  app->add_option("--out", b->out_dir, "the folder to write into")->required();
  add_search_options(*app, b->optimize);
  add_dim_option(*app, b->optimize.onnx.dims);
  return {app, [app, b] { return run_batch(*app, *b); }};
}

}  // namespace saturn::tools

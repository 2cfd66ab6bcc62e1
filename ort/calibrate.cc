// calibrate(): the measured cost table, read, extended with the operators
// of the models that it does not hold yet, as onnxruntime times them, and
// written back. See runtime.h.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "saturn/base/file.h"
#include "saturn/base/json.h"
#include "saturn/costmodel/cost_model.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "saturn/ort/harness_internal.h"
#include "saturn/ort/runtime.h"
#include "saturn/ort/signatures.h"
#include "saturn/onnx/onnx.h"

namespace saturn::ort {

namespace fs = std::filesystem;
using tensor::Graph;
using tensor::Op;

namespace {

// What a table entry measures: onnxruntime's own kernel time for the
// operator (its profiler), not the wall time of a run, which is mostly the
// cost of moving a single operator's inputs and outputs; less what the
// profiler adds to it (ProfilerCorrection; tables timed without that
// correction are timed again).
constexpr const char* kMethod = "onnxruntime-kernel-time-less-profiler";
// How an entry between convolutions is attributed. 2: an operator that
// onnxruntime fuses into the convolution costs nothing there (1 kept its
// time alone; such entries are timed again).
constexpr int kAttribution = 2;
// The table's figure for the quantized weights' type (see
// MeasuredCostModel::unsigned_weight_us_per_mac), and the products it is
// measured on: the models' largest distinct ones.
constexpr const char* kIntegerWeights = "integer_weights";
constexpr std::size_t kWeightTypeShapes = 4;

// The table so far (the cache).
struct CalibrationTable {
  nlohmann::json table;
  // Timed; timed between convolutions too; timed mixed too; over masked
  // scores too.
  std::set<std::string> known, known_between, known_mixed, known_masked;
  std::string recorded;  // the machine the table's entries come from
  std::optional<ProfilerCorrection> correction;  // what the kept entries were corrected by
};

// The table at `table_path`, or an empty one from `here` (this machine)
// when there is none. The entries measured another way or at other than
// `threads` intra-op threads (or at threads the table does not record) are
// left out, and counted in `stats.stale`.
absl::StatusOr<CalibrationTable> load_table(const std::string& table_path, const std::string& here,
                                            int threads, CalibrationStats& stats) {
  CalibrationTable t;
  t.table = {{"device", "onnxruntime-cpu"},
             {"method", kMethod},
             {"attribution", kAttribution},
             {"threads", threads},
             {"entries", nlohmann::json::array()}};
  t.recorded = here;
  if (!fs::exists(table_path)) return t;
  absl::StatusOr<std::unique_ptr<MeasuredCostModel>> check =
      load_measured_cost_model(table_path, RooflineCostModel(DeviceProfile{}));
  if (!check.ok()) return check.status();
  absl::StatusOr<std::string> text = read_text_file(table_path);
  if (!text.ok()) return text.status();
  absl::StatusOr<nlohmann::json> parsed = parse_json(*text, table_path);
  if (!parsed.ok()) return parsed.status();
  nlohmann::json old = *std::move(parsed);
  if (old.value("method", nlohmann::json()) == kMethod &&
      old.value("threads", nlohmann::json()) == threads) {
    const bool current = old.value("attribution", nlohmann::json(1)) == kAttribution;
    t.table["entries"] = nlohmann::json::array();
    for (nlohmann::json& e : old["entries"]) {
      const bool between = e.value("context", nlohmann::json()) == kBetweenConvolutions;
      if (between && !current) {
        ++stats.stale;  // attributed another way: measured again
        continue;
      }
      t.known.insert(e["signature"].get<std::string>());
      if (between) t.known_between.insert(e["signature"].get<std::string>());
      if (e.contains("mixed_us")) t.known_mixed.insert(e["signature"].get<std::string>());
      if (e.contains("masked_us")) t.known_masked.insert(e["signature"].get<std::string>());
      t.table["entries"].push_back(std::move(e));
    }
    if (old.contains("device")) t.table["device"] = old["device"];
    if (old.contains(kIntegerWeights)) t.table[kIntegerWeights] = old[kIntegerWeights];
    // What the kept entries were corrected by.
    if (old.contains("profiler_correction")) {
      const nlohmann::json& c = old["profiler_correction"];
      t.table["profiler_correction"] = c;
      t.correction = ProfilerCorrection{c.value("excess_us", 0.0), c.value("floor_us", 0.0)};
    }
    t.recorded = old.value("machine", std::string());
  } else {
    stats.stale = old["entries"].size();  // measured another way: measured again
  }
  return t;
}

// A signature to time, and its models.
struct Timing {
  std::string signature;
  int alone = -1, between = -1, mixed = -1, masked = -1;  // indices into `files`
  std::vector<tensor::Dims> in, out;         // its 4-D activations
};

// What to time: every signature not in the table, those the table holds
// timed alone that now read a convolution's output, and those it holds
// without a mixed time whose inputs may now be mixed.
struct TimingPlan {
  std::vector<std::string> files;  // the models written
  std::vector<Timing> timings;
  std::set<std::string> retimed;  // those of the timings the table holds
  // Products of quantized weights, each with its models in uint8 and int8
  // weights (indices into `files`).
  std::vector<tensor::MatrixProduct> weight_products;
  std::vector<std::pair<int, int>> weight_models;
};

// Writes `g` into `dir` and appends its file to `files`: its index there, or
// -1 when there is no model or it cannot be written.
int write_model(const std::optional<Graph>& g, const TempDir& dir,
                std::vector<std::string>& files) {
  if (!g) return -1;
  const std::string file = (dir.path() / (g->name + ".onnx")).string();
  if (!tensor::save_onnx_model(*g, file).ok()) return -1;
  files.push_back(file);
  return static_cast<int>(files.size()) - 1;
}

// The plan for `signatures`, its models written into `dir`.
TimingPlan plan_timings(const SignatureCollector& signatures, const CalibrationTable& table,
                        const CalibrationOptions& options, const TempDir& dir,
                        CalibrationStats& stats) {
  TimingPlan plan;
  for (const std::string& signature : signatures.order()) {
    const SignatureCollector::Occurrence& o = signatures.at(signature);
    ++stats.signatures;
    Timing t{signature};
    for (std::size_t k = 0; k < o.in.size(); ++k)
      if (!o.in_weight[k] && is_image(o.in[k])) t.in.push_back(o.in[k].tensor().dims);
    const bool between = o.after_conv && o.op != Op::kConv && !t.in.empty();
    const bool mixed = between && o.mixed && t.in.size() >= 2;
    const bool masked = o.masked && o.op == Op::kSoftmax;
    if (!options.refresh && table.known.contains(signature) &&
        (!between || table.known_between.contains(signature)) &&
        (!mixed || table.known_mixed.contains(signature)) &&
        (!masked || table.known_masked.contains(signature))) {
      ++stats.cached;
      continue;
    }
    auto model = [&](Placement placement) {
      return write_model(timing_model(o.op, o.attributes, o.in, o.in_weight, o.out,
                                      fmt::format("op{}", plan.files.size()), *o.opsets, placement),
                         dir, plan.files);
    };
    t.alone = model(Placement::kAlone);
    if (t.alone < 0) {
      ++stats.skipped;
      continue;
    }
    if (between) {
      t.between = model(Placement::kBetweenConvolutions);
      for (const tensor::TensorType& part : o.out.parts)
        if (is_image(part)) t.out.push_back(part.dims);
    }
    if (mixed) t.mixed = model(Placement::kMixed);
    if (masked) t.masked = model(Placement::kMaskedScores);
    if (table.known.contains(signature)) plan.retimed.insert(signature);
    plan.timings.push_back(std::move(t));
  }
  return plan;
}

// Adds to `plan` the models that time `graphs`' products of quantized
// weights with each weight type, unless the table holds their figure.
void plan_weight_types(const std::vector<const Graph*>& graphs, const CalibrationTable& table,
                       const CalibrationOptions& options, const TempDir& dir, TimingPlan& plan) {
  if (table.table.contains(kIntegerWeights) && !options.refresh) return;
  for (const tensor::MatrixProduct& shape : quantized_product_shapes(graphs, kWeightTypeShapes)) {
    const std::string name = fmt::format("weights{}", plan.weight_products.size());
    const int u8 = write_model(weight_type_model(shape, tensor::DType::kUInt8, name + "_u8"), dir,
                               plan.files);
    const int s8 = write_model(weight_type_model(shape, tensor::DType::kInt8, name + "_s8"), dir,
                               plan.files);
    plan.weight_products.push_back(shape);
    plan.weight_models.emplace_back(u8, s8);
  }
}

// Records the figure for the quantized weights' type from the timed
// products (`models`: the harness's results, by index into the plan's files).
void record_weight_types(const TimingPlan& plan, const nlohmann::json& models,
                         nlohmann::json& table, CalibrationStats& stats) {
  if (plan.weight_products.empty()) return;
  auto time_of = [&](int k) -> std::optional<double> {
    if (k < 0 || static_cast<std::size_t>(k) >= models.size()) return std::nullopt;
    return kernel_us(models[k]);
  };
  std::vector<WeightTypeTiming> timings;
  nlohmann::json products = nlohmann::json::array();
  for (std::size_t i = 0; i < plan.weight_products.size(); ++i) {
    const tensor::MatrixProduct& shape = plan.weight_products[i];
    WeightTypeTiming t{shape, time_of(plan.weight_models[i].first),
                       time_of(plan.weight_models[i].second)};
    if (t.uint8_us && t.int8_us) {
      products.push_back({{"shape", {shape.rows, shape.depth, shape.columns}},
                          {"uint8_us", *t.uint8_us},
                          {"int8_us", *t.int8_us}});
    }
    timings.push_back(t);
  }
  const std::optional<double> per_mac = unsigned_weight_us_per_mac(timings);
  if (!per_mac) return;  // onnxruntime ran no product both ways
  stats.unsigned_weight_us_per_mac = per_mac;
  stats.weight_products = products.size();
  table[kIntegerWeights] = {{"unsigned_us_per_mac", *per_mac}, {"products", std::move(products)}};
}

// Drops the table's entries for the signatures timed again.
void drop_retimed(const std::set<std::string>& retimed, const CalibrationOptions& options,
                  CalibrationTable& t, CalibrationStats& stats) {
  if (retimed.empty()) return;  // timed alone before (or --refresh): timed again
  nlohmann::json kept = nlohmann::json::array();
  for (nlohmann::json& e : t.table["entries"])
    if (!retimed.contains(e["signature"].get<std::string>())) kept.push_back(std::move(e));
  t.table["entries"] = std::move(kept);
  if (!options.refresh) stats.stale += retimed.size();
}

// The machine the table names: what is left of the old table stays as
// measured where it was.
void record_machine(const std::string& here, CalibrationTable& t, CalibrationStats& stats) {
  nlohmann::json& table = t.table;
  if (t.recorded != here && !table["entries"].empty()) {
    stats.foreign = table["entries"].size();
    stats.foreign_machine = t.recorded;
    if (t.recorded.empty()) {
      table.erase("machine");
    } else {
      table["machine"] = t.recorded;
    }
  } else {
    table["machine"] = here;
  }
}

// Adds an entry to `table` for each timing whose model onnxruntime ran
// (`models`: the harness's results, by index into the plan's files).
void record_entries(const std::vector<Timing>& timings, const nlohmann::json& models,
                    nlohmann::json& table, CalibrationStats& stats) {
  auto ran = [&](int k) {
    return k >= 0 && static_cast<std::size_t>(k) < models.size() &&
           kernel_us(models[k]).has_value();
  };
  for (const Timing& t : timings) {
    if (!ran(t.alone)) {
      ++stats.skipped;  // onnxruntime could not run it
      continue;
    }
    const double alone = *kernel_us(models[t.alone]);
    nlohmann::json entry = {{"signature", t.signature}, {"us", alone}};
    if (t.between >= 0) {
      // The cost inside a convolutional network (nothing when onnxruntime
      // fused the operator into the convolution before it).
      entry["context"] = kBetweenConvolutions;
      entry["alone_us"] = alone;
      if (ran(t.between)) {
        if (std::optional<double> us = cost_between_convolutions(
                models[t.between].value("kernels", nlohmann::json::array()), t.in, t.out))
          entry["us"] = *us;
      }
      if (ran(t.mixed)) {
        // The plain input may be reordered into the blocked layout
        // instead, so reorders of an input's shape count both ways.
        std::vector<tensor::Dims> either_way = t.out;
        either_way.insert(either_way.end(), t.in.begin(), t.in.end());
        if (std::optional<double> us = cost_between_convolutions(
                models[t.mixed].value("kernels", nlohmann::json::array()), t.in, either_way))
          entry["mixed_us"] = *us;
      }
    }
    if (ran(t.masked)) {
      // The Softmax's own kernel, not the Add that masks its input.
      for (const nlohmann::json& k : models[t.masked].value("kernels", nlohmann::json::array())) {
        if (k.value("op", "") == "Softmax") entry["masked_us"] = k.value("us", 0.0);
      }
    }
    table["entries"].push_back(std::move(entry));
    ++stats.measured;
  }
}

// Times the plan's models, corrected by the profiler's excess, and records
// their entries. The correction is `kept` (the table's, from this machine)
// or measured first, and recorded in `table` unless the table keeps another
// machine's entries (stats.foreign): its correction is that machine's, which
// a later run there takes for its own.
absl::Status time_plan(const TimingPlan& plan, const TempDir& dir,
                       const CalibrationOptions& options,
                       const std::optional<ProfilerCorrection>& kept, nlohmann::json& table,
                       CalibrationStats& stats) {
  absl::StatusOr<ProfilerCorrection> correction =
      kept ? *kept : measure_profiler_correction(dir, options);
  if (!correction.ok()) return correction.status();
  stats.correction = *correction;
  stats.correction_kept = kept.has_value();
  if (stats.foreign == 0)
    table["profiler_correction"] = {{"excess_us", correction->excess_us},
                                    {"floor_us", correction->floor_us}};
  CalibrationOptions corrected = options;
  corrected.runtime.kernel_offset_us = correction->excess_us;
  corrected.runtime.kernel_floor_us = correction->floor_us;
  absl::StatusOr<nlohmann::json> timed = time_models_fastest(plan.files, corrected);
  if (!timed.ok()) return timed.status();
  record_entries(plan.timings, *timed, table, stats);
  record_weight_types(plan, *timed, table, stats);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CalibrationStats> calibrate(const std::vector<const Graph*>& graphs,
                                           const std::string& table_path,
                                           const CalibrationOptions& options) {
  const std::string here = machine_description();
  CalibrationStats stats;
  absl::StatusOr<CalibrationTable> table =
      load_table(table_path, here, options.runtime.threads, stats);
  if (!table.ok()) return table.status();
  if (absl::Status s = check_options(options.runtime); !s.ok()) return s;
  if (options.passes < 1)
    return absl::InvalidArgumentError("the number of passes must be at least 1");
  TempDir dir;
  if (absl::Status s = dir.status(); !s.ok()) return s;
  absl::StatusOr<SignatureCollector> signatures = collect_signatures(graphs, options.explore_nodes);
  if (!signatures.ok()) return signatures.status();
  TimingPlan plan = plan_timings(*signatures, *table, options, dir, stats);
  plan_weight_types(graphs, *table, options, dir, plan);
  drop_retimed(plan.retimed, options, *table, stats);
  record_machine(here, *table, stats);
  if (!plan.files.empty()) {
    // The table's correction serves while its entries come from here.
    std::optional<ProfilerCorrection> kept;
    if (table->recorded == here && !options.refresh) kept = table->correction;
    if (absl::Status s = time_plan(plan, dir, options, kept, table->table, stats); !s.ok())
      return s;
  }
  if (absl::Status s = write_text_file(table_path, table->table.dump(1) + "\n"); !s.ok()) return s;
  return stats;
}

std::string describe_foreign(const CalibrationStats& s) {
  return fmt::format("{} entries measured on {}, not on this machine ({})", s.foreign,
                     s.foreign_machine.empty() ? "a machine it does not name" : s.foreign_machine,
                     machine_description());
}

}  // namespace saturn::ort

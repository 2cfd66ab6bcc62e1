#include "tools/runtime.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <sys/wait.h>

#include "costmodel/cost_model.h"
#include "egraph/file.h"
#include "egraph/status.h"
#include "fmt/format.h"
#include "rules/runner.h"
#include "rules/tensor/tensor_rules.h"
#include "tensor/analysis.h"
#include "tensor/builder.h"
#include "tensor/infer.h"
#include "tensor/onnx.h"

namespace saturn::cli {

namespace fs = std::filesystem;
using tensor::Graph;
using tensor::Node;
using tensor::Op;

namespace {

// Where the harness lives: $SATURN_ORT_DIR, or tools/ort in the source tree.
fs::path harness_dir() {
  if (const char* dir = std::getenv("SATURN_ORT_DIR")) return dir;
  return SATURN_ORT_DIR;
}

// The most onnxruntime threads a run asks for.
constexpr int kMaxRuntimeThreads = 256;

// The options' ranges, checked before node is started.
absl::Status check_options(const RuntimeOptions& o) {
  if (o.runs < 1) return absl::InvalidArgumentError("the number of runs must be at least 1");
  if (o.warmup < 0)
    return absl::InvalidArgumentError("the number of warm-up runs must be at least 0");
  if (o.threads < 1 || o.threads > kMaxRuntimeThreads)
    return absl::InvalidArgumentError(fmt::format(
        "onnxruntime's threads must be between 1 and {}, got {}", kMaxRuntimeThreads, o.threads));
  if (!(o.rtol >= 0 && o.atol >= 0 && std::isfinite(o.rtol) && std::isfinite(o.atol)))
    return absl::InvalidArgumentError(fmt::format(
        "the tolerances must be finite and at least 0, got rtol {} and atol {}", o.rtol, o.atol));
  return absl::OkStatus();
}

// Runs `node ort-run.js ARGS...` and parses what it prints.
absl::StatusOr<nlohmann::json> run_harness(const std::vector<std::string>& args,
                                           const RuntimeOptions& o) {
  if (absl::Status s = check_options(o); !s.ok()) return s;
  const fs::path dir = harness_dir();
  if (!fs::exists(dir / "node_modules" / "onnxruntime-node")) {
    return absl::FailedPreconditionError(
        fmt::format("onnxruntime-node is not installed in {} (tools/install-deps.sh installs it)",
                    dir.string()));
  }
  std::vector<std::string> words = {(dir / "ort-run.js").string()};
  words.insert(words.end(), args.begin(), args.end());
  std::string cmd = "node";
  for (const std::string& w : words) {
    cmd.push_back(' ');
    cmd.append(shell_quote(w));
  }
  cmd += fmt::format(
      " --runs {} --warmup {} --rtol {} --atol {} --seed {} --threads {} --profile {} "
      "--kernel-offset {} --kernel-floor {}",
      o.runs, o.warmup, o.rtol, o.atol, o.seed, o.threads, o.profile ? 1 : 0, o.kernel_offset_us,
      o.kernel_floor_us);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("cannot start a shell to run node");
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return absl::FailedPreconditionError("Node.js (node) is not installed");
  if (status != 0) {
    return absl::InternalError(
        "onnxruntime could not run the models (its message is above on stderr)");
  }
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return absl::InternalError("the onnxruntime harness printed no JSON");
  return j;
}

// Whether `t` is a 4-D float tensor, the layout (NCHW) onnxruntime's CPU
// provider runs convolution chains in its blocked form.
bool is_image(const tensor::TensorType& t) {
  return t.dtype == tensor::DType::kFloat32 && t.dims.size() == 4 && t.is_static();
}
bool is_image(const tensor::ValueType& t) { return !t.is_tuple && is_image(t.tensor()); }

// Times `files` with the harness's "time" command, one result per file (an
// "error" field where onnxruntime could not run it). The files go to the
// harness in batches, each in a fresh process, and when onnxruntime crashes
// on a batch its files are timed one by one, so that one model that crashes
// it costs only its own entry.
absl::StatusOr<nlohmann::json> time_models(const std::vector<std::string>& files,
                                           const RuntimeOptions& options) {
  constexpr std::size_t kBatch = 64;
  nlohmann::json out = nlohmann::json::array();
  auto run = [&](std::size_t begin, std::size_t end) {
    std::vector<std::string> args = {"time"};
    args.insert(args.end(), files.begin() + begin, files.begin() + end);
    absl::StatusOr<nlohmann::json> j = run_harness(args, options);
    if (j.ok() && (!j->contains("models") || (*j)["models"].size() != end - begin))
      return absl::StatusOr<nlohmann::json>(
          absl::InternalError("the onnxruntime harness timed another number of models"));
    return j.ok() ? absl::StatusOr<nlohmann::json>((*j)["models"]) : j;
  };
  for (std::size_t begin = 0; begin < files.size(); begin += kBatch) {
    const std::size_t end = std::min(files.size(), begin + kBatch);
    absl::StatusOr<nlohmann::json> batch = run(begin, end);
    if (batch.ok()) {
      for (nlohmann::json& m : *batch) out.push_back(std::move(m));
      continue;
    }
    if (absl::IsFailedPrecondition(batch.status())) return batch.status();  // no Node.js
    for (std::size_t k = begin; k < end; ++k) {
      absl::StatusOr<nlohmann::json> one = run(k, k + 1);
      out.push_back(one.ok() ? (*one)[0]
                             : nlohmann::json{{"model", files[k]},
                                              {"error", std::string(message(one.status()))}});
    }
  }
  return out;
}

// A time (`key`) of a model as time_models reports it; nothing where
// onnxruntime could not run the model.
std::optional<double> reported_us(const nlohmann::json& model, const char* key) {
  auto it = model.find(key);
  if (it == model.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}
std::optional<double> kernel_us(const nlohmann::json& model) {
  return reported_us(model, "kernel_us");
}

// Times `files` in `options.passes` passes (see CalibrationOptions::passes)
// and keeps, per file, the result of the pass whose kernels took least.
absl::StatusOr<nlohmann::json> time_models_fastest(const std::vector<std::string>& files,
                                                   const CalibrationOptions& options) {
  auto slowness = [](const nlohmann::json& m) {
    return kernel_us(m).value_or(std::numeric_limits<double>::infinity());
  };
  nlohmann::json fastest;
  for (int pass = 0; pass < options.passes; ++pass) {
    absl::StatusOr<nlohmann::json> timed = time_models(files, options.runtime);
    if (!timed.ok()) return timed.status();
    if (pass == 0) {
      fastest = std::move(*timed);
      continue;
    }
    for (std::size_t k = 0; k < files.size(); ++k) {
      if (slowness((*timed)[k]) < slowness(fastest[k])) fastest[k] = std::move((*timed)[k]);
    }
  }
  return fastest;
}

// Measures the ProfilerCorrection: chains of alternating Relu and Tanh of 64
// values, 16 and 216 operators long, timed with the profiler (their kernel
// time) and without (their runs' wall time). Per operator the longer chain
// adds, the kernel time less the wall time is the excess, and the wall time
// is the floor. The profiler's excess grows when the machine slows down (it
// measured 3.4-9 us), so the two timings alternate, in rounds that each see
// the machine at one speed, and the median round counts.
absl::StatusOr<ProfilerCorrection> measure_profiler_correction(const TempDir& dir,
                                                               const CalibrationOptions& options) {
  constexpr int kShort = 16, kLong = 216, kRounds = 5;
  std::vector<std::string> files;
  for (int length : {kShort, kLong}) {
    tensor::GraphBuilder b(fmt::format("chain{}", length));
    tensor::Value v = b.input("x", {1, 64});
    for (int i = 0; i < length; ++i) v = i % 2 == 0 ? b.relu(v) : b.tanh(v);
    b.output(v, "y");
    absl::StatusOr<Graph> g = b.build();
    if (!g.ok()) return g.status();
    files.push_back((dir.path() / (g->name + ".onnx")).string());
    if (absl::Status s = tensor::save_onnx_model(*g, files.back()); !s.ok()) return s;
  }
  RuntimeOptions timing = options.runtime;
  timing.runs = std::max(options.runtime.runs, 100);  // runs of 20-200 us
  timing.kernel_offset_us = timing.kernel_floor_us = 0;
  auto per_operator = [&](bool profile, const char* key) -> absl::StatusOr<double> {
    timing.profile = profile;
    absl::StatusOr<nlohmann::json> timed = time_models(files, timing);
    if (!timed.ok()) return timed.status();
    const std::optional<double> short_us = reported_us((*timed)[0], key);
    const std::optional<double> long_us = reported_us((*timed)[1], key);
    if (!short_us || !long_us)
      return absl::InternalError("onnxruntime could not time the chains that measure its profiler");
    return (*long_us - *short_us) / (kLong - kShort);
  };
  std::vector<double> excess, floor;
  for (int round = 0; round < kRounds; ++round) {
    absl::StatusOr<double> kernel = per_operator(true, "kernel_us");
    if (!kernel.ok()) return kernel.status();
    absl::StatusOr<double> wall = per_operator(false, "median_us");
    if (!wall.ok()) return wall.status();
    excess.push_back(*kernel - *wall);
    floor.push_back(*wall);
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return std::max(0.0, v[v.size() / 2]);
  };
  return ProfilerCorrection{median(excess), median(floor)};
}

}  // namespace

std::optional<Graph> timing_model(Op op, const Attributes& attributes,
                                  std::span<const tensor::ValueType> in,
                                  const std::vector<bool>& in_weight, const tensor::ValueType& out,
                                  std::string name, const tensor::Opsets& opsets,
                                  Placement placement) {
  // An opaque node whose subgraphs read enclosing values cannot stand alone.
  if (attributes.get_int("explicit_inputs").has_value()) return std::nullopt;
  Graph g;
  g.name = std::move(name);
  g.opsets = opsets;
  auto leaf = [&](Op kind, std::string leaf_name, tensor::Dims dims, tensor::DType dtype) {
    g.nodes.push_back(
        Node{kind, tensor::leaf_attributes(leaf_name, std::move(dims), dtype), {}, leaf_name});
    return g.size() - 1;
  };
  auto conv = [&](int x, int w, tensor::Dims strides) {
    absl::StatusOr<Attributes> a = tensor::normalize_attributes(
        Op::kConv, Attributes{{"strides", std::move(strides)}, {"pads", tensor::Dims{0, 0, 0, 0}}});
    g.nodes.push_back(Node{Op::kConv, *std::move(a), {x, w}, fmt::format("ctx_conv{}", g.size())});
    return g.size() - 1;
  };
  const bool between_convolutions = placement != Placement::kAlone;
  // The activation input left plain (kMixed), or none.
  std::optional<std::size_t> plain;
  int activations = 0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (in_weight[k] || !is_image(in[k])) continue;
    if (activations++ == 0 && placement == Placement::kMixed) plain = k;
  }
  if (placement == Placement::kMixed && activations < 2) return std::nullopt;
  Node copy{op, attributes, {}, "y"};
  for (std::size_t k = 0; k < in.size(); ++k) {
    const tensor::ValueType& t = in[k];
    if (t.is_tuple || t.tensor().dtype == tensor::DType::kOther || !t.tensor().is_static())
      return std::nullopt;
    const tensor::Dims& d = t.tensor().dims;
    if (between_convolutions && !in_weight[k] && is_image(t) && plain != k) {
      const int x = leaf(Op::kInput, fmt::format("ctx_in{}", k), {d[0], 4, d[2], d[3]},
                         tensor::DType::kFloat32);
      const int w =
          leaf(Op::kWeight, fmt::format("ctx_w{}", k), {d[1], 4, 1, 1}, tensor::DType::kFloat32);
      copy.inputs.push_back(conv(x, w, {1, 1}));
      continue;
    }
    copy.inputs.push_back(
        leaf(in_weight[k] ? Op::kWeight : Op::kInput, fmt::format("in{}", k), d, t.tensor().dtype));
  }
  g.nodes.push_back(copy);
  const int node = g.size() - 1;
  auto output = [&](int value, const tensor::TensorType& t, std::string output_name) {
    if (between_convolutions && is_image(t)) {
      const tensor::Dims& d = t.dims;
      const int w =
          leaf(Op::kWeight, "ctx_" + output_name + "_w", {8, d[1], 1, 1}, tensor::DType::kFloat32);
      value = conv(value, w, {d[2], d[3]});
    }
    g.outputs.push_back({value, std::move(output_name)});
  };
  if (out.is_tuple) {
    for (std::size_t p = 0; p < out.parts.size(); ++p) {
      g.nodes.push_back(Node{
          Op::kTupleGet, {{"index", static_cast<std::int64_t>(p)}}, {node}, fmt::format("y{}", p)});
      output(g.size() - 1, out.parts[p], fmt::format("y{}", p));
    }
  } else {
    output(node, out.tensor(), "y");
  }
  return g;
}

std::optional<double> cost_between_convolutions(const nlohmann::json& kernels,
                                                const std::vector<tensor::Dims>& in,
                                                const std::vector<tensor::Dims>& out) {
  auto shape_in = [](const nlohmann::json& shape, const std::vector<tensor::Dims>& list) {
    if (!shape.is_array()) return false;
    const tensor::Dims d = shape.get<tensor::Dims>();
    return std::find(list.begin(), list.end(), d) != list.end();
  };
  double own = 0, reorders = 0;
  bool context_ran = false;
  for (const nlohmann::json& k : kernels) {
    const std::string op = k.value("op", "");
    const double us = k.value("us", 0.0);
    if (op == "Conv") {  // the context
      context_ran = true;
      continue;
    }
    if (op == "ReorderOutput") {
      if (shape_in(k["output"], in)) reorders += us;
    } else if (op == "ReorderInput") {
      if (shape_in(k["input"], out)) reorders += us;
    } else {
      own += us;
    }
  }
  if (!context_ran) return std::nullopt;
  return own + reorders;
}

// `text` in single quotes for the shell (a quote inside becomes '\'').
std::string shell_quote(const std::string& text) {
  std::string out(1, '\'');
  for (char c : text) {
    if (c == '\'') {
      out.append("'\\''");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

TempDir::TempDir() {
  std::error_code ec;
  const fs::path base = fs::temp_directory_path(ec);
  if (ec) return;
  std::string pattern = (base / "saturn-XXXXXX").string();
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

absl::Status TempDir::status() const {
  return path_.empty() ? absl::InternalError("cannot create a temporary directory")
                       : absl::OkStatus();
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

absl::StatusOr<std::string> runtime_file(const std::string& model, const Graph& graph,
                                         const TempDir& dir, const std::string& stem,
                                         const tensor::OnnxImportOptions& onnx) {
  if (absl::Status s = dir.status(); !s.ok()) return s;
  const std::string path = (dir.path() / (stem + ".onnx")).string();
  if (model.ends_with(".onnx")) {
    absl::StatusOr<std::string> bytes = tensor::runtime_onnx_model(model, onnx);
    if (!bytes.ok()) return bytes.status();
    if (absl::Status s = write_text_file(path, *bytes); !s.ok()) return s;
    return path;
  }
  if (absl::Status s = tensor::save_onnx_model(graph, path); !s.ok()) return s;
  return path;
}

absl::StatusOr<VerifyReport> verify_models(const std::string& original,
                                           const std::string& optimized,
                                           const RuntimeOptions& options) {
  absl::StatusOr<nlohmann::json> j = run_harness({"verify", original, optimized}, options);
  if (!j.ok()) return j.status();
  VerifyReport r;
  r.ok = j->value("ok", false);
  r.speedup = j->value("speedup", 0.0);
  r.json = std::move(*j);
  return r;
}

std::string describe(const ProfilerCorrection& c) {
  return fmt::format("each kernel's time less {:.2f} us that the profiler adds, at least {:.2f} us",
                     c.excess_us, c.floor_us);
}

std::string describe_foreign(const CalibrationStats& s) {
  return fmt::format("{} entries measured on {}, not on this machine ({})", s.foreign,
                     s.foreign_machine.empty() ? "a machine it does not name" : s.foreign_machine,
                     machine_description());
}

std::string describe(const VerifyReport& r) {
  std::string out;
  for (const nlohmann::json& o : r.json["outputs"]) {
    const bool ok = o.value("ok", false);
    out += fmt::format("  output {:<20} {}", o.value("name", "?"), ok ? "match" : "MISMATCH");
    if (o.contains("max_abs_diff") && o["max_abs_diff"].is_number() && o.contains("error_ratio") &&
        o["error_ratio"].is_number())
      out += fmt::format(" (max |diff| {:.3g}, error ratio {:.3g})",
                         o["max_abs_diff"].get<double>(), o["error_ratio"].get<double>());
    if (o.contains("detail")) out += ": " + o["detail"].get<std::string>();
    out += "\n";
  }
  const nlohmann::json& a = r.json["latency"]["original"];
  const nlohmann::json& b = r.json["latency"]["optimized"];
  auto ms = [](const nlohmann::json& s, const char* key) { return s[key].get<double>() / 1000.0; };
  out += fmt::format(
      "  onnxruntime CPU latency, median of {} runs [p10, p90]: original {:.3f} ms [{:.3f}, "
      "{:.3f}], optimized {:.3f} ms [{:.3f}, {:.3f}]\n",
      a["runs"].get<int>(), ms(a, "median_us"), ms(a, "p10_us"), ms(a, "p90_us"),
      ms(b, "median_us"), ms(b, "p10_us"), ms(b, "p90_us"));
  out += fmt::format(
      "  speedup {:.3f}x (median over run pairs) [p10 {:.3f}, p90 {:.3f}]; outputs {}\n", r.speedup,
      r.json["speedup_p10"].get<double>(), r.json["speedup_p90"].get<double>(),
      r.ok ? "match" : "DIFFER");
  return out;
}

absl::StatusOr<CalibrationStats> calibrate(const std::vector<const Graph*>& graphs,
                                           const std::string& table_path,
                                           const CalibrationOptions& options) {
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
  const std::string here = machine_description();
  std::string recorded = here;  // the machine the table's entries come from
  // The table so far (the cache).
  nlohmann::json table = {{"device", "onnxruntime-cpu"},
                          {"method", kMethod},
                          {"attribution", kAttribution},
                          {"entries", nlohmann::json::array()}};
  // Timed; timed between convolutions too; timed mixed too.
  std::set<std::string> known, known_between, known_mixed;
  CalibrationStats stats;
  if (fs::exists(table_path)) {
    absl::StatusOr<std::unique_ptr<MeasuredCostModel>> check =
        load_measured_cost_model(table_path, RooflineCostModel(DeviceProfile{}));
    if (!check.ok()) return check.status();
    absl::StatusOr<std::string> text = read_text_file(table_path);
    if (!text.ok()) return text.status();
    nlohmann::json old = nlohmann::json::parse(*text);
    if (old.value("method", nlohmann::json()) == kMethod) {
      const bool current = old.value("attribution", nlohmann::json(1)) == kAttribution;
      table["entries"] = nlohmann::json::array();
      for (nlohmann::json& e : old["entries"]) {
        const bool between = e.value("context", nlohmann::json()) == kBetweenConvolutions;
        if (between && !current) {
          ++stats.stale;  // attributed another way: measured again
          continue;
        }
        known.insert(e["signature"].get<std::string>());
        if (between) known_between.insert(e["signature"].get<std::string>());
        if (e.contains("mixed_us")) known_mixed.insert(e["signature"].get<std::string>());
        table["entries"].push_back(std::move(e));
      }
      if (old.contains("device")) table["device"] = old["device"];
      // What the kept entries were corrected by (replaced when timing now).
      if (old.contains("profiler_correction"))
        table["profiler_correction"] = old["profiler_correction"];
      recorded = old.value("machine", std::string());
    } else {
      stats.stale = old["entries"].size();  // measured another way: measured again
    }
  }
  if (absl::Status s = check_options(options.runtime); !s.ok()) return s;
  if (options.passes < 1)
    return absl::InvalidArgumentError("the number of passes must be at least 1");
  TempDir dir;
  if (absl::Status s = dir.status(); !s.ok()) return s;
  // Each distinct operator signature of the models, in the order first met;
  // `after_conv`: some occurrence reads a convolution's output; `mixed`:
  // some occurrence's inputs may mix convolution outputs with other values.
  struct Occurrence {
    Op op;
    Attributes attributes;
    std::vector<tensor::ValueType> in;
    std::vector<bool> in_weight;
    tensor::ValueType out;
    bool after_conv = false;
    const tensor::Opsets* opsets = nullptr;  // of the model it comes from
    bool mixed = false;
  };
  std::vector<std::string> order;
  std::map<std::string, Occurrence> occurrences;
  auto add = [&](Op op, const Attributes& attributes, std::span<const tensor::ValueType> in,
                 const std::vector<bool>& in_weight, const tensor::ValueType& out,
                 OpContext context, const tensor::Opsets& opsets) {
    std::string signature = op_signature(op, attributes, in);
    auto [it, fresh] = occurrences.try_emplace(signature);
    if (fresh) {
      it->second =
          Occurrence{op, attributes, {in.begin(), in.end()}, in_weight, out, false, &opsets};
      order.push_back(std::move(signature));
    }
    it->second.after_conv |= context.input != FromConvolution::kNo;
    it->second.mixed |= context.mixed != FromConvolution::kNo;
  };
  const OpContext after_conv{.input = FromConvolution::kYes};
  // The activations fused into a convolution somewhere: the rules can fuse
  // them into every convolution (fuse-conv-relu), so each is timed after
  // every convolution too.
  std::set<Op> fused_kinds;
  auto consider = [&](Op op, const Attributes& attributes, std::span<const tensor::ValueType> in,
                      const std::vector<bool>& in_weight, const tensor::ValueType& out,
                      OpContext context, const Graph& model) {
    if (fuses_into_convolution(op) && context.input != FromConvolution::kNo) fused_kinds.insert(op);
    std::vector<OpPart> parts = priced_as_parts(op, attributes, in.size());
    if (parts.empty()) return add(op, attributes, in, in_weight, out, context, model.opsets);
    // Priced as its parts (see priced_as_parts).
    std::vector<bool> part_weight;
    for (const OpPart& part : parts) {
      part_weight.clear();
      for (int i : part.inputs) part_weight.push_back(i != kPreviousPart && in_weight[i]);
      if (part.reads_convolution) fused_kinds.insert(part.op);
      add(part.op, part.attributes, part_input_types(part, in, out), part_weight, out,
          part.reads_convolution ? after_conv : context, model.opsets);
    }
  };

  // The rules that explore each model's rewrites, loaded once.
  tensor::TensorLanguage language;
  const ConditionRegistry conditions = tensor_conditions();
  RuleSet rules;
  if (options.explore_nodes > 0) {
    absl::StatusOr<RuleSet> loaded = load_tensor_rules(language, conditions);
    if (!loaded.ok()) return loaded.status();
    rules = *std::move(loaded);
  }
  std::vector<tensor::ValueType> in;
  std::vector<bool> in_weight;
  for (const Graph* graph : graphs) {
    absl::StatusOr<std::vector<tensor::ValueType>> types = tensor::infer_types(*graph);
    if (!types.ok()) return with_context(types.status(), graph->name);
    const std::vector<bool> weight_only = tensor::weight_only_nodes(*graph);
    const std::vector<ValueKinds> kinds = value_kinds(*graph, weight_only);
    for (int i = 0; i < graph->size(); ++i) {
      const Node& n = graph->nodes[i];
      if (is_free_operator(n.op) || weight_only[i]) continue;
      in.clear();
      in_weight.clear();
      for (int x : n.inputs) {
        in.push_back((*types)[x]);
        in_weight.push_back(weight_only[x]);
      }
      consider(n.op, n.attributes, in, in_weight, (*types)[i],
               node_context(*graph, weight_only, kinds, i), *graph);
    }
    if (options.explore_nodes == 0) continue;
    // The operators the rules can rewrite the model into: grow its e-graph
    // under the budget and take every e-node's signature.
    tensor::TensorAnalysis shapes;
    EGraph egraph(language, &shapes);
    if (absl::Status s = tensor::add_graph(egraph, *graph).status(); !s.ok())
      return with_context(s, graph->name);
    Runner()
        .with_node_limit(options.explore_nodes)
        .with_iteration_limit(30)
        .with_time_limit(std::chrono::seconds(30))
        .run(egraph, rules);
    const ConvolutionOutputs egraph_conv_outputs(egraph, shapes);
    for (Id id : egraph.class_ids()) {
      const tensor::TensorInfo& info = shapes.info(id);
      if (info.weight_only) continue;
      for (const ENode& e : egraph.nodes(id)) {
        const Op op = tensor::TensorLanguage::op(e.op);
        if (is_free_operator(op)) continue;
        in.clear();
        in_weight.clear();
        for (Id c : e.children) {
          const tensor::TensorInfo& child = shapes.info(egraph.find(c));
          in.push_back(child.type);
          in_weight.push_back(child.weight_only);
        }
        consider(op, egraph.attrs().get(e.attrs), in, in_weight, info.type,
                 node_context(egraph, shapes, egraph_conv_outputs, e), *graph);
      }
    }
  }
  // Each distinct convolution once (add() only appends to `order`; map
  // entries stay where they are).
  for (std::size_t i = 0, n = order.size(); i < n; ++i) {
    const Occurrence& conv = occurrences.at(order[i]);
    if (conv.op != Op::kConv) continue;
    const std::array<tensor::ValueType, 1> conv_output{conv.out};
    for (Op kind : fused_kinds)
      add(kind, {}, conv_output, {false}, conv.out, after_conv, *conv.opsets);
  }
  // What to time: every signature not in the table, those the table holds
  // timed alone that now read a convolution's output, and those it holds
  // without a mixed time whose inputs may now be mixed.
  struct Timing {
    std::string signature;
    int alone = -1, between = -1, mixed = -1;  // indices into `files`
    std::vector<tensor::Dims> in, out;         // its 4-D activations
  };
  std::vector<std::string> files;
  std::vector<Timing> timings;
  std::set<std::string> retimed;
  auto write_model = [&](const std::optional<Graph>& g) {
    if (!g) return -1;
    const std::string file = (dir.path() / (g->name + ".onnx")).string();
    if (!tensor::save_onnx_model(*g, file).ok()) return -1;
    files.push_back(file);
    return static_cast<int>(files.size()) - 1;
  };
  for (const std::string& signature : order) {
    const Occurrence& o = occurrences.at(signature);
    ++stats.signatures;
    Timing t{signature};
    for (std::size_t k = 0; k < o.in.size(); ++k)
      if (!o.in_weight[k] && is_image(o.in[k])) t.in.push_back(o.in[k].tensor().dims);
    const bool between = o.after_conv && o.op != Op::kConv && !t.in.empty();
    const bool mixed = between && o.mixed && t.in.size() >= 2;
    if (!options.refresh && known.contains(signature) &&
        (!between || known_between.contains(signature)) &&
        (!mixed || known_mixed.contains(signature))) {
      ++stats.cached;
      continue;
    }
    auto model = [&](Placement placement) {
      return write_model(timing_model(o.op, o.attributes, o.in, o.in_weight, o.out,
                                      fmt::format("op{}", files.size()), *o.opsets, placement));
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
    if (known.contains(signature)) retimed.insert(signature);
    timings.push_back(std::move(t));
  }
  if (!retimed.empty()) {  // timed alone before (or --refresh): timed again
    nlohmann::json kept = nlohmann::json::array();
    for (nlohmann::json& e : table["entries"])
      if (!retimed.contains(e["signature"].get<std::string>())) kept.push_back(std::move(e));
    table["entries"] = std::move(kept);
    if (!options.refresh) stats.stale += retimed.size();
  }
  // What is left of the old table stays as measured where it was.
  if (recorded != here && !table["entries"].empty()) {
    stats.foreign = table["entries"].size();
    stats.foreign_machine = recorded;
    if (recorded.empty()) {
      table.erase("machine");
    } else {
      table["machine"] = recorded;
    }
  } else {
    table["machine"] = here;
  }
  if (!files.empty()) {
    absl::StatusOr<ProfilerCorrection> correction = measure_profiler_correction(dir, options);
    if (!correction.ok()) return correction.status();
    stats.correction = *correction;
    table["profiler_correction"] = {{"excess_us", correction->excess_us},
                                    {"floor_us", correction->floor_us}};
    CalibrationOptions corrected = options;
    corrected.runtime.kernel_offset_us = correction->excess_us;
    corrected.runtime.kernel_floor_us = correction->floor_us;
    absl::StatusOr<nlohmann::json> timed = time_models_fastest(files, corrected);
    if (!timed.ok()) return timed.status();
    const nlohmann::json& models = *timed;
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
      table["entries"].push_back(std::move(entry));
      ++stats.measured;
    }
  }
  if (absl::Status s = write_text_file(table_path, table.dump(1) + "\n"); !s.ok()) return s;
  return stats;
}

}  // namespace saturn::cli

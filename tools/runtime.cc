#include "tools/runtime.h"

#include <cstdio>
#include <cstdlib>
#include <set>

#include <sys/wait.h>

#include "costmodel/cost_model.h"
#include "egraph/file.h"
#include "egraph/status.h"
#include "fmt/format.h"
#include "rules/runner.h"
#include "rules/tensor/tensor_rules.h"
#include "tensor/analysis.h"
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

// Runs `node ort-run.js ARGS...` and parses what it prints.
absl::StatusOr<nlohmann::json> run_harness(const std::vector<std::string>& args,
                                           const RuntimeOptions& o) {
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
  cmd += fmt::format(" --runs {} --warmup {} --rtol {} --atol {} --seed {} --threads {}", o.runs,
                     o.warmup, o.rtol, o.atol, o.seed, o.threads);
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

}  // namespace

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
  if (options.runs < 1) return absl::InvalidArgumentError("the number of runs must be at least 1");
  absl::StatusOr<nlohmann::json> j = run_harness({"verify", original, optimized}, options);
  if (!j.ok()) return j.status();
  VerifyReport r;
  r.ok = j->value("ok", false);
  r.speedup = j->value("speedup", 0.0);
  r.json = std::move(*j);
  return r;
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
  // cost of moving a single operator's inputs and outputs.
  constexpr const char* kMethod = "onnxruntime-kernel-time";
  // The table so far (the cache).
  nlohmann::json table = {
      {"device", "onnxruntime-cpu"}, {"method", kMethod}, {"entries", nlohmann::json::array()}};
  std::set<std::string> known;
  CalibrationStats stats;
  if (fs::exists(table_path)) {
    absl::StatusOr<std::unique_ptr<MeasuredCostModel>> check =
        load_measured_cost_model(table_path, RooflineCostModel(DeviceProfile{}));
    if (!check.ok()) return check.status();
    absl::StatusOr<std::string> text = read_text_file(table_path);
    if (!text.ok()) return text.status();
    nlohmann::json old = nlohmann::json::parse(*text);
    if (old.value("method", "") == kMethod) {
      table = std::move(old);
      for (const nlohmann::json& e : table["entries"])
        known.insert(e["signature"].get<std::string>());
    } else {
      stats.stale = old["entries"].size();  // measured another way: measured again
    }
  }
  if (options.runtime.runs < 1)
    return absl::InvalidArgumentError("the number of runs must be at least 1");
  TempDir dir;
  if (absl::Status s = dir.status(); !s.ok()) return s;
  std::vector<std::string> files, signatures;
  std::set<std::string> seen;
  // One operator over fresh inputs (weights stay weights, so the runtime can
  // prepare them as it would in the model), written as a model to time.
  auto consider = [&](Op op, const Attributes& attributes, std::span<const tensor::ValueType> in,
                      const std::vector<bool>& in_weight, const tensor::ValueType& out,
                      const tensor::Graph& context) {
    const std::string signature = op_signature(op, attributes, in);
    if (!seen.insert(signature).second) return;
    ++stats.signatures;
    if (known.contains(signature)) {
      ++stats.cached;
      return;
    }
    Graph single;
    single.name = fmt::format("op{}", files.size());
    single.opsets = context.opsets;
    // An opaque node whose subgraphs read enclosing values cannot stand alone.
    bool representable = !attributes.get_int("explicit_inputs").has_value();
    Node copy{op, attributes, {}, "y"};
    for (std::size_t k = 0; k < in.size() && representable; ++k) {
      const tensor::ValueType& t = in[k];
      if (t.is_tuple || t.tensor().dtype == tensor::DType::kOther || !t.tensor().is_static()) {
        representable = false;
        break;
      }
      const std::string name = fmt::format("in{}", k);
      Attributes a = tensor::leaf_attributes(name, t.tensor().dims, t.tensor().dtype);
      single.nodes.push_back(Node{in_weight[k] ? Op::kWeight : Op::kInput, a, {}, name});
      copy.inputs.push_back(static_cast<int>(k));
    }
    if (!representable) {
      ++stats.skipped;
      return;
    }
    single.nodes.push_back(copy);
    const int node = single.size() - 1;
    if (out.is_tuple) {
      for (std::size_t p = 0; p < out.parts.size(); ++p) {
        single.nodes.push_back(Node{Op::kTupleGet,
                                    {{"index", static_cast<std::int64_t>(p)}},
                                    {node},
                                    fmt::format("y{}", p)});
        single.outputs.push_back({single.size() - 1, fmt::format("y{}", p)});
      }
    } else {
      single.outputs.push_back({node, "y"});
    }
    const std::string file = (dir.path() / (single.name + ".onnx")).string();
    if (absl::Status s = tensor::save_onnx_model(single, file); !s.ok()) {
      ++stats.skipped;
      return;
    }
    files.push_back(file);
    signatures.push_back(signature);
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
    for (int i = 0; i < graph->size(); ++i) {
      const Node& n = graph->nodes[i];
      if (is_free_operator(n.op) || weight_only[i]) continue;
      in.clear();
      in_weight.clear();
      for (int x : n.inputs) {
        in.push_back((*types)[x]);
        in_weight.push_back(weight_only[x]);
      }
      consider(n.op, n.attributes, in, in_weight, (*types)[i], *graph);
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
    for (Id id : egraph.class_ids()) {
      const tensor::TensorInfo& info = shapes.info(id);
      if (info.weight_only) continue;
      for (const ENode& e : egraph.nodes(id)) {
        const Op op = tensor::TensorLanguage::op(e.op);
        if (is_free_operator(op)) continue;
        in.clear();
        in_weight.clear();
        for (Id c : e.children) {
          in.push_back(shapes.info(egraph.find(c)).type);
          in_weight.push_back(shapes.info(egraph.find(c)).weight_only);
        }
        consider(op, egraph.attrs().get(e.attrs), in, in_weight, info.type, *graph);
      }
    }
  }
  if (!files.empty()) {
    std::vector<std::string> args = {"time"};
    args.insert(args.end(), files.begin(), files.end());
    absl::StatusOr<nlohmann::json> j = run_harness(args, options.runtime);
    if (!j.ok()) return j.status();
    const nlohmann::json& models = (*j)["models"];
    for (std::size_t k = 0; k < models.size() && k < signatures.size(); ++k) {
      if (!models[k].contains("kernel_us") || !models[k]["kernel_us"].is_number()) {
        ++stats.skipped;  // onnxruntime could not run it
        continue;
      }
      table["entries"].push_back(
          {{"signature", signatures[k]}, {"us", models[k]["kernel_us"].get<double>()}});
      ++stats.measured;
    }
  }
  if (absl::Status s = write_text_file(table_path, table.dump(1) + "\n"); !s.ok()) return s;
  return stats;
}

}  // namespace saturn::cli

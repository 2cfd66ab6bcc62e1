// The harness subprocess (`python ort_run.py` in the project's virtual
// environment), its options, and the timing of models through it; the
// temporary directories and shell quoting it needs.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <sys/wait.h>

#include "saturn/base/machine.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "saturn/ort/harness_internal.h"
#include "saturn/ort/runtime.h"

namespace saturn::ort {

namespace fs = std::filesystem;

namespace {

// Where the harness lives: $SATURN_ORT_DIR, or ort/harness in the source tree.
fs::path harness_dir() {
  if (const char* dir = std::getenv("SATURN_ORT_DIR")) return dir;
  return SATURN_ORT_DIR;
}

// The interpreter that runs it, one that imports onnxruntime: $SATURN_ORT_PYTHON,
// or the virtual environment tools/install-deps.sh creates.
fs::path harness_python() {
  if (const char* python = std::getenv("SATURN_ORT_PYTHON")) return python;
  return SATURN_ORT_PYTHON;
}

// The harness's exit code when onnxruntime, onnx or numpy cannot be imported.
constexpr int kHarnessMissingPackages = 3;

}  // namespace

int default_runtime_threads() { return std::clamp(usable_cores(), 1, kMaxRuntimeThreads); }

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

absl::StatusOr<nlohmann::json> run_harness(const std::vector<std::string>& args,
                                           const RuntimeOptions& o) {
  if (absl::Status s = check_options(o); !s.ok()) return s;
  const fs::path python = harness_python();
  const std::string not_installed = fmt::format(
      "onnxruntime's Python environment ({}) is missing or incomplete; tools/install-deps.sh "
      "creates it",
      python.string());
  if (!fs::exists(python)) return absl::FailedPreconditionError(not_installed);
  std::vector<std::string> words = {python.string(), (harness_dir() / "ort_run.py").string()};
  words.insert(words.end(), args.begin(), args.end());
  std::string cmd;
  for (const std::string& w : words) {
    if (!cmd.empty()) cmd.push_back(' ');
    cmd.append(shell_quote(w));
  }
  cmd += fmt::format(
      " --runs {} --warmup {} --rtol {} --atol {} --seed {} --threads {} --profile {} "
      "--kernel-offset {} --kernel-floor {}",
      o.runs, o.warmup, o.rtol, o.atol, o.seed, o.threads, o.profile ? 1 : 0, o.kernel_offset_us,
      o.kernel_floor_us);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("cannot start a shell to run onnxruntime");
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  if (WIFEXITED(status) &&
      (WEXITSTATUS(status) == 127 || WEXITSTATUS(status) == kHarnessMissingPackages))
    return absl::FailedPreconditionError(not_installed);
  if (status != 0) {
    return absl::InternalError(
        "onnxruntime could not run the models (its message is above on stderr)");
  }
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return absl::InternalError("the onnxruntime harness printed no JSON");
  return j;
}

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
    if (absl::IsFailedPrecondition(batch.status())) return batch.status();  // no onnxruntime
    for (std::size_t k = begin; k < end; ++k) {
      absl::StatusOr<nlohmann::json> one = run(k, k + 1);
      out.push_back(one.ok() ? (*one)[0]
                             : nlohmann::json{{"model", files[k]},
                                              {"error", std::string(message(one.status()))}});
    }
  }
  return out;
}

std::optional<double> reported_us(const nlohmann::json& model, const char* key) {
  auto it = model.find(key);
  if (it == model.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}
std::optional<double> kernel_us(const nlohmann::json& model) {
  return reported_us(model, "kernel_us");
}

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

}  // namespace saturn::ort

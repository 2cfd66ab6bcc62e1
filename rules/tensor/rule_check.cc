#include "saturn/rules/tensor/rule_check.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "saturn/rules/parser.h"
#include "saturn/rules/tensor/tensor_rules.h"

namespace saturn {

namespace {

// Bump when the verifier's draws or tolerances change what it accepts:
// verdicts cached under another version are not reused.
constexpr std::string_view kVerifierVersion = "saturn-rule-check 3";

// 64-bit FNV-1a over the verifier's version and the file's text: a cache
// key, not a defence against crafted collisions.
std::string content_key(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::string_view part : {kVerifierVersion, std::string_view("\n"), text}) {
    for (unsigned char c : part) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
  }
  return fmt::format("{:016x}-{}", h, text.size());
}

std::string cache_file(const std::string& cache_dir, std::string_view text) {
  return fmt::format("{}/rules/{}.verdicts", cache_dir, content_key(text));
}

// One file's verdicts, without its path (the same text may be found at
// another path later).
struct FileVerdicts {
  struct Unverified {
    int line = 0;
    std::string name, why;
  };
  int verified = 0;
  std::vector<Unverified> unverified;
};

// A cached file's verdicts; nothing when absent or unreadable. The format:
// the version line, "verified N", then "unverified LINE NAME WHY" lines.
std::optional<FileVerdicts> read_cached(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  absl::StatusOr<std::string> text = read_text_file(path);
  if (!text.ok()) return std::nullopt;
  std::istringstream in(*text);
  std::string line;
  if (!std::getline(in, line) || line != kVerifierVersion) return std::nullopt;
  FileVerdicts verdicts;
  if (!std::getline(in, line) || !line.starts_with("verified ") ||
      !absl::SimpleAtoi(absl::string_view(line).substr(9), &verdicts.verified))
    return std::nullopt;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    FileVerdicts::Unverified u;
    std::string word;
    if (!(fields >> word >> u.line >> u.name) || word != "unverified") return std::nullopt;
    std::getline(fields >> std::ws, u.why);
    verdicts.unverified.push_back(std::move(u));
  }
  return verdicts;
}

// write_text_file replaces the file atomically, so that a concurrent run
// never reads half a file; failures are ignored (the cache is optional).
void write_cached(const std::string& path, const FileVerdicts& verdicts) {
  std::string text = fmt::format("{}\nverified {}\n", kVerifierVersion, verdicts.verified);
  for (const FileVerdicts::Unverified& u : verdicts.unverified)
    text += fmt::format("unverified {} {} {}\n", u.line, u.name, u.why);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  (void)write_text_file(path, text);
}

absl::StatusOr<FileVerdicts> verify_file(const std::string& file,
                                         const tensor::TensorLanguage& language,
                                         const ConditionRegistry& conditions) {
  absl::StatusOr<RuleSet> rules = load_rules(file, language, conditions);
  if (!rules.ok()) return rules.status();
  FileVerdicts verdicts;
  for (const Rule& rule : rules->rules()) {
    RuleVerdict v = verify_rule(rule, language);
    std::replace(v.detail.begin(), v.detail.end(), '\n', ' ');
    switch (v.outcome) {
      case VerifyOutcome::kVerified:
        ++verdicts.verified;
        break;
      case VerifyOutcome::kUnverified:
        verdicts.unverified.push_back({rule.loc.line, rule.name, v.detail});
        break;
      case VerifyOutcome::kFailed:
        return absl::FailedPreconditionError(fmt::format(
            "{}:{}: rule '{}' is unsound: {} (`saturn rules verify {}` shows every verdict; "
            "--unverified-rules uses the file anyway)",
            file, rule.loc.line, rule.name, v.detail, file));
    }
  }
  return verdicts;
}

}  // namespace

std::string default_rule_cache_dir() { return user_cache_dir(); }

absl::StatusOr<RuleFileCheck> check_rule_files(const std::vector<std::string>& files,
                                               const tensor::TensorLanguage& language,
                                               const ConditionRegistry& conditions,
                                               const std::string& cache_dir) {
  RuleFileCheck all;
  for (const std::string& file : files) {
    absl::StatusOr<std::string> text = read_text_file(file);
    if (!text.ok()) return text.status();
    const std::string cached = cache_dir.empty() ? "" : cache_file(cache_dir, *text);
    std::optional<FileVerdicts> verdicts = cached.empty() ? std::nullopt : read_cached(cached);
    if (verdicts) {
      ++all.files_from_cache;
    } else {
      absl::StatusOr<FileVerdicts> fresh = verify_file(file, language, conditions);
      if (!fresh.ok()) return fresh.status();
      verdicts = std::move(*fresh);
      if (!cached.empty()) write_cached(cached, *verdicts);
    }
    all.verified += verdicts->verified;
    for (const FileVerdicts::Unverified& u : verdicts->unverified)
      all.unverified.push_back(fmt::format("{}:{}: {}: {}", file, u.line, u.name, u.why));
  }
  return all;
}

}  // namespace saturn

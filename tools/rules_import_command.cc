// `saturn rules import --tensat FILE [--multi FILE] -o OUT.rules`: a TENSAT/
// TASO rule set in saturn's rule language, verified. Rules the verifier
// fails are written commented out, with the counterexample, so that the
// file loads as it is.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "saturn/base/file.h"
#include "saturn/base/status.h"
#include "fmt/format.h"
#include "saturn/rules/parser.h"
#include "saturn/rules/tensor/tensat_import.h"
#include "saturn/rules/tensor/tensor_rules.h"
#include "saturn/tensor/ops.h"
#include "saturn/tools/commands.h"
#include "saturn/tools/model_files.h"

namespace saturn::tools {

namespace {

struct ImportOptions {
  std::vector<std::string> tensat, multi;
  std::string out;
  bool verify = true;
  VerifyOptions verify_options;
};

int run_import(const ImportOptions& o) {
  std::vector<TensatSource> single, multi;
  for (const auto& [names, sources] : {std::pair{&o.tensat, &single}, std::pair{&o.multi, &multi}}) {
    for (const std::string& name : *names) {
      absl::StatusOr<std::string> text = read_text_file(name);
      if (!text.ok()) return fail(text.status());
      sources->push_back({name, *std::move(text)});
    }
  }
  std::vector<std::string> inputs = o.tensat;
  inputs.insert(inputs.end(), o.multi.begin(), o.multi.end());
  if (absl::Status s = check_outputs(inputs, {o.out}); !s.ok()) return fail(s);
  absl::StatusOr<TensatImport> imported = import_tensat(single, multi);
  if (!imported.ok()) return fail(imported.status());
  for (const std::string& s : imported->skipped) fmt::print(stderr, "not translated: {}\n", s);

  tensor::TensorLanguage lang;
  const ConditionRegistry conditions = tensor_conditions();
  // The verdict on one rule's text; a translation saturn cannot read is a bug.
  auto check = [&](const std::string& rule) -> absl::StatusOr<RuleVerdict> {
    absl::StatusOr<RuleSet> parsed =
        parse_rules("group tensat\n" + rule, o.out, lang, conditions);
    if (!parsed.ok()) return parsed.status();
    if (!o.verify) return RuleVerdict{.outcome = VerifyOutcome::kVerified};
    return verify_rule(parsed->rules().front(), lang, o.verify_options);
  };
  int verified = 0, restricted = 0, failed = 0, unverified = 0;
  for (ImportedRule& r : imported->rules) {
    if (!r.reason.empty()) continue;
    absl::StatusOr<RuleVerdict> v = check(r.rule);
    if (!v.ok()) return fail(v.status());
    if (v->outcome != VerifyOutcome::kVerified && !r.ungrouped.empty()) {
      // TASO verified its rules on ungrouped convolutions: try the rule there.
      absl::StatusOr<RuleVerdict> u = check(r.ungrouped);
      if (!u.ok()) return fail(u.status());
      if (u->outcome == VerifyOutcome::kVerified) {
        r.note = fmt::format("# holds for ungrouped convolutions only; with groups: {}\n",
                             v->detail);
        r.rule = r.ungrouped;
        ++restricted;
        continue;
      }
    }
    if (v->outcome == VerifyOutcome::kVerified) {
      ++verified;
      continue;
    }
    const bool fails = v->outcome == VerifyOutcome::kFailed;
    ++(fails ? failed : unverified);
    fmt::print("{:<10} {}: {}\n", fails ? "FAILED" : "unverified", r.name, v->detail);
    r.note = fmt::format("# {} by `saturn rules verify`: {}\n",
                         fails ? "fails verification" : "could not be verified", v->detail);
    r.commented_out = true;
  }
  const std::string text = imported->text();
  if (absl::Status s = write_text_file(o.out, text); !s.ok()) return fail(s);
  fmt::print("{} rules read, {} translated, {} not translated", imported->rules.size(),
             imported->translated, imported->skipped.size());
  if (o.verify)
    fmt::print(
        "; {} verified, {} verified for ungrouped convolutions only, {} failed and {} "
        "unverified (commented out)",
        verified, restricted, failed, unverified);
  fmt::print("; written to {}\n", o.out);
  return 0;
}

}  // namespace

Command add_rules_import_command(CLI::App& rules) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* app = rules.add_subcommand(
      "import",
      "Translate a TENSAT/TASO rule set into saturn's rule language, verifying each rule");
  app->add_option("--tensat", o->tensat,
                  "single-pattern rule files, one LHS=>RHS per line (TENSAT's converted.txt)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--multi", o->multi,
                  "multi-pattern rule files, two lines per rule (TENSAT's converted_multi.txt)")
      ->check(CLI::ExistingFile);
  app->add_option("-o,--out", o->out, "the .rules file to write")->required();
  app->add_flag("!--no-verify", o->verify, "write the translation without verifying it");
  app->add_option("--seed", o->verify_options.seed, "the verifier's random seed (default 1)");
  return {app, [o] { return run_import(*o); }};
}

}  // namespace saturn::tools

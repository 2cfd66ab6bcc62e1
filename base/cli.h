// Command-line parsing for saturn's programs (the `saturn` command and the
// benchmark binaries), on CLI11: every program reports a usage error with the
// same wording and exits with the same code.
//
//   CLI::App app{"what the program does", "compare_search"};
//   app.add_option("--seeds", seeds, "...")->check(CLI::Range(1, 100));
//   if (std::optional<int> exit = parse_command_line(app, argc, argv)) return *exit;
//
// A usage error reads "PROGRAM: MESSAGE" on stderr, followed by
// "Run with --help for more information.", and the program exits with 2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_map.h"

namespace saturn {

inline constexpr int kUsageErrorExit = 2;

// Parses `argv` into `app`. The exit code when the program is done: 0 after
// --help (which prints the help of the subcommand named, if any), 2 after a
// usage error; nothing when the program goes on.
std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv);

// Reports a usage error found after parsing (options that do not go
// together, a value out of its range) the way parse_command_line does, for
// `app` (the program or one of its subcommands); returns 2.
int usage_error(const CLI::App& app, std::string_view message);

// The path of `app`'s program and subcommand, as a user typed it
// ("saturn optimize").
std::string command_path(const CLI::App& app);

// A validator for numbers that must be finite (CLI11 reads "1e400" as
// infinity).
extern const CLI::Validator kFinite;

// `--dim NAME=SIZE` (repeatable) on `command`: sizes a symbolic ONNX input
// dimension (tensor::OnnxImportOptions::dims). The sizes land in `dims` as
// they are parsed.
void add_dim_option(CLI::App& command, absl::flat_hash_map<std::string, std::int64_t>& dims);

}  // namespace saturn

#include "saturn/base/cli.h"

#include <cmath>
#include <string>

#include "fmt/format.h"

namespace saturn {

std::string command_path(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* parent = app.get_parent(); parent != nullptr; parent = parent->get_parent())
    path = parent->get_name() + " " + path;
  return path;
}

int usage_error(const CLI::App& app, std::string_view message) {
  fmt::print(stderr, "{}: {}\nRun with --help for more information.\n", command_path(app), message);
  return kUsageErrorExit;
}

std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::ParseError& e) {
    // Name the subcommand whose options were being read, if any.
    const CLI::App* where = &app;
    for (std::vector<CLI::App*> subs = app.get_subcommands(); !subs.empty();
         subs = subs.front()->get_subcommands())
      where = subs.front();
    return usage_error(*where, e.what());
  }
}

const CLI::Validator kFinite(
    [](std::string& text) -> std::string {
      double value = 0;
      if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value))
        return fmt::format("'{}' is not a finite number", text);
      return "";
    },
    "FINITE");

void add_dim_option(CLI::App& command, absl::flat_hash_map<std::string, std::int64_t>& dims) {
  command
      .add_option_function<std::vector<std::string>>(
          "--dim",
          [&dims](const std::vector<std::string>& specs) {
            for (const std::string& spec : specs) {
              const std::size_t eq = spec.find('=');
              std::int64_t size = 0;
              CLI::detail::lexical_cast(spec.substr(eq + 1), size);
              dims[spec.substr(0, eq)] = size;
            }
          },
          "NAME=SIZE: the size of a symbolic ONNX input dimension for shape inference and "
          "costing (repeatable; default 1); written models keep it symbolic")
      ->check(CLI::Validator(
          [](std::string& spec) -> std::string {
            const std::size_t eq = spec.find('=');
            std::int64_t size = -1;
            if (eq == std::string::npos || eq == 0 ||
                !CLI::detail::lexical_cast(spec.substr(eq + 1), size) || size < 0)
              return fmt::format("--dim needs NAME=SIZE, got '{}'", spec);
            return "";
          },
          "NAME=SIZE"))
      ->allow_extra_args(false);
}


}  // namespace saturn

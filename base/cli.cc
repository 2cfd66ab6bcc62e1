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

}  // namespace saturn

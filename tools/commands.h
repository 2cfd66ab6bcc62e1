// The `saturn` command's subcommands. Each one registers its options on the
// program's CLI11 app and returns what runs it once the command line is
// parsed (see tools/saturn.cc):
//
//   Command optimize = add_optimize_command(program);
//   ... parse ...
//   if (optimize.app->parsed()) return optimize.run();
#pragma once

#include <functional>
#include <vector>

namespace CLI {
class App;
}

namespace saturn::tools {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // the exit code: 0 success, 1 an error, 2 bad usage
};

Command add_zoo_command(CLI::App& program);                  // inspect_commands.cc
Command add_check_command(CLI::App& program);                // inspect_commands.cc
Command add_info_command(CLI::App& program);                 // inspect_commands.cc
Command add_env_command(CLI::App& program);                  // inspect_commands.cc
std::vector<Command> add_rules_commands(CLI::App& program);  // rules list, verify, import
Command add_rules_import_command(CLI::App& rules);           // rules_import_command.cc
Command add_optimize_command(CLI::App& program);             // optimize_command.cc
Command add_batch_command(CLI::App& program);                // batch_command.cc
Command add_verify_command(CLI::App& program);               // runtime_commands.cc
Command add_calibrate_command(CLI::App& program);            // runtime_commands.cc

}  // namespace saturn::tools

// The saturn command line: one subcommand per job (`saturn --help` lists
// them, `saturn COMMAND --help` shows one command's options).
//
//   saturn zoo [--eval] [NAME...] [--save OUT]    the built-in models
//   saturn check MODEL [--eval]                   load, type-check, count ops
//   saturn info MODEL [--cost C]                  inputs, outputs, ops, weights, cost
//   saturn rules list|verify [FILE...]            the rules, and their soundness
//   saturn optimize MODEL [-o OUT] [options]      search, extract, report
//   saturn verify A.onnx B.onnx                   compare and time two models in onnxruntime
//   saturn calibrate MODEL... -o T                measure operator signatures in onnxruntime
//   saturn env                                    the search environment over JSON lines
//
// Exit codes: 0 success; 1 an error (bad input, failed verification); 2 bad usage.
#include <new>
#include <vector>

#include "CLI/CLI.hpp"
#include "saturn/base/cli.h"
#include "fmt/format.h"
#include "saturn/tools/commands.h"

int main(int argc, char** argv) {
  using namespace saturn::tools;
  CLI::App program{
      "saturn: a superoptimizer for tensor computation graphs. MODEL is an ONNX file (.onnx), a "
      "saturn JSON model (.json) or a zoo model name. Exit codes: 0 success; 1 an error (bad "
      "input, failed verification); 2 bad usage.",
      "saturn"};
  program.require_subcommand(1);
  std::vector<Command> commands = {add_zoo_command(program),    add_check_command(program),
                                   add_info_command(program),   add_optimize_command(program),
                                   add_verify_command(program), add_calibrate_command(program),
                                   add_env_command(program),    add_batch_command(program)};
  for (Command& c : add_rules_commands(program)) commands.push_back(std::move(c));
  if (std::optional<int> exit = saturn::parse_command_line(program, argc, argv)) return *exit;
  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    // A model whose tensors pass the size limit (tensor::kMaxTensorBytes)
    // may still not fit in this machine's memory.
    try {
      return command.run();
    } catch (const std::bad_alloc&) {
      fmt::print(stderr, "{}: out of memory (the model's tensors do not fit in this machine)\n",
                 saturn::command_path(*command.app));
      return 1;
    }
  }
  return saturn::usage_error(program, "no command given");
}

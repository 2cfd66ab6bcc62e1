#include "saturn/bench/options.h"

#include "CLI/CLI.hpp"
#include "saturn/base/cli.h"

namespace saturn::bench {

void add_strategies_option(CLI::App& app, std::vector<std::string>& strategies) {
  app.add_option("--strategies", strategies, "search strategies, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"mcts", "greedy", "default", "taso"}));
}

void add_search_limit_options(CLI::App& app, int& threads, double& ilp_seconds,
                              double& time_limit) {
  app.add_option("--threads", threads, "search threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--ilp-seconds", ilp_seconds, "exact extraction time limit; 0: greedy only")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber & kFinite);
  app.add_option("--time-limit", time_limit, "search time limit in seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber & kFinite);
}

}  // namespace saturn::bench

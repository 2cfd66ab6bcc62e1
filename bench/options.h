// The options that the strategy sweeps (compare_search, real_latency) share,
// on CLI11 (base/cli.h).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace saturn::bench {

// --strategies mcts,greedy,default,taso (checked against the four names).
void add_strategies_option(CLI::App& app, std::vector<std::string>& strategies);

// --threads (1-256), --ilp-seconds (>= 0) and --time-limit (> 0).
void add_search_limit_options(CLI::App& app, int& threads, double& ilp_seconds, double& time_limit);

}  // namespace saturn::bench

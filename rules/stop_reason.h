// Why a rewriting run or a search ended: one reason, typed, from the Runner's
// saturation loop to every search strategy, the region summaries and the
// reports (whose JSON holds to_string of it).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace saturn {

enum class StopReason : std::uint8_t {
  kSaturated,         // nothing left to apply
  kIterationLimit,    // saturation iterations (or a pass's) used up
  kNodeLimit,         // the e-node budget is full
  kByteLimit,         // the byte budget is full
  kTimeLimit,         // the time limit passed
  kGoal,              // the Runner's goal holds
  kStepLimit,         // MCTS: its real steps used up
  kStopChosen,        // MCTS: the stop action was the best
  kNoApplicableRule,  // MCTS: no action left
  kPassesDone,        // the default order: every pass ran
  kQueueEmpty,        // TASO: no candidate graph left
  kGraphLimit,        // TASO: its budget of popped graphs used up
  kNotSearched,       // the graph does not fit the budget: kept unsearched
};
inline constexpr int kNumStopReasons = static_cast<int>(StopReason::kNotSearched) + 1;

// "saturated", "node limit", ... (the reports' spelling).
std::string_view to_string(StopReason reason);
std::optional<StopReason> parse_stop_reason(std::string_view text);

}  // namespace saturn

#include "saturn/rules/stop_reason.h"

#include <array>

namespace saturn {

namespace {

constexpr std::array<std::string_view, kNumStopReasons> kNames = {
    "saturated",          "iteration limit", "node limit",  "byte limit", "time limit",
    "goal reached",       "step limit",      "stop chosen", "no applicable rule",
    "passes done",        "queue empty",     "graph limit", "not searched"};

}  // namespace

std::string_view to_string(StopReason reason) { return kNames[static_cast<int>(reason)]; }

std::optional<StopReason> parse_stop_reason(std::string_view text) {
  for (int i = 0; i < kNumStopReasons; ++i)
    if (kNames[i] == text) return static_cast<StopReason>(i);
  return std::nullopt;
}

}  // namespace saturn

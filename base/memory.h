// The process's memory high-water marks, for reports.
//
//   PeakMemory m = peak_memory();
//   m.process_bytes;   // this process's peak resident set (VmHWM)
//   m.children_bytes;  // the largest peak of the child processes it waited for
#pragma once

#include <cstdint>

namespace saturn {

struct PeakMemory {
  std::int64_t process_bytes = 0;
  // The largest of the finished child processes' peaks (onnxruntime's
  // harness, which saturn runs as a child): not added to the process's.
  std::int64_t children_bytes = 0;
};

// The peaks so far; zeros where the system does not say.
PeakMemory peak_memory();

}  // namespace saturn

#include "saturn/base/memory.h"

#include <sys/resource.h>

namespace saturn {

PeakMemory peak_memory() {
  PeakMemory peak;
  rusage usage{};
  // Linux gives ru_maxrss in KiB.
  if (getrusage(RUSAGE_SELF, &usage) == 0) peak.process_bytes = std::int64_t{usage.ru_maxrss} * 1024;
  if (getrusage(RUSAGE_CHILDREN, &usage) == 0)
    peak.children_bytes = std::int64_t{usage.ru_maxrss} * 1024;
  return peak;
}

}  // namespace saturn

#include "saturn/base/machine.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>

#include <sched.h>

namespace saturn {

int usable_cores() {
  int hardware = static_cast<int>(std::thread::hardware_concurrency());
  if (cpu_set_t set; sched_getaffinity(0, sizeof set, &set) == 0) hardware = CPU_COUNT(&set);
  int per_core = 1;
  if (std::ifstream f("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list"); f) {
    std::string list;
    std::getline(f, list);
    // "0-1" or "0,8": two siblings; "0": one.
    if (list.find_first_of(",-") != std::string::npos) per_core = 2;
  }
  return std::max(hardware / per_core, 1);
}

}  // namespace saturn

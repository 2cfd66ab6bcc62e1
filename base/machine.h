// What this machine offers the process: the cores it may run on.
//
//   int n = usable_cores();   // 1 for a process pinned to one core
#pragma once

namespace saturn {

// The physical cores this process may run on (its CPU affinity, a core's
// hardware threads counted once where the kernel says they are siblings);
// at least 1. onnxruntime's default intra-op pool has a thread per such core.
int usable_cores();

}  // namespace saturn

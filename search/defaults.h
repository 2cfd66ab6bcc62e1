// The defaults of every way in, in one place: optimize() (the command line,
// the Python module, the library), the search environment, its JSON
// protocol and the benchmarks take these unless told otherwise.
#pragma once

#include <cstddef>
#include <string_view>

namespace saturn {

// E-nodes per search (per region of a graph cut into regions).
inline constexpr std::size_t kDefaultMaxNodes = 2000;
// Wall time of a search, from its start.
inline constexpr double kDefaultTimeLimitSeconds = 60;
// The cost model by name (cost_model_by_name): onnxruntime's CPU provider
// as measured (this machine's table where `saturn calibrate` made one, else
// the shipped table).
inline constexpr std::string_view kDefaultCost = "onnxruntime";
// Search threads.
inline constexpr int kDefaultThreads = 2;
// onnxruntime's intra-op threads where a result is timed: 0 is the
// runtime's own default (ort::default_runtime_threads()).
inline constexpr int kDefaultRuntimeThreads = 0;

}  // namespace saturn

// The headers that nearly every saturn file includes, precompiled once per
// optimization level (see saturn_precompile_headers in CMakeLists.txt): on a
// 2-core machine parsing them is a third of each file's compile time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"

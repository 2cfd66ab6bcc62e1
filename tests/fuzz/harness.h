// The fuzz harnesses' entry point, libFuzzer's. Each harness file defines
// it for one reader of untrusted input; built with -DSATURN_FUZZ=ON (clang)
// it runs under libFuzzer, otherwise replay_main.cc feeds it the committed
// corpus and the crashes found so far, as regression tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace saturn::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace saturn::fuzz

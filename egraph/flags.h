// Numbers given on a command line. The whole text must be the number and fit
// the type; otherwise std::invalid_argument with a message that names the
// flag, for the command's usage error:
//
//   options.runs = flag_value<int>("--runs", text);   // "--runs: 'ten' is not a whole number"
#pragma once

#include <charconv>
#include <concepts>
#include <stdexcept>
#include <string>
#include <string_view>

namespace saturn {

template <typename T>
requires std::integral<T> || std::floating_point<T> T flag_value(std::string_view flag,
                                                                 std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, value);
  if (error == std::errc() && at == end && !text.empty()) return value;
  const char* kind = std::integral<T> ? (std::unsigned_integral<T> ? "a non-negative whole number"
                                                                   : "a whole number")
                                      : "a number";
  throw std::invalid_argument(std::string(flag) + ": '" + std::string(text) + "' is not " + kind +
                              (error == std::errc::result_out_of_range ? " in range" : ""));
}

}  // namespace saturn

// Small helpers for absl::Status values: their message as a std::string_view
// (Debian's absl has its own string_view, which fmt cannot print), and
// errors with context put in front.
//
//   return with_context(status, fmt::format("{}:{}", file, line));
//   // "model.json:12: Conv: group 3 does not divide ..."
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace saturn {

inline std::string_view message(const absl::Status& status) {
  return std::string_view(status.message().data(), status.message().size());
}

// The same error with "context: " in front of its message.
inline absl::Status with_context(const absl::Status& status, std::string_view context) {
  std::string text(context);
  text.append(": ");
  text.append(message(status));
  return absl::Status(status.code(), text);
}

}  // namespace saturn

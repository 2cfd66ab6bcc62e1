// Internal to the cost models (costmodel/*.cc): the JSON of the files they
// read (device profiles, measured tables).
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace saturn::costmodel {

// `text` parsed as JSON; an error names `file` and the byte where parsing
// failed.
inline absl::StatusOr<nlohmann::json> parse_json_file_text(std::string_view text,
                                                           std::string_view file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return absl::InvalidArgumentError(fmt::format("{}: not valid JSON (byte {})", file, e.byte));
  }
}

}  // namespace saturn::costmodel

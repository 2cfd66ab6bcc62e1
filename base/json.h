// JSON text parsed with nlohmann::json without exceptions escaping: every
// reader of a JSON file (models, profiles, measured tables, e-graphs) goes
// through here, so that a malformed file is an error that names it.
//
//   absl::StatusOr<nlohmann::json> j = parse_json(text, "model.json");
//   // "model.json:3:14: not valid JSON" on a syntax error
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace saturn {

// `text` as JSON. A syntax error names `file` and the line and column where
// parsing stopped; a number too large for a double names the number.
absl::StatusOr<nlohmann::json> parse_json(std::string_view text, std::string_view file);

// "LINE:COLUMN" (from 1) of a byte offset into `text`.
std::string text_position(std::string_view text, std::size_t byte);

}  // namespace saturn

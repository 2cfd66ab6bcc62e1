// Whole-file text I/O with errors that name the file.
//
//   absl::StatusOr<std::string> text = read_text_file("model.json");
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace saturn {

absl::StatusOr<std::string> read_text_file(const std::string& path);
// Writes `text` to `path`, replacing the file atomically: under a temporary
// name in the same folder, flushed, then renamed, so that the file is either
// the old one or the whole new one, whatever happens meanwhile.
absl::Status write_text_file(const std::string& path, std::string_view text);

}  // namespace saturn

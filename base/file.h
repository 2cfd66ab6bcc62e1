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

// saturn's per-user cache folder (rule verdicts, the cost table calibrated on
// this machine): $SATURN_CACHE_DIR, else $XDG_CACHE_HOME/saturn, else
// $HOME/.cache/saturn; "" when none is set.
std::string user_cache_dir();

}  // namespace saturn

// Whole-file text I/O with errors that name the file.
//
//   absl::StatusOr<std::string> text = read_text_file("model.json");
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace saturn {

absl::StatusOr<std::string> read_text_file(const std::string& path);

// A file's bytes mapped read-only into memory for as long as the object
// lives: a model of gigabytes is parsed from the page cache without a copy.
//
//   absl::StatusOr<MappedFile> file = MappedFile::open("model.onnx");
//   if (file.ok()) parse(file->bytes());
class MappedFile {
 public:
  static absl::StatusOr<MappedFile> open(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::string_view bytes() const { return {data_, size_}; }

 private:
  MappedFile(const char* data, std::size_t size) : data_(data), size_(size) {}
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};
// Writes `text` to `path`, replacing the file atomically: under a temporary
// name in the same folder, then renamed, so that the file is either the old
// one or the whole new one, whatever happens to saturn meanwhile.
absl::Status write_text_file(const std::string& path, std::string_view text);
// Copies `from` to `to`, replaced atomically as write_text_file does.
absl::Status copy_file(const std::string& from, const std::string& to);

// saturn's per-user cache folder (rule verdicts, the cost table calibrated on
// this machine): $SATURN_CACHE_DIR, else $XDG_CACHE_HOME/saturn, else
// $HOME/.cache/saturn; "" when none is set.
std::string user_cache_dir();

}  // namespace saturn

// Whole-file text I/O with errors that name the file.
//
//   absl::StatusOr<std::string> text = read_text_file("model.json");
#pragma once

#include <cstddef>
#include <memory>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

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
// Replaces `path` atomically as write_text_file does, with what `write`
// writes to the open file descriptor it is given (false: it failed, errno
// says why): a large file written as it is made, never held whole.
absl::Status write_file_with(const std::string& path, const std::function<bool(int fd)>& write);
// Copies `from` to `to`, replaced atomically as write_text_file does.
absl::Status copy_file(const std::string& from, const std::string& to);

// Copies of files that a thread of its own makes while the caller goes on,
// for an output that may turn out to be its input unchanged: a model of
// gigabytes is copied during the search rather than after it. Each copy
// is written under a temporary name beside its target; commit() finishes
// the copies on the calling thread and renames them over their targets in
// order (as write_text_file replaces a file); dropped uncommitted, the
// temporary files are removed. Until then nothing else should write the
// targets (they share the temporary names).
//
//   absl::StatusOr<StagedCopy> copy = StagedCopy::open({{"in.onnx", "out.onnx"}});
//   copy->start();
//   ... work; copy->stop() where nothing else should run ...
//   if (unchanged) return copy->commit();
class StagedCopy {
 public:
  struct File {
    std::string from, to;
  };
  // Opens every source and a temporary file for every target; copies nothing.
  static absl::StatusOr<StagedCopy> open(const std::vector<File>& files);
  StagedCopy(StagedCopy&&) noexcept;
  StagedCopy& operator=(StagedCopy&&) noexcept;
  ~StagedCopy();

  // Copies in the background, from where the copy got to.
  void start();
  // Halts the background copy at the end of its current chunk.
  void stop();
  absl::Status commit();

 private:
  StagedCopy();
  struct State;
  std::unique_ptr<State> state_;
};

// saturn's per-user cache folder (rule verdicts, the cost table calibrated on
// this machine): $SATURN_CACHE_DIR, else $XDG_CACHE_HOME/saturn, else
// $HOME/.cache/saturn; "" when none is set.
std::string user_cache_dir();

}  // namespace saturn

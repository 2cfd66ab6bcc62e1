#include "base/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fmt/format.h"

namespace saturn {

absl::StatusOr<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot open file", path));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(fmt::format("{}: read failed", path));
  return text.str();
}

// The text goes to a temporary file beside `path`, is flushed to the disk
// and renamed over `path`: a reader, a crash or a kill never sees half a
// file where a finished one is expected (POSIX rename is atomic).
absl::Status write_text_file(const std::string& path, std::string_view text) {
  const std::string temporary = fmt::format("{}.{}.tmp", path, static_cast<long>(getpid()));
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot open file for writing: {}", path, std::strerror(errno)));
  auto fail = [&](const char* what) {
    const std::string why = std::strerror(errno);
    close(fd);
    unlink(temporary.c_str());
    return absl::DataLossError(fmt::format("{}: {} failed: {}", path, what, why));
  };
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    done += static_cast<std::size_t>(n);
  }
  if (fsync(fd) != 0) return fail("flush");
  if (close(fd) != 0) {
    const std::string why = std::strerror(errno);
    unlink(temporary.c_str());
    return absl::DataLossError(fmt::format("{}: write failed: {}", path, why));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    unlink(temporary.c_str());
    return absl::PermissionDeniedError(fmt::format("{}: cannot replace the file: {}", path, why));
  }
  return absl::OkStatus();
}

}  // namespace saturn

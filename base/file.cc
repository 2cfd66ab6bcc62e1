#include "saturn/base/file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "fmt/format.h"

namespace saturn {

namespace {

// Removes the temporary files that writers of `path` killed before their
// rename left beside it: PATH.PID.tmp whose process does not run here and
// whose lock nobody holds (a writer locks its temporary file while it
// writes, so a writer in another PID namespace or on another NFS client is
// not taken for dead).
void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const std::string prefix = target.filename().string() + ".";
  std::error_code ec;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(prefix) || !name.ends_with(".tmp")) continue;
    const std::string_view digits =
        std::string_view(name).substr(prefix.size(), name.size() - prefix.size() - 4);
    long pid = 0;
    if (!absl::SimpleAtoi(absl::string_view(digits.data(), digits.size()), &pid) || pid <= 0 ||
        pid == static_cast<long>(getpid()))
      continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const int fd = open(it->path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) fs::remove(it->path(), ec);
    close(fd);
  }
}

}  // namespace

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
  (void)flock(fd, LOCK_EX | LOCK_NB);  // held until close: see remove_stale_temporaries
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
  remove_stale_temporaries(path);
  return absl::OkStatus();
}

std::string user_cache_dir() {
  for (const char* name : {"SATURN_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
    const char* dir = std::getenv(name);
    if (dir == nullptr || *dir == '\0') continue;
    const std::string base(dir);
    if (std::string_view(name) == "SATURN_CACHE_DIR") return base;
    return base + (std::string_view(name) == "HOME" ? "/.cache/saturn" : "/saturn");
  }
  return "";
}

}  // namespace saturn

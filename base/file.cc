#include "saturn/base/file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <utility>

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
  // A file of known size is read in one piece into a buffer of that size:
  // a model of gigabytes is copied once, not through a growing stream.
  std::string text;
  const std::streamoff size = in.seekg(0, std::ios::end) ? std::streamoff(in.tellg()) : -1;
  if (size > 0) {
    text.resize(static_cast<std::size_t>(size));
    in.seekg(0);
    in.read(text.data(), size);
    if (in.gcount() != size) return absl::DataLossError(fmt::format("{}: read failed", path));
    return text;
  }
  // A pipe (which cannot seek), or a file that does not say its size
  // (/proc): read to its end from the start.
  in.clear();
  in.seekg(0);
  in.clear();
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(fmt::format("{}: read failed", path));
  return text;
}

absl::StatusOr<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return absl::NotFoundError(fmt::format("{}: cannot open file: {}", path, std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(fmt::format("{}: not a regular file", path));
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return MappedFile(nullptr, 0);
  }
  void* data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int mmap_errno = errno;
  close(fd);  // the mapping outlives the descriptor
  if (data == MAP_FAILED)
    return absl::DataLossError(
        fmt::format("{}: cannot map file: {}", path, std::strerror(mmap_errno)));
  (void)madvise(data, size, MADV_SEQUENTIAL);
  return MappedFile(static_cast<const char*>(data), size);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  std::swap(data_, other.data_);  // `other` unmaps what this held
  std::swap(size_, other.size_);
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
}

// The text goes to a temporary file beside `path`, closed and renamed over
// `path`: a reader, or saturn crashing or killed, never sees half a file
// where a finished one is expected (POSIX rename is atomic). It is not
// forced to the disk: fsync took 2.6 s of a 1.6 GB model's 6.7 s on this
// machine, and surviving a power cut is the file system's part (ext4 orders
// a rename over a file after its data), as with compilers' outputs.
namespace {

// Replaces `path` atomically with what `fill` writes to a descriptor: under
// a temporary name in the same folder, then renamed. `fill`
// returns the failed step's name ("write", "read", ...), or null.
absl::Status replace_file(const std::string& path,
                          const std::function<const char*(int fd)>& fill) {
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
  if (const char* failed = fill(fd)) return fail(failed);
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

}  // namespace

absl::Status write_text_file(const std::string& path, std::string_view text) {
  return replace_file(path, [&](int fd) -> const char* {
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return "write";
      done += static_cast<std::size_t>(n);
    }
    return nullptr;
  });
}

absl::Status copy_file(const std::string& from, const std::string& to) {
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return absl::NotFoundError(fmt::format("{}: cannot open file: {}", from, std::strerror(errno)));
  // The kernel copies (copy_file_range): no pass through this process's memory.
  absl::Status s = replace_file(to, [&](int fd) -> const char* {
    for (;;) {
      const ssize_t n = copy_file_range(in, nullptr, fd, nullptr, std::size_t{1} << 30, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return "copy";
      if (n == 0) return nullptr;
    }
  });
  close(in);
  return s;
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

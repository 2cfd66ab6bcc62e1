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
#include <thread>
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

// A file is written under a temporary name beside its path, closed and
// renamed over it: a reader, or saturn crashing or killed, never sees half
// a file where a finished one is expected (POSIX rename is atomic). It is
// not forced to the disk: fsync took 2.6 s of a 1.6 GB model's 6.7 s on
// this machine, and surviving a power cut is the file system's part (ext4
// orders a rename over a file after its data), as with compilers' outputs.
namespace file_detail {

// A temporary file beside `path` (PATH.PID.tmp), locked while open (see
// remove_stale_temporaries), removed unless finished.
struct Temporary {
  std::string path, name;
  int fd = -1;
  bool replaces = false;  // a file is at `path`

  static absl::StatusOr<Temporary> open(const std::string& path) {
    Temporary t{path, fmt::format("{}.{}.tmp", path, static_cast<long>(getpid()))};
    t.fd = ::open(t.name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (t.fd < 0)
      return absl::PermissionDeniedError(
          fmt::format("{}: cannot open file for writing: {}", path, std::strerror(errno)));
    (void)flock(t.fd, LOCK_EX | LOCK_NB);  // held until close
    t.replaces = access(path.c_str(), F_OK) == 0;
    return t;
  }
  Temporary(std::string path, std::string name) : path(std::move(path)), name(std::move(name)) {}
  Temporary(Temporary&& other) noexcept
      : path(std::move(other.path)), name(std::move(other.name)),
        fd(std::exchange(other.fd, -1)), replaces(other.replaces) {}
  Temporary& operator=(Temporary&&) = delete;
  ~Temporary() { discard(); }

  // The error of the step `what` that failed (errno says why); the file is
  // removed.
  absl::Status failed(const char* what) {
    const std::string why = std::strerror(errno);
    discard();
    return absl::DataLossError(fmt::format("{}: {} failed: {}", path, what, why));
  }
  // Closes the file and renames it over `path`.
  absl::Status finish() {
    const int closing = std::exchange(fd, -1);
    if (close(closing) != 0) {
      fd = -2;  // closed: only the name is left to remove
      return failed("write");
    }
    if (std::rename(name.c_str(), path.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      fd = -2;
      discard();
      return absl::PermissionDeniedError(
          fmt::format("{}: cannot replace the file: {}", path, why));
    }
    remove_stale_temporaries(path);
    return absl::OkStatus();
  }

 private:
  void discard() {
    if (fd == -1) return;
    if (fd >= 0) close(fd);
    fd = -1;
    unlink(name.c_str());
  }
};

}  // namespace file_detail

using file_detail::Temporary;

absl::Status write_file_with(const std::string& path, const std::function<bool(int fd)>& write) {
  absl::StatusOr<Temporary> file = Temporary::open(path);
  if (!file.ok()) return file.status();
  if (!write(file->fd)) return file->failed("write");
  return file->finish();
}

absl::Status write_text_file(const std::string& path, std::string_view text) {
  return write_file_with(path, [text](int fd) {
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  });
}

// The sources, open, and their temporaries; `next` is the first file not
// copied whole yet and `offset` how far it got.
struct StagedCopy::State {
  std::vector<int> sources;
  std::vector<Temporary> targets;
  std::size_t next = 0;
  off_t offset = 0;
  absl::Status error;
  std::jthread worker;

  ~State() {
    if (worker.joinable()) {
      worker.request_stop();
      worker.join();
    }
    for (int fd : sources) close(fd);
  }

  // Copies until every file is copied, an error, or (between chunks) a
  // stop request. The kernel copies (copy_file_range): no pass through
  // this process's memory.
  void run(const std::stop_token& stop) {
    static constexpr std::size_t kChunk = std::size_t{64} << 20;
    while (next < targets.size() && error.ok() && !stop.stop_requested()) {
      off_t out = offset;
      const ssize_t n =
          copy_file_range(sources[next], &offset, targets[next].fd, &out, kChunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error = targets[next].failed("copy");
      } else if (n == 0) {
        ++next;
        offset = 0;
      } else if (targets[next].replaces) {
        // ext4 writes a file renamed over another out before the rename
        // returns (auto_da_alloc): 2.8 s of a 1.2 GB model's copy here.
        // Sent to the disk chunk by chunk, that write overlaps the work.
        (void)sync_file_range(targets[next].fd, out - n, n, SYNC_FILE_RANGE_WRITE);
      }
    }
  }
};

absl::StatusOr<StagedCopy> StagedCopy::open(const std::vector<File>& files) {
  auto state = std::make_unique<State>();
  for (const File& file : files) {
    const int in = ::open(file.from.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0)
      return absl::NotFoundError(
          fmt::format("{}: cannot open file: {}", file.from, std::strerror(errno)));
    state->sources.push_back(in);
    absl::StatusOr<Temporary> target = Temporary::open(file.to);
    if (!target.ok()) return target.status();
    state->targets.push_back(*std::move(target));
  }
  StagedCopy copy;
  copy.state_ = std::move(state);
  return copy;
}

StagedCopy::StagedCopy() = default;
StagedCopy::StagedCopy(StagedCopy&&) noexcept = default;
StagedCopy& StagedCopy::operator=(StagedCopy&&) noexcept = default;
StagedCopy::~StagedCopy() { stop(); }

void StagedCopy::start() {
  stop();
  state_->worker = std::jthread([state = state_.get()](std::stop_token t) { state->run(t); });
}

void StagedCopy::stop() {
  if (state_ == nullptr || !state_->worker.joinable()) return;
  state_->worker.request_stop();
  state_->worker.join();
}

absl::Status StagedCopy::commit() {
  stop();
  state_->run(std::stop_token());
  if (!state_->error.ok()) return state_->error;
  for (Temporary& target : state_->targets) {
    if (absl::Status s = target.finish(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status copy_file(const std::string& from, const std::string& to) {
  absl::StatusOr<StagedCopy> copy = StagedCopy::open({{from, to}});
  if (!copy.ok()) return copy.status();
  return copy->commit();
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

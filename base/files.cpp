#include "base/files.hpp"

#include "base/error.hpp"
#include "base/kill_points.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace dt::files {
namespace {

void write_fully(int fd, std::string_view content, const std::filesystem::path& path) {
  if (!write_fd(fd, content)) fail<IoError>("cannot write {}: {}", path.string(), std::strerror(errno));
}

}  // namespace

bool write_fd(int fd, std::string_view content) noexcept {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

void write_atomic(const std::filesystem::path& path, std::string_view content, unsigned mode) {
  write_atomic(path, std::span<const std::string_view>(&content, 1), mode);
}

void write_atomic(const std::filesystem::path& path, std::span<const std::string_view> parts,
                  unsigned mode) {
  kill_points::reach("write", path.filename().string());
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  // fmt rather than operator+: GCC 12 at -O3 reports a false -Wrestrict on the concatenation.
  std::string tmpl = (dir / fmt::format(".{}.tmp.XXXXXX", path.filename().string())).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail<IoError>("cannot create a file in {}: {}", dir.string(), std::strerror(errno));
  const std::filesystem::path tmp(name.data());
  try {
    // Errors name the file being written, not its temporary name (removed below).
    for (const auto part : parts) write_fully(fd, part, path);
    if (::fchmod(fd, static_cast<mode_t>(mode)) != 0 || ::fsync(fd) != 0) {
      fail<IoError>("cannot sync {}: {}", path.string(), std::strerror(errno));
    }
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  kill_points::reach("rename", path.filename().string());
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail<IoError>("cannot move {} into place: {}", path.string(), std::strerror(err));
  }
  // The rename is durable only once the directory entry is.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  return "a special file";
}

std::string size_text(std::uint64_t bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  const auto b = static_cast<double>(bytes);
  if (bytes >= 1024 * 1024 * 1024) return fmt::format("{:.3g} GiB", b / (kMiB * 1024.0));
  if (bytes >= 1024 * 1024) return fmt::format("{:.3g} MiB", b / kMiB);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

UnreadableFile::UnreadableFile(const std::filesystem::path& path, std::string reason)
    : IoError(fmt::format("cannot read {}: {}", path.string(), reason)), reason_(std::move(reason)) {}

InputFile::InputFile(const std::filesystem::path& path) {
  // O_NONBLOCK: the open of a FIFO returns at once instead of waiting for a writer; it changes
  // nothing for a regular file, the only kind kept.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw UnreadableFile(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw UnreadableFile(path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw UnreadableFile(path, fmt::format("it is {}, not a regular file (give the path of a file)",
                                           kind_of(st.st_mode)));
  }
  (void)::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string read_all(const std::filesystem::path& path, std::uint64_t max_bytes) {
  const InputFile file(path);
  if (file.size() > max_bytes) {
    throw UnreadableFile(path, fmt::format("it is {}, more than the {} such a file may be",
                                           size_text(file.size()), size_text(max_bytes)));
  }
  // Read to the end rather than to the size taken at open: a file that grows meanwhile is read
  // as far as the bound, a file that shrinks as far as it goes.
  std::string out;
  out.reserve(static_cast<std::size_t>(file.size()));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(file.fd(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UnreadableFile(path, std::strerror(errno));
    if (n == 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      throw UnreadableFile(path, fmt::format("it grew past the {} such a file may be while it "
                                             "was read", size_text(max_bytes)));
    }
  }
  return out;
}

std::filesystem::path temp_root() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir && *tmpdir ? tmpdir : "/tmp";
}

TempDir::TempDir(std::string_view prefix, std::optional<std::filesystem::path> base) {
  std::string tmpl =
      fmt::format("{}/{}XXXXXX", base ? base->string() : temp_root().string(), prefix);
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    fail<IoError>("cannot create a temporary directory {}: {}", tmpl, std::strerror(errno));
  }
  path_ = name.data();
  write_owner_file(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace dt::files

#include "base/files.hpp"

#include "base/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
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
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  // fmt rather than operator+: GCC 12 at -O3 reports a false -Wrestrict on the concatenation.
  std::string tmpl = (dir / fmt::format(".{}.tmp.XXXXXX", path.filename().string())).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail<IoError>("cannot create a file in {}: {}", dir.string(), std::strerror(errno));
  const std::filesystem::path tmp(name.data());
  try {
    write_fully(fd, content, tmp);
    if (::fchmod(fd, static_cast<mode_t>(mode)) != 0 || ::fsync(fd) != 0) {
      fail<IoError>("cannot sync {}: {}", tmp.string(), std::strerror(errno));
    }
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
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

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IoError>("cannot read {}: {}", path.string(), std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
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
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace dt::files

#pragma once
// Files are written whole or not at all: a temp file beside the target, fsync, rename, fsync of
// the directory. A crash at any moment leaves either the old or the new content, never a torn file.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace dt::files {

// `mode` applies from the first byte written (a secret key is never readable by others, even
// half-written).
void write_atomic(const std::filesystem::path& path, std::string_view content,
                  unsigned mode = 0644);
// Writes all of `content` to a file descriptor, retrying short writes and EINTR; false (errno
// set) on an error. No allocation and no locks, so it is safe anywhere.
[[nodiscard]] bool write_fd(int fd, std::string_view content) noexcept;
[[nodiscard]] std::string read_all(const std::filesystem::path& path);  // IoError names the path

// $TMPDIR when set and not empty, else /tmp: where a TempDir goes unless told otherwise.
[[nodiscard]] std::filesystem::path temp_root();

// A private directory, <base>/<prefix>XXXXXX, removed with everything in it when the object goes
// away. The base is temp_root() unless given (ipc sockets need a short one: zmq_transport.cpp).
// IoError names the template when it cannot be created.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix,
                   std::optional<std::filesystem::path> base = std::nullopt);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace dt::files

#pragma once
// Files are written whole or not at all: a temp file beside the target, fsync, rename, fsync of
// the directory. A crash at any moment leaves either the old or the new content, never a torn file.

#include "base/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dt::files {

// `mode` applies from the first byte written (a secret key is never readable by others, even
// half-written).
void write_atomic(const std::filesystem::path& path, std::string_view content,
                  unsigned mode = 0644);
// The same, for content in pieces written one after the other (no copy into one buffer).
void write_atomic(const std::filesystem::path& path, std::span<const std::string_view> parts,
                  unsigned mode = 0644);
// Writes all of `content` to a file descriptor, retrying short writes and EINTR; false (errno
// set) on an error. No allocation and no locks, so it is safe anywhere.
[[nodiscard]] bool write_fd(int fd, std::string_view content) noexcept;

// Why a file cannot be read: the message is "cannot read PATH: REASON", and callers that say it
// their own way ("cannot read config 'x.yaml': ...") take the reason alone.
class UnreadableFile : public IoError {
 public:
  UnreadableFile(const std::filesystem::path& path, std::string reason);
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

// A regular file open for reading, closed with the object. Anything else is refused without
// waiting: a FIFO (opening one that nobody writes to would block forever), a device such as
// /dev/zero (endless), a socket, a directory. UnreadableFile says why and what to give instead:
// "cannot read /dev/zero: it is a character device, not a regular file (give the path of a
// file)", or the system's reason ("cannot read x.csv: No such file or directory").
class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

inline constexpr std::uint64_t kNoLimit = ~std::uint64_t{0};

// The whole of a regular file (InputFile) of at most `max_bytes`: UnreadableFile names the path, and
// for a larger file both sizes ("is 2.1 GB, more than the 16 MiB such a file may be").
[[nodiscard]] std::string read_all(const std::filesystem::path& path,
                                   std::uint64_t max_bytes = kNoLimit);

// $TMPDIR when set and not empty, else /tmp: where a TempDir goes unless told otherwise.
[[nodiscard]] std::filesystem::path temp_root();

// A private directory, <base>/<prefix>XXXXXX, removed with everything in it when the object goes
// away. The base is temp_root() unless given (ipc sockets need a short one: zmq_transport.cpp).
// IoError names the template when it cannot be created. It holds a file `.owner` naming this
// process (pid and start time), so that sweep_orphans can tell, after a SIGKILL that left the
// directory behind, that nobody owns it any more.
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

// Field 22 of /proc/<pid>/stat: the process's start time in clock ticks since boot, which tells
// a pid reused by another process from the one recorded. Empty when no such process runs on this
// host (or it is a zombie).
[[nodiscard]] std::string process_start_time(long pid);

// Writes `dir`/.owner for sweep_orphans (TempDir does; exposed for tests).
void write_owner_file(const std::filesystem::path& dir) noexcept;

// Removes the directories <base>/<prefix>XXXXXX that a TempDir of a process now gone left behind
// (killed with SIGKILL, it could not remove its own): those of this user whose `.owner` names a
// pid that no longer runs, or runs another program since (its start time differs). A directory
// without an owner file (being made right now, or its maker was killed before it wrote one) is
// left alone for an hour after its last change, then removed too.
// Returns the directories removed; never fails.
std::size_t sweep_orphans(const std::filesystem::path& base, std::string_view prefix) noexcept;

}  // namespace dt::files

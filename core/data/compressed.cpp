#include "core/data/compressed.hpp"
#include "core/data/byte_stream.hpp"
#include "core/data/decode_thread.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/signals.hpp"
#include "core/config/names.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

namespace dt::data {
namespace {

using config::Compression;
namespace fs = std::filesystem;

Compression by_name(const fs::path& path) {
  const auto ext = path.extension().string();
  if (ext == ".gz") return Compression::kGzip;
  if (ext == ".zst" || ext == ".zstd") return Compression::kZstd;
  return Compression::kNone;
}

const char* suffix(Compression c) { return c == Compression::kGzip ? ".gz" : ".zst"; }

// Reads up to `n` bytes (fewer only at the end of the file); EINTR after Ctrl-C ends the run.
std::size_t read_some(int fd, unsigned char* into, std::size_t n, const fs::path& path) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, into + got, n - got);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR && !signals::interrupted()) continue;
      if (errno == EINTR) fail<InterruptedError>("interrupted while decompressing {}", path.string());
      fail<DataError>("cannot read {}: {}", path.string(), std::strerror(errno));
    }
    got += static_cast<std::size_t>(r);
  }
  return got;
}

files::InputFile open_input(const fs::path& path) {
  try {
    return files::InputFile(path);
  } catch (const files::UnreadableFile& e) {
    fail<DataError>("{}: cannot open: {}", path.string(), e.reason());  // as the CSV reader says
  }
}

class Output {
 public:
  explicit Output(const fs::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd_ < 0) fail<IoError>("cannot create {}: {}", path.string(), std::strerror(errno));
  }
  ~Output() { ::close(fd_); }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  void write(const void* data, std::size_t n) {
    if (!files::write_fd(fd_, std::string_view(static_cast<const char*>(data), n))) {
      fail<IoError>("cannot write the decompressed data to {}: {} (after {} bytes; set TMPDIR "
                    "to a folder with room)", path_.string(), std::strerror(errno), total_);
    }
    total_ += n;
  }
  [[nodiscard]] std::uint64_t total() const { return total_; }

 private:
  fs::path path_;
  int fd_ = -1;
  std::uint64_t total_ = 0;
};

}  // namespace

config::Compression compression_of(const fs::path& path, Compression wanted, const char* what,
                                   bool named_by_user) {
  if (wanted == Compression::kNone) return Compression::kNone;
  const auto file = open_input(path);
  std::array<unsigned char, 4> head{};
  const std::size_t n = read_some(file.fd(), head.data(), head.size(), path);
  const Compression content =
      compression_by_content(std::string_view(reinterpret_cast<const char*>(head.data()), n));
  if (wanted != Compression::kAuto) {
    if (content != wanted) {
      fail<DataError>("{} {}: data.compression is {}, but the file does not start like {} "
                      "data{}; set data.compression to {}",
                      what, path.string(), config::name_of(wanted), config::name_of(wanted),
                      content == Compression::kNone ? "" : fmt::format(" (it starts like {})",
                                                                       config::name_of(content)),
                      config::name_of(content == Compression::kNone ? Compression::kAuto : content));
    }
    return wanted;
  }
  if (!named_by_user) return content;
  const Compression named = by_name(path);
  if (named == content || (named != Compression::kNone && n == 0)) return named;
  if (named == Compression::kNone) {
    fail<DataError>("{} {} starts like a {} file, but its name says plain text: name it {}{}, "
                    "or set data.compression: {}",
                    what, path.string(), config::name_of(content), path.filename().string(),
                    suffix(content), config::name_of(content));
  }
  fail<DataError>("{} {} is named like a {} file, but {}; rename it, or set data.compression "
                  "to what it is",
                  what, path.string(), config::name_of(named),
                  content == Compression::kNone
                      ? std::string("does not start like one")
                      : fmt::format("starts like a {} file", config::name_of(content)));
}

std::uint64_t decompress(const fs::path& from, Compression compression, const fs::path& to) {
  if (compression != Compression::kGzip && compression != Compression::kZstd) {
    fail<DataError>("{}: not compressed", from.string());
  }
  // The decompressor runs on a thread of its own and the blocks it fills are written here, so
  // the two overlap on two cores (the copy into the page cache was 15-20% of a zstd file's
  // `validate`, done in turn with the decompression before). Whatever ends the loop (the end,
  // the decompressor's error, a write error, Ctrl-C), the thread has ended when this returns.
  detail::DecodeThread blocks(decompressing(open_bytes(from), compression, from), from);
  Output out(to);
  for (std::string_view block; !(block = blocks.next()).empty();) {
    out.write(block.data(), block.size());
  }
  return out.total();
}

}  // namespace dt::data

#include "core/data/compressed.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/signals.hpp"
#include "core/config/names.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace dt::data {
namespace {

using config::Compression;
namespace fs = std::filesystem;

constexpr std::size_t kChunk = std::size_t{1} << 20;

Compression by_name(const fs::path& path) {
  const auto ext = path.extension().string();
  if (ext == ".gz") return Compression::kGzip;
  if (ext == ".zst" || ext == ".zstd") return Compression::kZstd;
  return Compression::kNone;
}

Compression by_content(const unsigned char* b, std::size_t n) {
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return Compression::kGzip;
  if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) {
    return Compression::kZstd;
  }
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

std::uint64_t gunzip(int in_fd, const fs::path& from, Output& out) {
  z_stream z{};
  // 15 + 32: a gzip or zlib header, told apart by inflate itself.
  if (inflateInit2(&z, 15 + 32) != Z_OK) fail<IoError>("zlib: cannot start a decompression");
  std::vector<unsigned char> in(kChunk), buf(kChunk);
  std::uint64_t consumed = 0;
  bool ended = true;  // at a member boundary: an empty file, or after Z_STREAM_END
  try {
    for (;;) {
      const std::size_t n = read_some(in_fd, in.data(), in.size(), from);
      if (n == 0) break;
      z.next_in = in.data();
      z.avail_in = static_cast<uInt>(n);
      while (z.avail_in > 0) {
        if (ended) {
          ended = false;
          if (inflateReset(&z) != Z_OK) fail<IoError>("zlib: cannot reset");
        }
        z.next_out = buf.data();
        z.avail_out = static_cast<uInt>(buf.size());
        const uInt before = z.avail_in;
        const int rc = inflate(&z, Z_NO_FLUSH);
        const std::uint64_t at = consumed + (n - z.avail_in);
        const bool stuck = rc == Z_BUF_ERROR && z.avail_in == before && z.avail_out == buf.size();
        if ((rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) || stuck) {
          fail<DataError>("{}: corrupt gzip data near byte {}: {}", from.string(), at,
                          z.msg != nullptr ? z.msg : "inflate failed");
        }
        out.write(buf.data(), buf.size() - z.avail_out);
        if (rc == Z_STREAM_END) ended = true;  // another member may follow (as zcat reads)
      }
      consumed += n;
    }
    if (!ended) {
      fail<DataError>("{}: the gzip data ends early (after {} bytes): the file is truncated",
                      from.string(), consumed);
    }
  } catch (...) {
    inflateEnd(&z);
    throw;
  }
  inflateEnd(&z);
  return out.total();
}

std::uint64_t unzstd(int in_fd, const fs::path& from, Output& out) {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  if (ctx == nullptr) fail<IoError>("zstd: cannot start a decompression");
  std::vector<unsigned char> in(ZSTD_DStreamInSize() > kChunk ? ZSTD_DStreamInSize() : kChunk);
  std::vector<unsigned char> buf(ZSTD_DStreamOutSize() > kChunk ? ZSTD_DStreamOutSize() : kChunk);
  std::uint64_t consumed = 0;
  std::size_t last = 0;  // 0 after a complete frame
  try {
    for (;;) {
      const std::size_t n = read_some(in_fd, in.data(), in.size(), from);
      if (n == 0) break;
      ZSTD_inBuffer input{in.data(), n, 0};
      // Until the input is taken; an output buffer of at least ZSTD_DStreamOutSize() lets
      // every call flush a whole block, so nothing is held back at the end (zstd's manual).
      while (input.pos < input.size) {
        ZSTD_outBuffer output{buf.data(), buf.size(), 0};
        last = ZSTD_decompressStream(ctx, &output, &input);
        if (ZSTD_isError(last)) {
          fail<DataError>("{}: corrupt zstd data near byte {}: {}", from.string(),
                          consumed + input.pos, ZSTD_getErrorName(last));
        }
        out.write(buf.data(), output.pos);
      }
      consumed += n;
    }
    if (last != 0) {
      fail<DataError>("{}: the zstd data ends early (after {} bytes): the file is truncated",
                      from.string(), consumed);
    }
  } catch (...) {
    ZSTD_freeDCtx(ctx);
    throw;
  }
  ZSTD_freeDCtx(ctx);
  return out.total();
}

}  // namespace

config::Compression compression_of(const fs::path& path, Compression wanted, const char* what,
                                   bool named_by_user) {
  if (wanted == Compression::kNone) return Compression::kNone;
  const auto file = open_input(path);
  std::array<unsigned char, 4> head{};
  const std::size_t n = read_some(file.fd(), head.data(), head.size(), path);
  const Compression content = by_content(head.data(), n);
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
  const auto file = open_input(from);
  Output out(to);
  if (compression == Compression::kGzip) return gunzip(file.fd(), from, out);
  if (compression == Compression::kZstd) return unzstd(file.fd(), from, out);
  fail<DataError>("{}: not compressed", from.string());
}

}  // namespace dt::data

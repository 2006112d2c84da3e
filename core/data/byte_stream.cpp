// Byte sources (byte_stream.hpp): a file or stdin, read with read(2); gzip and zstd decompressed
// a buffer at a time (zlib, libzstd); a source with a look-ahead for telling formats apart.

#include "core/data/byte_stream.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "base/signals.hpp"

#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

namespace dt::data {
namespace {

namespace fs = std::filesystem;
using config::Compression;

constexpr std::size_t kInChunk = std::size_t{1} << 20;

// stdin, or a file it holds open.
class FdSource final : public ByteSource {
 public:
  FdSource(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  explicit FdSource(const fs::path& path) : name_(path.string()) {
    try {
      file_.emplace(path);
    } catch (const files::UnreadableFile& e) {
      fail<DataError>("{}: cannot open: {}", name_, e.reason());  // as the CSV reader says
    }
    fd_ = file_->fd();
  }
  std::size_t read(char* out, std::size_t n) override {
    for (;;) {
      const ssize_t r = ::read(fd_, out, n);
      if (r >= 0) return static_cast<std::size_t>(r);
      if (errno == EINTR && !signals::interrupted()) continue;
      if (errno == EINTR) fail<InterruptedError>("interrupted while reading {}", name_);
      fail<DataError>("{}: cannot read: {}", name_, std::strerror(errno));
    }
  }

 private:
  std::optional<files::InputFile> file_;
  int fd_ = -1;
  std::string name_;
};

// gzip (or zlib) members one after another, as zcat reads them.
class GzipSource final : public ByteSource {
 public:
  GzipSource(std::unique_ptr<ByteSource> in, std::string name)
      : in_(std::move(in)), name_(std::move(name)), buf_(kInChunk) {
    // 15 + 32: a gzip or zlib header, told apart by inflate itself.
    if (inflateInit2(&z_, 15 + 32) != Z_OK) fail<IoError>("zlib: cannot start a decompression");
  }
  ~GzipSource() override { inflateEnd(&z_); }

  std::size_t read(char* out, std::size_t n) override {
    for (;;) {
      if (z_.avail_in == 0 && !pending_) {
        if (eof_) {
          if (!ended_) {
            fail<DataError>("{}: the gzip data ends early (after {} bytes): the file is truncated",
                            name_, consumed_);
          }
          return 0;
        }
        const std::size_t k = in_->read(reinterpret_cast<char*>(buf_.data()), buf_.size());
        if (k == 0) {
          eof_ = true;
          continue;
        }
        chunk_start_ = consumed_;
        consumed_ += k;
        z_.next_in = buf_.data();
        z_.avail_in = static_cast<uInt>(k);
        chunk_ = k;
      }
      if (ended_ && z_.avail_in > 0) {
        ended_ = false;
        if (inflateReset(&z_) != Z_OK) fail<IoError>("zlib: cannot reset");
      }
      z_.next_out = reinterpret_cast<Bytef*>(out);
      z_.avail_out = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
      const uInt room = z_.avail_out;
      const uInt before = z_.avail_in;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      const std::size_t produced = room - z_.avail_out;
      const bool flushing = pending_;
      pending_ = z_.avail_out == 0 && rc == Z_OK;  // inflate may hold more output
      if (flushing && rc == Z_BUF_ERROR && produced == 0) continue;  // nothing was held back
      const bool stuck = rc == Z_BUF_ERROR && z_.avail_in == before && produced == 0;
      if ((rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) || stuck) {
        fail<DataError>("{}: corrupt gzip data near byte {}: {}", name_,
                        chunk_start_ + (chunk_ - z_.avail_in),
                        z_.msg != nullptr ? z_.msg : "inflate failed");
      }
      if (rc == Z_STREAM_END) ended_ = true;  // another member may follow
      if (produced > 0) return produced;
    }
  }

 private:
  std::unique_ptr<ByteSource> in_;
  std::string name_;
  std::vector<unsigned char> buf_;
  z_stream z_{};
  std::uint64_t consumed_ = 0, chunk_start_ = 0;
  std::size_t chunk_ = 0;
  bool ended_ = true;  // at a member boundary: nothing read yet, or after Z_STREAM_END
  bool eof_ = false;
  bool pending_ = false;
};

// zstd frames one after another.
class ZstdSource final : public ByteSource {
 public:
  ZstdSource(std::unique_ptr<ByteSource> in, std::string name)
      : in_(std::move(in)), name_(std::move(name)), buf_(std::max(ZSTD_DStreamInSize(), kInChunk)) {
    ctx_ = ZSTD_createDCtx();
    if (ctx_ == nullptr) fail<IoError>("zstd: cannot start a decompression");
  }
  ~ZstdSource() override { ZSTD_freeDCtx(ctx_); }

  std::size_t read(char* out, std::size_t n) override {
    for (;;) {
      if (input_.pos == input_.size && !pending_) {
        if (eof_) {
          if (last_ != 0) {
            fail<DataError>("{}: the zstd data ends early (after {} bytes): the file is truncated",
                            name_, consumed_);
          }
          return 0;
        }
        const std::size_t k = in_->read(buf_.data(), buf_.size());
        if (k == 0) {
          eof_ = true;
          continue;
        }
        chunk_start_ = consumed_;
        consumed_ += k;
        input_ = ZSTD_inBuffer{buf_.data(), k, 0};
      }
      ZSTD_outBuffer output{out, n, 0};
      last_ = ZSTD_decompressStream(ctx_, &output, &input_);
      if (ZSTD_isError(last_)) {
        fail<DataError>("{}: corrupt zstd data near byte {}: {}", name_,
                        chunk_start_ + input_.pos, ZSTD_getErrorName(last_));
      }
      pending_ = output.pos == n;  // a full output buffer: more may be held back
      if (output.pos > 0) return output.pos;
    }
  }

 private:
  std::unique_ptr<ByteSource> in_;
  std::string name_;
  std::vector<char> buf_;
  ZSTD_DCtx* ctx_ = nullptr;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  std::uint64_t consumed_ = 0, chunk_start_ = 0;
  std::size_t last_ = 0;  // 0 after a complete frame
  bool eof_ = false;
  bool pending_ = false;
};

}  // namespace

std::unique_ptr<ByteSource> open_bytes(const fs::path& path) {
  if (path == "-") {
    if (::isatty(STDIN_FILENO) == 1) {
      fail<UsageError>("the data is '-', which reads it from stdin, but stdin is a terminal: "
                       "pipe the rows into it (... | disttrain predict model.json -, or "
                       "< data.csv)");
    }
    return std::make_unique<FdSource>(STDIN_FILENO, "stdin");
  }
  return std::make_unique<FdSource>(path);
}

std::unique_ptr<ByteSource> decompressing(std::unique_ptr<ByteSource> in, Compression compression,
                                          const fs::path& name) {
  if (compression == Compression::kGzip) return std::make_unique<GzipSource>(std::move(in), name);
  if (compression == Compression::kZstd) return std::make_unique<ZstdSource>(std::move(in), name);
  return in;
}

std::string_view PeekedSource::head(std::size_t want) {
  while (head_.size() < want) {
    const std::size_t had = head_.size();
    head_.resize(want);
    const std::size_t got = in_->read(head_.data() + had, want - had);
    head_.resize(had + got);
    if (got == 0) break;
  }
  return std::string_view(head_).substr(0, std::min(want, head_.size()));
}

std::string_view PeekedSource::first_line(std::size_t max) {
  const auto ends_a_line = [](std::string_view text) {
    for (std::size_t nl; (nl = text.find('\n')) != std::string_view::npos; text.remove_prefix(nl + 1)) {
      if (text.substr(0, nl).find_first_not_of(" \t\r") != std::string_view::npos) return true;
    }
    return false;
  };
  while (head_.size() < max && !ends_a_line(head_)) {
    const std::size_t had = head_.size();
    head_.resize(std::min(max, had + (std::size_t{4} << 10)));
    const std::size_t got = in_->read(head_.data() + had, head_.size() - had);
    head_.resize(had + got);
    if (got == 0) break;
  }
  return std::string_view(head_).substr(0, std::min(max, head_.size()));
}

std::size_t PeekedSource::read(char* out, std::size_t n) {
  if (served_ < head_.size()) {
    const std::size_t k = std::min(n, head_.size() - served_);
    std::memcpy(out, head_.data() + served_, k);
    served_ += k;
    if (served_ == head_.size()) {  // all served: the look-ahead's memory goes
      std::string().swap(head_);
      served_ = 0;
    }
    return k;
  }
  return in_->read(out, n);
}

Compression compression_by_content(std::string_view head) noexcept {
  const auto* b = reinterpret_cast<const unsigned char*>(head.data());
  const std::size_t n = head.size();
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return Compression::kGzip;
  if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) {
    return Compression::kZstd;
  }
  return Compression::kNone;
}

}  // namespace dt::data

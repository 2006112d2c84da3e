#include "core/data/compressed.hpp"
#include "core/data/byte_stream.hpp"
#include "core/data/csv.hpp"
#include "core/data/csv_io.hpp"
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
#include <optional>
#include <string>
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

// index_csv's pass over the decompressed file, made while it is written (the writing thread has
// time to spare: the decompressor is the slower stage), so that `run` need not read the whole
// file again before it plans. It starts once the first MiB is written (the header, and the
// first lines that tell the separator, read from the file as index_csv reads them), then takes
// each block as it is written. It gives up quietly at anything it cannot do as index_csv would
// (a header past the first MiB, a bad row): index_csv then indexes the file and says what is
// wrong, as before.
class IndexOnTheWay {
 public:
  IndexOnTheWay(CsvIndex& index, fs::path path) : index_(index), path_(std::move(path)) {}
  void add(std::string_view block) {
    if (failed_) return;
    try {
      if (indexer_) {
        indexer_->feed(block.data(), block.size());
        return;
      }
      pending_.append(block);
      if (pending_.size() >= std::max(detail::kDelimiterHead, std::size_t{1} << 20)) start();
    } catch (const DataError&) {
      give_up();
    }
  }
  // At the end of the data: true with the whole index in `index`.
  [[nodiscard]] bool finish() {
    try {
      if (!failed_ && !indexer_) start();
      if (!failed_) indexer_->finish();
    } catch (const DataError&) {
      give_up();
    }
    return !failed_;
  }

 private:
  void start() {
    const char forced = index_.delimiter;
    index_ = CsvIndex{};
    index_.path = path_;
    index_.delimiter = detail::choose_delimiter(path_, forced);
    detail::RecordReader reader(path_, 0, 1, index_.delimiter);
    detail::read_header(index_, reader);
    const std::uint64_t offset = reader.offset();
    // The header must have ended at a line end inside what is written, not at its end.
    if (offset == 0 || offset > pending_.size() || pending_[offset - 1] != '\n') {
      give_up();
      return;
    }
    indexer_.emplace(index_, offset, reader.line());
    indexer_->feed(pending_.data() + offset, pending_.size() - offset);
    std::string().swap(pending_);
  }
  void give_up() {
    failed_ = true;
    indexer_.reset();
    std::string().swap(pending_);
  }

  CsvIndex& index_;
  fs::path path_;
  std::string pending_;  // the bytes written before the indexer started
  std::optional<StreamIndexer> indexer_;
  bool failed_ = false;
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

std::uint64_t decompress(const fs::path& from, Compression compression, const fs::path& to,
                         CsvIndex* index) {
  if (compression != Compression::kGzip && compression != Compression::kZstd) {
    fail<DataError>("{}: not compressed", from.string());
  }
  // The decompressor runs on a thread of its own and the blocks it fills are written here, so
  // the two overlap on two cores (the copy into the page cache was 15-20% of a zstd file's
  // `validate`, done in turn with the decompression before). Whatever ends the loop (the end,
  // the decompressor's error, a write error, Ctrl-C), the thread has ended when this returns.
  detail::DecodeThread blocks(decompressing(open_bytes(from), compression, from), from);
  Output out(to);
  std::optional<IndexOnTheWay> follow;
  if (index != nullptr) follow.emplace(*index, to);
  for (std::string_view block; !(block = blocks.next()).empty();) {
    out.write(block.data(), block.size());
    if (follow) follow->add(block);
  }
  if (follow && !follow->finish()) *index = CsvIndex{};
  return out.total();
}

}  // namespace dt::data

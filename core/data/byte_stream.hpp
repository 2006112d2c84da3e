#pragma once
// Bytes read once, front to back: a file, stdin (a pipe), or either decompressed on the fly
// (gzip, zstd). predict and eval read their data this way, in constant memory whatever its size
// (csv_stream.hpp); decompress() writes a whole file from the same sources.

#include "core/config/config.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace dt::data {

class ByteSource {
 public:
  ByteSource() = default;
  virtual ~ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  // Up to n bytes (n > 0) into `out`; 0 only at the end. DataError for a read error or corrupt
  // compressed data (naming the file and the byte offset), InterruptedError after Ctrl-C.
  [[nodiscard]] virtual std::size_t read(char* out, std::size_t n) = 0;
};

// A regular file opened for reading (DataError "PATH: cannot open: ..." otherwise: a FIFO or a
// device is refused, as for every file disttrain reads), or stdin for "-" (named "stdin" in
// messages; UsageError when it is a terminal).
[[nodiscard]] std::unique_ptr<ByteSource> open_bytes(const std::filesystem::path& path);

// `in` decompressed as it is read (gzip: every member, as zcat does; zstd: every frame); kNone
// returns `in`. `name` is the compressed file's name in messages ("x.csv.gz: corrupt gzip data
// near byte 1234: ...", "...: the gzip data ends early ... truncated").
[[nodiscard]] std::unique_ptr<ByteSource> decompressing(std::unique_ptr<ByteSource> in,
                                                        config::Compression compression,
                                                        const std::filesystem::path& name);

// `in` read ahead on a thread of its own (a few 1 MiB blocks ahead), so that decompressing
// overlaps with what the caller does with the bytes; the same errors, in order; the thread has
// ended when the source is destroyed. `name` names the data in the Ctrl-C message.
[[nodiscard]] std::unique_ptr<ByteSource> read_ahead(std::unique_ptr<ByteSource> in,
                                                     const std::filesystem::path& name);

// A source whose first bytes can be looked at before they are read (to tell a format or a
// compression by its content): head() reads up to `want` bytes ahead, and read() then returns
// them first.
class PeekedSource final : public ByteSource {
 public:
  explicit PeekedSource(std::unique_ptr<ByteSource> in) : in_(std::move(in)) {}
  // The first bytes: fewer than `want` only when the source is shorter.
  [[nodiscard]] std::string_view head(std::size_t want);
  // The first bytes up to the end of the first line that is not blank (its '\n' included), or
  // `max` of them, or all of a shorter source: reads only as far as it must, so a pipe that
  // sends a line at a time is not waited on for more.
  [[nodiscard]] std::string_view first_line(std::size_t max);
  [[nodiscard]] std::size_t read(char* out, std::size_t n) override;

 private:
  std::unique_ptr<ByteSource> in_;
  std::string head_;
  std::size_t served_ = 0;  // bytes of head_ already returned by read()
};

// The compression the first bytes say (gzip 1f 8b, zstd 28 b5 2f fd), else kNone.
[[nodiscard]] config::Compression compression_by_content(std::string_view head) noexcept;

}  // namespace dt::data

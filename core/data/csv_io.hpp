#pragma once
// Internal to core/data: the file handle and the record parser shared by index_csv, CsvReader and
// load_shard. Not part of the module's interface (nothing outside core/data/ includes it).

#include "core/data/csv.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dt::data::detail {

inline constexpr std::size_t kBlockSize = std::size_t{1} << 20;

// An open file read with pread: no shared file position, so a reader can jump anywhere.
// DataError names the path and errno text when it cannot be opened or read.
class FileHandle {
 public:
  explicit FileHandle(const std::filesystem::path& path);
  ~FileHandle();
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  // Reads up to n bytes at offset; fewer only at the end of the file.
  [[nodiscard]] std::size_t read_at(std::uint64_t offset, char* out, std::size_t n) const;
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// Length of the UTF-8 byte order mark at the start of the file (0 or 3).
[[nodiscard]] std::size_t bom_length(const FileHandle& file);

// "'text'" for messages, shortened when a cell is long and with control bytes escaped.
[[nodiscard]] std::string quote_for_message(std::string_view text);

// The cell without surrounding spaces and tabs.
[[nodiscard]] std::string_view trim_spaces(std::string_view text) noexcept;

// A decimal or exponent number (optional leading '+'), already trimmed; false when the text is
// not a number. May give nan or inf: the caller decides what is allowed. (A bool and an out
// parameter rather than std::optional: this runs once per cell, and returning the optional
// through memory cost a store-forwarding stall on every call.)
[[nodiscard]] bool to_number(std::string_view trimmed, double& out);

// Parses a numeric cell (the text of parse_number, with the same messages).
[[nodiscard]] double parse_cell(std::string_view text, std::uint64_t line, std::uint64_t column,
                                const std::filesystem::path& path, const std::string& name);

// A field of the current record, pointing into the reader's buffer (or, for a quoted field with
// "" escapes, into its scratch string). Valid until the reader's next next_views/seek call.
struct FieldView {
  const char* data = nullptr;
  std::size_t size = 0;
  std::uint64_t line = 0;
  std::uint64_t column = 0;
  std::size_t scratch = 0;  // offset in the scratch string, while the record is being parsed
  [[nodiscard]] std::string_view text() const noexcept { return {data, size}; }
};

// Parses records from a buffered window of the file. A record is always parsed from contiguous
// memory: when one runs past the end of the buffer, the partial record is moved to the front,
// the buffer is refilled (grown if one record is larger than it) and the record parsed again.
// That keeps the per-field work to one scan and one string assign, with no per-byte branching
// on buffer boundaries.
//
// Blank lines are skipped here; deciding whether one is allowed is index_csv's job.
class RecordReader {
 public:
  RecordReader(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t line);
  // Moves to a row start. Cheap when the offset is inside the current buffer, which is the
  // common case for the sorted, nearby segments of a shard plan.
  void seek(std::uint64_t offset, std::uint64_t line);
  // Copies the fields out (CsvReader::next).
  [[nodiscard]] bool next(std::vector<CsvField>& fields);
  // The fast form: no copy, no allocation once `fields` and the scratch string have grown.
  [[nodiscard]] bool next_views(std::vector<FieldView>& fields);
  // File offset and line of the next unread byte.
  [[nodiscard]] std::uint64_t offset() const noexcept { return buf_offset_ + pos_; }
  [[nodiscard]] std::uint64_t line() const noexcept { return line_; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  [[nodiscard]] std::uint64_t file_size() const noexcept { return file_.size(); }

 private:
  enum class Parse { kRecord, kBlank, kEnd, kNeedMore };
  [[nodiscard]] Parse parse(std::vector<FieldView>& fields);
  void refill();

  std::filesystem::path path_;
  FileHandle file_;
  std::unique_ptr<char[]> buf_;
  std::size_t capacity_ = kBlockSize;
  std::uint64_t buf_offset_ = 0;  // file offset of buf_[0]
  std::size_t pos_ = 0;           // next unread byte in buf_
  std::size_t end_ = 0;           // bytes of buf_ that hold file data
  bool eof_ = false;              // the file ends at buf_offset_ + end_
  std::uint64_t line_ = 1;
  std::uint64_t line_start_ = 0;  // file offset where line_ starts (columns count from it)
  std::string scratch_;           // unescaped text of quoted fields that contain ""
  std::vector<FieldView> views_;  // next()'s own views
};

}  // namespace dt::data::detail

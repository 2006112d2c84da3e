#pragma once
// Internal to core/data: the record parser shared by index_csv, CsvReader and load_shard (the
// file itself is read through data_file.hpp). Not part of the module's interface (nothing
// outside core/data/ includes it).

#include "core/config/names.hpp"
#include "core/data/csv.hpp"
#include "core/data/data_file.hpp"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dt::data {
class ByteSource;
struct SourceInfo;
struct Shard;
enum class LabelKind;
}  // namespace dt::data

namespace dt::data::detail {

// 256 KiB: a block read with pread is still in the core's L2 cache when it is parsed (1 MiB
// was slower by a few percent).
inline constexpr std::size_t kBlockSize = std::size_t{1} << 18;

// The separator to read `path` with: `forced`, or detected when it is 0 (detect_delimiter).
// DataError when a forced separator does not split the header and another one does, naming it.
[[nodiscard]] char choose_delimiter(const std::filesystem::path& path, char forced);

// The longest record a stream reader takes (a file's is bounded by the file).
inline constexpr std::size_t kMaxStreamRecord = std::size_t{64} << 20;

// How much of a file the separator is detected from (its header and first data line in it).
inline constexpr std::size_t kDelimiterHead = std::size_t{64} << 10;

// detect_delimiter for the first bytes of a stream (at most kDelimiterHead of them), `name`
// telling a .tsv.
[[nodiscard]] char detect_delimiter_in(std::string_view head, const std::filesystem::path& name);

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
  RecordReader(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t line,
               char delimiter = ',');
  // Reads `source` front to back (a pipe, a decompressor: csv_stream.hpp), from its first byte
  // (a byte order mark skipped); `name` names it in messages. seek() is not for this form. A
  // blank line followed by a record is an error here (index_csv's rule, which such a reader
  // cannot rely on).
  RecordReader(const std::filesystem::path& name, ByteSource& source, char delimiter);
  // Moves to a row start. Cheap when the offset is inside the current buffer, which is the
  // common case for the sorted, nearby segments of a shard plan.
  void seek(std::uint64_t offset, std::uint64_t line);
  // Copies the fields out (CsvReader::next).
  [[nodiscard]] bool next(std::vector<CsvField>& fields);
  // The fast form: no copy, no allocation once `fields` and the scratch string have grown.
  [[nodiscard]] bool next_views(std::vector<FieldView>& fields);
  // The fast path's view (PlainRow): the unread bytes of the buffer, refilled first when fewer
  // than `want` are left and the file has more. A row that does not fit is left to next_views.
  [[nodiscard]] std::string_view peek(std::size_t want);
  // Consumes `bytes` unread bytes that were exactly one data line, its '\n' included.
  void consume_line(std::size_t bytes) noexcept {
    pos_ += bytes;
    ++line_;
    line_start_ = buf_offset_ + pos_;
  }
  // File offset and line of the next unread byte.
  [[nodiscard]] std::uint64_t offset() const noexcept { return buf_offset_ + pos_; }
  [[nodiscard]] std::uint64_t line() const noexcept { return line_; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  [[nodiscard]] std::uint64_t file_size() const noexcept { return file_ ? file_->size() : 0; }

 private:
  enum class Parse { kRecord, kBlank, kEnd, kNeedMore };
  [[nodiscard]] Parse parse(std::vector<FieldView>& fields);
  void refill();
  void refill_mapped();
  [[nodiscard]] const char* base() const noexcept { return map_.ok() ? map_.data() : buf_.get(); }

  // Mapped (map_.ok()): the buffer is the file itself, buf_offset_ stays 0 and end_ is how far
  // it has been populated; mapped_from_ is the first byte still mapped in. Else buf_ holds a
  // window read with pread.
  std::filesystem::path path_;
  char sep_ = ',';  // the field separator
  std::optional<FileHandle> file_;  // empty when reading a stream
  MappedFile map_;
  ByteSource* stream_ = nullptr;
  std::uint64_t blank_line_ = 0;  // a stream's first blank line after the header
  std::uint64_t mapped_from_ = 0;
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

// Bit i set where p[i] is a newline, the separator (`comma`: ',' or the file's delimiter) or a
// double quote, for 64 bytes (the index scan).
struct ByteMasks {
  std::uint64_t newline = 0, comma = 0, quote = 0;
};
// The portable form, which compilers vectorize (arm64); byte_masks uses SSE2 on x86-64, part of
// its baseline, so no run-time dispatch is needed.
[[nodiscard]] inline ByteMasks byte_masks_portable(const char* p, char sep = ',') noexcept {
  ByteMasks m;
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    m.newline |= p[i] == '\n' ? bit : 0;
    m.comma |= p[i] == sep ? bit : 0;
    m.quote |= p[i] == '"' ? bit : 0;
  }
  return m;
}

[[nodiscard]] inline ByteMasks byte_masks(const char* p, char sep = ',') noexcept {
#if defined(__SSE2__)
  const __m128i newline = _mm_set1_epi8('\n');
  const __m128i comma = _mm_set1_epi8(sep);
  const __m128i quote = _mm_set1_epi8('"');
  ByteMasks m;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const auto mask = [&](__m128i c) {
      const int bits = _mm_movemask_epi8(_mm_cmpeq_epi8(v, c));
      return static_cast<std::uint64_t>(static_cast<std::uint16_t>(bits)) << (16 * k);
    };
    m.newline |= mask(newline);
    m.comma |= mask(comma);
    m.quote |= mask(quote);
  }
  return m;
#else
  return byte_masks_portable(p, sep);
#endif
}

// Set bits of x. std::popcount is a libgcc call on baseline x86-64 (no POPCNT instruction);
// this is a dozen inline instructions.
[[nodiscard]] constexpr int bit_count(std::uint64_t x) noexcept {
  x -= (x >> 1) & 0x5555555555555555ULL;
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
}

// Correctly rounded decimal -> double, stopping at the first byte that is not part of the
// number: fast_float (Eisel-Lemire, header-only) when its headers are installed, else the
// standard library's std::from_chars. Both are exact, so they give the same bits; fast_float
// inlines into the row loop and parses 17-digit cells about 25% faster.
[[nodiscard]] std::from_chars_result parse_double(const char* first, const char* last,
                                                  double& out) noexcept;

// The fast row parser's number (PlainRow, and the hashed CSV's HashedRow): at p an optional '-'
// then a digit, parsed exactly (the bits parse_cell gives) to a finite value; p is advanced to
// the byte after the number. False, p unchanged, for anything else. Reads at most `end`.
[[nodiscard]] bool plain_cell_number(const char*& p, const char* end, double& out) noexcept;

// How the fast row parser uses each column.
enum class CellUse : std::uint8_t {
  kSkip,          // not read (predict: a column the model does not use)
  kFeature,       // a number stored at its feature index
  kNumericLabel,  // a number stored as the label
  kBinaryLabel,   // 0 or 1 (as a number: "1.0", "-0")
  kTextLabel,     // class text, handed back to the caller
};

// The fast path of loading a shard: one row of plain cells (unquoted, no surrounding spaces,
// numbers that parse exactly to a finite value) parsed in one pass straight into the shard's
// row. Anything else -- a quote, a space, a bad or non-finite number, a missing or extra field,
// a blank line, a row that runs past the buffer -- makes parse() return nullptr without
// consuming anything, and the caller re-reads the row with RecordReader::next_views, which
// either accepts it or reports the exact error with file:line:column. So this path only ever
// accepts what the general one accepts, with the same values (both parsers are exact).
class PlainRow {
 public:
  explicit PlainRow(std::vector<CellUse> use, std::vector<std::uint32_t> target, char sep = ',')
      : use_(std::move(use)), target_(std::move(target)), sep_(sep) {}
  // Returns the byte after the row's '\n' (or nullptr, see above). Features go to
  // row[target], a numeric or binary label to `label`, a text label's bytes to `text`.
  [[nodiscard]] const char* parse(const char* p, const char* end, double* row, double& label,
                                  std::string_view& text) const noexcept;

 private:
  std::vector<CellUse> use_;
  std::vector<std::uint32_t> target_;  // feature index for kFeature cells
  char sep_;                           // the field separator
};

// index_csv's header: index.columns from the first record, checked (a blank line before it, a
// CR-only line end, an empty or duplicate name); DataError naming index.path otherwise.
void read_header(CsvIndex& index, RecordReader& reader);

// Loads up to shard.x.rows() rows from a stream reader placed after the header, as load_shard
// reads a CSV (the same fast path, values and messages); `source` describes the columns. Returns
// the rows read: fewer only at the end of the data (dataset.cpp).
[[nodiscard]] std::uint64_t load_stream_rows(RecordReader& reader, const SourceInfo& source,
                                             Shard& shard, LabelKind kind,
                                             config::Missing missing);

}  // namespace dt::data::detail

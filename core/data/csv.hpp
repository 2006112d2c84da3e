#pragma once
// CSV reading (RFC 4180): header row, double-quoted fields with "" escapes and embedded commas or
// newlines, LF or CRLF line ends, an optional UTF-8 byte order mark. Errors name file:line:column.
//
// The coordinator indexes a file once (row starts as byte offsets and line numbers, without
// converting numbers); each worker then seeks straight to its own rows and parses only those.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace dt::data {

struct CellScan;

struct CsvIndex {
  std::filesystem::path path;
  std::vector<std::string> columns;       // header names, BOM stripped, unquoted
  char delimiter = ',';                   // the field separator: ',', '\t', ';' or '|'
  std::vector<std::uint64_t> row_offset;  // byte offset where data row i starts
  std::vector<std::uint64_t> row_line;    // 1-based line number where data row i starts
  std::uint64_t file_size = 0;
  [[nodiscard]] std::uint64_t rows() const noexcept { return row_offset.size(); }
};

// Reads the whole file once: header, row boundaries, and the field count of every row. Throws
// DataError for an empty file, a missing header, an unterminated quote, or a ragged row
// ("data.csv:17:1: row has 4 fields, the header has 5"). Blank lines at the end are ignored;
// a blank line in the middle is an error. With threads > 1 a large file is indexed in two
// halves at once (the second from the first line start past the middle), with the same result
// and the same errors as one pass: a half that starts inside a quoted field, or that has an
// error, is read again in order. Files under min_parallel_bytes are one pass (tests lower it).
//
// `delimiter` 0 detects the separator (detect_delimiter); else it is used as given, and a header
// it does not split while another does is refused with the one the header seems to use.
//
// `cells` (csv_cells.hpp), when given, gathers the distinct values of a few columns on the way.
[[nodiscard]] CsvIndex index_csv(const std::filesystem::path& path, unsigned threads = 1,
                                 std::uint64_t min_parallel_bytes = std::uint64_t{64} << 20,
                                 char delimiter = 0, CellScan* cells = nullptr);

// index_csv's pass over bytes that come a block at a time with no file behind them (a stream
// being decompressed: validate, issue 15): the same rows, lines, checks and messages as
// index_csv of a file holding the same bytes, read in one pass. `index` holds the header (path,
// columns, delimiter: read_header's) and stays the caller's; `offset` and `line` are where the
// header ended. feed() takes the bytes from `offset` on, in order; finish() at their end.
class StreamIndexer {
 public:
  StreamIndexer(CsvIndex& index, std::uint64_t offset, std::uint64_t line);
  ~StreamIndexer();
  StreamIndexer(const StreamIndexer&) = delete;
  StreamIndexer& operator=(const StreamIndexer&) = delete;
  void feed(const char* data, std::size_t n);
  void finish();  // sets index.file_size; DataError for a file with no data row, as index_csv

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The separator of a file: tab for a name ending in .tsv; else the one of ',', '\t', ';', '|'
// that splits the header line into the most fields (more than one), the first data line (if
// any) into as many; ',' when none does.
[[nodiscard]] char detect_delimiter(const std::filesystem::path& path);

// One parsed record: its fields unquoted, with the line and column each field starts at.
struct CsvField {
  std::string text;
  std::uint64_t line = 0;
  std::uint64_t column = 0;  // 1-based, in bytes
};

// Sequential reader that starts at a byte offset (a row start from the index) and yields records.
class CsvReader {
 public:
  CsvReader(const std::filesystem::path& path, std::uint64_t byte_offset, std::uint64_t line,
            char delimiter = ',');
  ~CsvReader();  // defined where Impl is complete
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;
  // Reads the next record into `fields` (reusing its storage); false at end of file.
  [[nodiscard]] bool next(std::vector<CsvField>& fields);
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  struct Impl;
  std::filesystem::path path_;
  std::unique_ptr<Impl> impl_;  // pimpl keeps the file handle and buffers out of this header
};

// Parses a numeric cell: plain decimal or exponent notation, surrounding spaces allowed.
// Throws DataError "file:line:col: column 'x': 'abc' is not a number" for text, and for
// nan/inf ("... is not finite").
[[nodiscard]] double parse_number(const CsvField& field, const std::filesystem::path& path,
                                  const std::string& column);

}  // namespace dt::data

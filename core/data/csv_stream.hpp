#pragma once
// A CSV or TSV read once, front to back, from a byte stream (a file, stdin, a decompressor):
// predict and eval read their data this way, a chunk of rows at a time, so their memory does
// not grow with the data. The rows are parsed as a run's shards are (load_shard: the same fast
// path, values and messages), without an index: the checks index_csv makes on the whole file
// first (a ragged row, a blank line in the middle, an unterminated quote) are made as the rows
// come, so an error can follow the rows before it.

#include "core/data/byte_stream.hpp"
#include "core/data/dataset.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace dt::data {

namespace detail {
class RecordReader;
class IndexingTee;
}

class CsvStream {
 public:
  // Reads the header now, with index_csv's checks and messages; the separator is detected from
  // the first lines as index_csv does (a .tsv `name` is tab-separated). `name` names the data in
  // messages ("stdin:7:3: ...").
  // `delimiter`: the separator as given (data.delimiter), 0 to detect it. `index`: also index
  // the rows as they are read (a StreamIndexer), for index() (validate of a compressed file).
  CsvStream(std::unique_ptr<PeekedSource> source, const std::filesystem::path& name,
            char delimiter = 0, bool index = false);
  ~CsvStream();
  CsvStream(const CsvStream&) = delete;
  CsvStream& operator=(const CsvStream&) = delete;
  [[nodiscard]] const std::vector<std::string>& columns() const noexcept { return header_.columns; }
  [[nodiscard]] char delimiter() const noexcept { return header_.delimiter; }
  [[nodiscard]] const std::filesystem::path& name() const noexcept { return header_.path; }
  // The header, and with `index` the rows read so far; whole, as index_csv would make it of a
  // file holding the same bytes (file_size set), once indexed() (next() has met the end).
  [[nodiscard]] const CsvIndex& index() const noexcept { return header_; }
  [[nodiscard]] bool indexed() const noexcept;
  // The next rows (at most max_rows; fewer only at the end, none after it) of the columns
  // `source` describes (its columns must be columns()); `missing`: what a missing cell becomes
  // (the model's data.missing). A sparse `source` (hashed columns: a sparse model's) gives
  // shard.sparse rows (and shard.x with no column), keyed as load_shard keys them.
  [[nodiscard]] Shard next(const SourceInfo& source, std::uint64_t max_rows, LabelKind kind,
                           config::Missing missing = config::Missing::kError);

 private:
  std::unique_ptr<PeekedSource> source_;
  std::unique_ptr<detail::IndexingTee> tee_;  // between source_ and reader_, with `index`
  CsvIndex header_;  // columns, delimiter and name; the rows too with `index`
  std::unique_ptr<detail::RecordReader> reader_;
};

}  // namespace dt::data

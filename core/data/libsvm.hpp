#pragma once
// LIBSVM / svmlight sparse text: one row per line, `label idx:val idx:val ... [# comment]`.
//
// Two layers. The line parser (parse_libsvm_line, LineSource) knows nothing of models or dense
// matrices: it yields a row as its label text and its (index, value) pairs, so a sparse (CSR)
// loader can reuse it as the dense one below does. The dataset layer (describe_libsvm,
// load_libsvm) indexes the file once in the coordinator (row byte offsets, like the CSV index,
// plus the largest index, which gives the width) and loads rows densely into a shard.
//
// Rules: tokens are separated by spaces or tabs; a `qid:N` token is skipped; indices are
// non-negative integers, strictly increasing within a line; values and the label are finite
// numbers; '#' starts a comment; a line with no label (blank, or a comment alone) is not a row.

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dt::data {

struct SparseEntry {
  std::uint64_t index = 0;
  double value = 0.0;
};

// One parsed line. `label` points into the line, which must outlive it.
struct LibsvmRow {
  std::string_view label;
  double label_value = 0.0;
  std::vector<SparseEntry> entries;  // indices strictly increasing
};

// What is wrong with a line: the 1-based byte column where it is, and a message that says what
// to do (without the file:line prefix, which the caller adds).
struct LibsvmProblem {
  std::size_t column = 0;
  std::string what;
};

enum class LineKind { kRow, kBlank, kError };

// The largest index accepted: a dense column count must fit in memory long before this.
inline constexpr std::uint64_t kMaxLibsvmIndex = (std::uint64_t{1} << 31) - 1;

// Parses one line, without its '\n' (a trailing '\r' is allowed). kBlank for a line without a
// row; kError fills `problem`. `row` is reused (its entries' storage kept). `values` false
// leaves the values unread (0) and unchecked: the index's pass, which needs only the indices.
[[nodiscard]] LineKind parse_libsvm_line(std::string_view line, LibsvmRow& row,
                                         LibsvmProblem& problem, bool values = true);

namespace detail {
class FileHandle;
}

// The lines of a file from a byte offset, read with pread into a buffer that grows to hold the
// longest line. Each line is handed out without its '\n'.
class LineSource {
 public:
  LineSource(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t line);
  ~LineSource();
  LineSource(const LineSource&) = delete;
  LineSource& operator=(const LineSource&) = delete;
  void seek(std::uint64_t offset, std::uint64_t line);
  // The next line; false at the end of the file. `start` is its byte offset, `number` its
  // 1-based line number. The view is valid until the next call.
  [[nodiscard]] bool next(std::string_view& text, std::uint64_t& start, std::uint64_t& number);
  [[nodiscard]] std::uint64_t file_size() const noexcept;

 private:
  void refill();
  std::unique_ptr<detail::FileHandle> file_;
  std::vector<char> buf_;
  std::uint64_t buf_offset_ = 0;  // file offset of buf_[0]
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  std::uint64_t line_ = 1;
};

// What one pass over a LIBSVM file finds: where each row starts, and the indices used.
struct LibsvmIndex {
  CsvIndex rows;  // path, row_offset, row_line, file_size (columns and delimiter unused)
  std::uint64_t max_index = 0;
  std::uint64_t max_index_line = 0;   // 0: no index at all
  std::uint64_t zero_index_line = 0;  // the first line with index 0; 0: none
};

// Reads every line and checks its label and indices (DataError "file:line:column: what; what
// to do"); the values are checked where a worker loads its rows, as a CSV's cells are.
[[nodiscard]] LibsvmIndex index_libsvm(const std::filesystem::path& path);

// Whether the text's first line with a label (a comment-only or blank line is skipped) reads
// as LIBSVM: a number, then at least one idx:val token. `lenient` also takes a first row with a
// label alone (a row of zeros), which is how a file named .svm or set data.format: libsvm may
// start.
[[nodiscard]] bool looks_like_libsvm(std::string_view head, bool lenient);
[[nodiscard]] bool libsvm_extension(const std::filesystem::path& path);
// looks_like_libsvm on the first 64 KiB of the file (cut at its last whole line).
[[nodiscard]] bool libsvm_content(const std::filesystem::path& path, bool lenient);

// Whether data.path is read as LIBSVM (data.format libsvm, or auto and a LIBSVM name).
[[nodiscard]] bool reads_libsvm(const config::DataConfig& data);

// The coordinator's view of a LIBSVM data.path: columns f{base}..f{base+W-1} then the label
// "y", the row index in `csv`. DataError for index 0 in a 1-based file, an index past
// data.feature_count, no features at all, or a dense size past data.max_dense_gib under
// data.sparse: false. Sparse (data.sparse true, or auto and too big for dense): the only column
// is "y", no features, `sparse` set (width W, index_base).
[[nodiscard]] SourceInfo describe_libsvm(const config::DataConfig& data);

// Loads the rows of `segments` densely (load_shard's LIBSVM branch). A feature is found by its
// name f<index>; an index that names no feature column is skipped (predict: past the model's
// width). Labels: numbers; binary 0/1, or -1/+1 (svmlight) read as 0/1; class indices.
void load_libsvm(const std::filesystem::path& path, const SourceInfo& source,
                 const std::vector<Segment>& segments, Shard& shard, LabelKind kind);

// load_libsvm for a sparse source (SourceInfo::sparse): the rows of `segments` into
// shard.sparse, key = index - index_base, explicit zeros left out. An index outside the width
// is refused (DataError), or, given `outside` (predict on a sparse model), skipped and counted.
void load_libsvm_sparse(const std::filesystem::path& path, const SourceInfo& source,
                        const std::vector<Segment>& segments, Shard& shard, LabelKind kind,
                        std::uint64_t* outside = nullptr);

}  // namespace dt::data

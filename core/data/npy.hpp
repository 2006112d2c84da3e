#pragma once
// NumPy data files: the .npy header (format versions 1-3), reading a run of rows of a 2-D (or
// 1-D) array at its byte offset, and telling .npy, .npz and CSV apart by name and content.
// An .npz is a zip of .npy members: unpack_npz writes the two arrays a run needs as plain .npy
// files (a stored member copied, a compressed one inflated with zlib), which are then read like
// any .npy, each worker seeking to its own rows.

#include "core/config/config.hpp"

#include <cstdint>
#include <memory>
#include <vector>
#include <filesystem>
#include <string>
#include <utility>

namespace dt::data {

// What the header of an .npy file says, checked against the file's size.
struct NpyArray {
  std::filesystem::path path;
  std::uint64_t data_offset = 0;  // the header's length: row r starts at data_offset + r * row_bytes()
  std::uint64_t rows = 0;
  std::uint64_t cols = 1;         // 1 for a 1-D array
  bool one_d = false;
  char kind = 'f';                // 'f' float, 'i' signed, 'u' unsigned integer, 'b' bool
  unsigned item = 8;              // bytes per value
  [[nodiscard]] std::uint64_t row_bytes() const noexcept { return cols * item; }
  [[nodiscard]] std::string dtype() const;  // "float64", "int32", ...
};

// Reads and checks the header: DataError naming the file for a bad magic, a Fortran-order or
// big-endian array, a dtype other than float32/float64/integer/bool, more than 2 dimensions,
// or a file shorter than its shape ("the header says 1000 rows of 101 float64, the file holds
// 998 rows").
[[nodiscard]] NpyArray read_npy_header(const std::filesystem::path& path);

namespace detail {
class FileHandle;
class MappedFile;
}

// Reads rows of an array from its file, open as long as the reader lives.
class NpyReader {
 public:
  explicit NpyReader(NpyArray array);
  ~NpyReader();
  NpyReader(const NpyReader&) = delete;
  NpyReader& operator=(const NpyReader&) = delete;
  [[nodiscard]] const NpyArray& array() const noexcept { return array_; }
  // Rows [first, first + count) as doubles, row-major into `out` (count * cols values), read
  // with pread at the rows' offset; DataError when the file is shorter than the header said.
  void read(std::uint64_t first, std::uint64_t count, double* out);
  // Rows [first, first + count) where they lie in the page cache, for a float64 array that can
  // be mapped (else nullptr: read() them): no copy into a buffer of this process. Valid until
  // release() of those rows. DataError when the file is shorter than the header said.
  [[nodiscard]] const double* view(std::uint64_t first, std::uint64_t count);
  // The rows of a view() are read: their pages leave this process (the page cache keeps
  // them), so resident memory stays at a block whatever the array's size.
  void release(std::uint64_t first, std::uint64_t count) noexcept;

 private:
  [[noreturn]] void short_file(std::uint64_t end) const;
  NpyArray array_;
  std::unique_ptr<detail::FileHandle> file_;
  std::unique_ptr<detail::MappedFile> map_;  // float64 arrays at an aligned offset only
  std::vector<char> buffer_;  // the values of a dtype other than float64, before widening
};

// The format of `path` for `wanted` (data.format): kAuto looks at the name (.npy, .npz, else
// CSV) and the first bytes; DataError when they disagree ("x.csv starts like a NumPy .npy file:
// name it x.npy, or set data.format: npy") or when a forced format does not match the content.
// `what` names the file in messages. `named` false (a spooled stdin): the content alone decides.
[[nodiscard]] config::DataFormat format_of(const std::filesystem::path& path,
                                           config::DataFormat wanted, const char* what,
                                           bool named = true);

// Unpacks the arrays `x_name` (or "X" when `x_name` is "x" and there is no "x") and `y_name`
// (optional: absent is not an error unless `y_required`) of the .npz `from` into `dir` as
// NAME.npy. Returns the paths (the second empty without a labels array). DataError naming the
// archive and its arrays when one is missing, corrupt or truncated.
[[nodiscard]] std::pair<std::filesystem::path, std::filesystem::path> unpack_npz(
    const std::filesystem::path& from, const std::string& x_name, const std::string& y_name,
    bool y_required, const std::filesystem::path& dir);

}  // namespace dt::data

namespace dt::data {

struct SourceInfo;
struct Segment;
struct Shard;
enum class LabelKind;

// Whether data.path is read as an .npy (data.format npy, or auto and the name ends in .npy).
[[nodiscard]] bool reads_npy(const config::DataConfig& data);

// The columns of an .npy data.path: x0..x{k-1} by position, the label column (data.label: "y",
// "xJ" or an index "J"; default the last) named "y"; with data.labels, all k columns are
// features and "y" is the labels file. DataError for a labels file whose length differs.
[[nodiscard]] SourceInfo describe_npy(const config::DataConfig& data);

// An .npy data.path's rows of `segments` into `shard` (load_shard's NumPy branch, npy_load.cpp):
// read at their byte offset a block at a time, every value checked finite (DataError naming row
// and column from 0, as numpy does); labels from the label column or the data.labels file, as
// text for classes as a CSV's would be (1.0 is class "1"). Not `keep` (check_shard): shard.x
// holds one row, and the rows are checked in place, not copied.
void load_npy(const config::DataConfig& data, const SourceInfo& source,
              const std::vector<Segment>& segments, Shard& shard, LabelKind kind, bool keep);

}  // namespace dt::data

#pragma once
// Internal to core/data: encoding the categorical cells of one row while a CSV shard loads
// (load_csv's general path; see categorical.hpp for the encodings themselves).

#include "core/data/categorical.hpp"
#include "core/data/csv_io.hpp"

#include <cstddef>
#include <functional>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dt::data::detail {

class CategoricalCells {
  // Looks a category up by string_view, without making a string per cell.
  struct Hash {
    using is_transparent = void;
    [[nodiscard]] std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };

 public:
  // The encodings of `source` whose features `source.features` uses (all of them in training;
  // a tensor rank's share; predict's model). empty_is_zero: an empty cell encodes as all zeros
  // instead of being an error (for data.missing other than error).
  explicit CategoricalCells(const SourceInfo& source, bool empty_is_zero = false);
  [[nodiscard]] bool empty() const noexcept { return columns_.empty(); }
  // Writes the encoded features of one record into `row`: 1 for the cell's category or bucket,
  // 0 for the others; all 0 for a category the encoding does not have (unseen in training).
  void put(const std::vector<FieldView>& fields, double* row,
           const std::filesystem::path& path) const;
  // The same for a row the fast path (PlainRow) accepted: `line` is its bytes, unquoted cells
  // cut at `sep`. False when a categorical cell is empty (and that is an error): the caller
  // reads the row again on the general path, which names the cell.
  [[nodiscard]] bool put_plain(std::string_view line, char sep, double* row) const;

 private:
  struct Column {
    std::size_t source_index = 0;
    const Encoding* encoding = nullptr;
    std::vector<std::ptrdiff_t> slot;  // the feature index of category / bucket i, or -1
    std::unordered_map<std::string, std::size_t, Hash, std::equal_to<>> lookup;  // one_hot
  };
  // 1 at the value's category or bucket, 0 at the others of the column; all 0 for "".
  void encode(const Column& col, std::string_view value, double* row) const;
  std::vector<Column> columns_;
  bool empty_is_zero_ = false;
};

}  // namespace dt::data::detail

#pragma once
// Internal to core/data: encoding the categorical cells of one row while a CSV shard loads
// (load_csv's general path; see categorical.hpp for the encodings themselves).

#include "core/data/categorical.hpp"
#include "core/data/csv_io.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

namespace dt::data::detail {

class CategoricalCells {
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

 private:
  struct Column {
    std::size_t source_index = 0;
    const Encoding* encoding = nullptr;
    std::vector<std::ptrdiff_t> slot;  // the feature index of category / bucket i, or -1
    std::unordered_map<std::string, std::size_t> lookup;  // one_hot: category -> i
  };
  std::vector<Column> columns_;
  bool empty_is_zero_ = false;
};

}  // namespace dt::data::detail

#pragma once
// Missing values (data.missing: error | mean | zero): which cells are missing, what a loader
// stores for them, and the fill values merged from all training shards.
//
// A loader stores a missing feature cell as 0 under `zero` (so the statistics and the model are
// those of the same file with 0s) and as NaN under `mean`; column_stats leaves NaN out, and the
// coordinator's fill (the merged means) replaces it in apply() before the normalization.

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"
#include "base/error.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dt::data {

// An empty cell, or one of pandas.read_csv's default NA markers ("NA", "N/A", "n/a", "NaN",
// "nan", "-NaN", "-nan", "NULL", "null", "None", "<NA>", "#N/A", "#N/A N/A", "#NA", "-1.#IND",
// "-1.#QNAN", "1.#IND", "1.#QNAN"), or "?" (UCI's marker). `trimmed`: without surrounding spaces.
[[nodiscard]] bool is_missing_marker(std::string_view trimmed) noexcept;

// What a loader stores for a missing feature cell: 0 (zero) or NaN (mean). Not for kError.
[[nodiscard]] double missing_value(config::Missing policy) noexcept;

// The fill of each feature: empty for error, 0s for zero, the mean of the present values for
// mean. DataError naming a column without a single present value in the training rows.
[[nodiscard]] std::vector<double> missing_fill(config::Missing policy, const ColumnStats& stats,
                                               const std::vector<std::string>& features);

// NaN cells of column j become fill[j] (DataError if the widths differ).
void fill_missing(const std::vector<double>& fill, RowMatrix& x);

// A missing feature cell refused under data.missing: error (a DataError, exit 2), told apart so
// that predict and eval can add why their model cannot fill it.
class MissingValueError : public DataError {
 public:
  using DataError::DataError;
};

// The error for a missing cell under data.missing: error (MissingValueError). `where`: the cell and its column,
// "data.csv:3:5: column 'age'" or "data.npy: row 2, column 1 ('x1')"; `shown`: the cell as the
// message quotes it.
[[noreturn]] void refuse_missing(const std::string& where, const std::string& shown);

namespace detail {

// A feature cell of a CSV: a finite number, or a missing cell under `policy` (missing_value),
// else the error of parse_cell (refuse_missing for a missing cell under kError).
[[nodiscard]] double parse_feature(std::string_view text, std::uint64_t line, std::uint64_t column,
                                   const std::filesystem::path& path, const std::string& name,
                                   config::Missing policy);

// A numeric label cell: a finite number, else DataError; a missing label is always an error
// (data.missing fills features only).
[[nodiscard]] double parse_label(std::string_view text, std::uint64_t line, std::uint64_t column,
                                 const std::filesystem::path& path, const std::string& name);

}  // namespace detail
}  // namespace dt::data

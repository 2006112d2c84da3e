#pragma once
// Internal to core/data: column_stats's first pass (each column's sum, minimum and maximum, the
// rows taken in order: the same bits), made by a loader on the rows it has just written, while
// they are in L1, instead of a pass of its own over the whole shard (Shard::sums). Used by the
// NumPy loader (npy_load.cpp) and the CSV loader (dataset.cpp).

#include "core/data/dataset.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace dt::data::detail {

// Sums of no row yet: each minimum starts at +inf and maximum at -inf, which the first finite
// value replaces exactly as column_stats's start at row 0 does.
[[nodiscard]] ColumnStats no_sums(std::size_t p);

// One row's p values into `sum`, `lo` and `hi`. `bad` adds x * 0 (NaN for a NaN or an infinity,
// else 0) of each value: a sum a column, so the loop is vector code.
void row_sums(const double* __restrict row, std::uint64_t p, double* __restrict sum,
              double* __restrict lo, double* __restrict hi, double* __restrict bad);

// row_sums of four rows at once (r0, r1, r2, r3 in that order, the same bits): the sums,
// minima and maxima are loaded and stored once for the four, which sets the pace here.
void four_row_sums(const double* __restrict r0, const double* __restrict r1,
                   const double* __restrict r2, const double* __restrict r3, std::uint64_t p,
                   double* __restrict sum, double* __restrict lo, double* __restrict hi,
                   double* __restrict bad);

// The first pass over the rows of a matrix of p columns as a loader fills it, row 0 first:
// add(rows, n) takes the rows before row n that it has not taken yet, four at a time (a group
// of fewer waits for the next call), finish(rows, n) the rest. A NaN (a missing value under
// data.missing: mean) makes its column's sum NaN, and column_stats reads that column again.
class RowSums {
 public:
  explicit RowSums(std::size_t p) : sums_(no_sums(p)), bad_(p, 0.0), p_(p) {}
  void add(const double* rows, std::uint64_t n) {
    for (; done_ + 4 <= n; done_ += 4) {
      const double* r = rows + done_ * p_;
      four_row_sums(r, r + p_, r + 2 * p_, r + 3 * p_, p_, sums_.mean.data(), sums_.min.data(),
                    sums_.max.data(), bad_.data());
    }
  }
  [[nodiscard]] ColumnStats finish(const double* rows, std::uint64_t n) {
    add(rows, n);
    for (; done_ < n; ++done_) {
      row_sums(rows + done_ * p_, p_, sums_.mean.data(), sums_.min.data(), sums_.max.data(),
               bad_.data());
    }
    return std::move(sums_);
  }

 private:
  ColumnStats sums_;
  std::vector<double> bad_;  // scratch: a CSV cell is finite or missing (NaN in its sum)
  std::size_t p_;
  std::uint64_t done_ = 0;
};

}  // namespace dt::data::detail

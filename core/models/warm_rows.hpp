#pragma once
// Warming a batch's rows while the worker waits: the rows of step s+1 are known before step s's
// exchange ends (the epoch's order is a function of the seed), and a worker waiting for its ring
// peer or for the coordinator's reply has a core and nothing to do. A RowWarmer asks for every
// cache line of a batch's rows (features and label), a few rows per call, so the wait can look
// for its message between calls and answer a peer within one slice. The next step's compute
// then finds its rows in the core's cache (a batch of 1000 rows of 100 float64 is 800 KB: it
// fits an L2 of 1 MiB or more) instead of waiting on memory row by row.
//
// Only software prefetches: no value is read into the computation and no bit of any result
// changes; an address that is no longer mapped is not an error for a prefetch either.
//
// Threading: one owner thread. The batch given to arm() must stay valid until disarm() or the
// last slice(): the owner disarms before the rows move (a new epoch, rows taken over).

#include "core/models/model.hpp"

#include <cstdint>

namespace dt::models {

class RowWarmer {
 public:
  // Rows a slice asks for: 16 rows of 100 float64 are 208 cache lines, a few microseconds of
  // memory time, the longest a waiting peer's message goes unanswered because of the warmer.
  static constexpr Eigen::Index kSliceRows = 16;

  // Warms `batch` from its first row on: picked (shuffled) dense rows only; a batch in order, a
  // sparse one or one of no rows leaves the warmer idle. Replaces what was armed before.
  void arm(const BatchRows& batch) noexcept;
  void disarm() noexcept { next_ = end_ = 0; }
  // Asks for the next kSliceRows rows; false when nothing was left to ask for.
  bool slice() noexcept;
  [[nodiscard]] bool pending() const noexcept { return next_ < end_; }
  // Rows asked for since the warmer was made (for the tests and the worker's log).
  [[nodiscard]] std::uint64_t rows_warmed() const noexcept { return warmed_; }

 private:
  const double* x_ = nullptr;   // row r of the features at x_ + r * stride_
  Eigen::Index stride_ = 0;     // doubles from a row to the next
  Eigen::Index cols_ = 0;
  const double* y_ = nullptr;   // label r at y_ + r * y_stride_
  Eigen::Index y_stride_ = 0;
  const std::uint64_t* pick_ = nullptr;  // the batch's rows in x_
  Eigen::Index next_ = 0;       // the next batch row to ask for, and the end
  Eigen::Index end_ = 0;
  std::uint64_t warmed_ = 0;
};

}  // namespace dt::models

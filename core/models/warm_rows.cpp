#include "core/models/warm_rows.hpp"

#include "base/memory.hpp"

#include <algorithm>

namespace dt::models {

void RowWarmer::arm(const BatchRows& batch) noexcept {
  disarm();
  // Rows in order stream in behind the hardware prefetcher at near the read bandwidth: warming
  // them gained nothing in interleaved runs (docs/performance.md), so only picked rows are.
  if (batch.sparse != nullptr || batch.pick.empty() || batch.x.cols() == 0) return;
  x_ = batch.x.data();
  stride_ = batch.x.outerStride();
  cols_ = batch.x.cols();
  y_ = batch.y.data();
  y_stride_ = batch.y.innerStride();
  pick_ = batch.pick.data();
  end_ = batch.rows();
}

bool RowWarmer::slice() noexcept {
  if (next_ >= end_) return false;
  const Eigen::Index stop = std::min(end_, next_ + kSliceRows);
  const auto row_bytes = static_cast<std::size_t>(cols_) * sizeof(double);
  for (Eigen::Index i = next_; i < stop; ++i) {
    const auto r = static_cast<Eigen::Index>(pick_[i]);
    // Every line the row touches: a row need not start on a line (800-byte rows do not).
    memory::prefetch_lines(x_ + r * stride_, row_bytes);
    __builtin_prefetch(y_ + r * y_stride_, 0, 1);
  }
  warmed_ += static_cast<std::uint64_t>(stop - next_);
  next_ = stop;
  return true;
}

}  // namespace dt::models

#include "core/worker/step_times.hpp"

#include <algorithm>
#include <cmath>

namespace dt::roles {

void StepTimes::add(double seconds) noexcept {
  if (!(seconds >= 0.0)) seconds = 0.0;  // a NaN or a clock step back counts as nothing
  int b = 0;
  if (seconds > kSmallest) {
    b = static_cast<int>(std::log2(seconds / kSmallest) * kPerDoubling);
  }
  ++buckets_[static_cast<std::size_t>(std::clamp(b, 0, kBuckets - 1))];
  ++count_;
  min_ = std::min(min_, seconds);
  max_ = std::max(max_, seconds);
}

double StepTimes::percentile(double q) const noexcept {
  if (count_ == 0) return 0.0;
  if (q >= 1.0) return max_;
  const auto rank = static_cast<std::uint64_t>(std::max(q, 0.0) *
                                               static_cast<double>(count_ - 1) + 0.5);
  if (rank == 0) return min_;
  std::uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[static_cast<std::size_t>(b)];
    if (seen > rank) {
      const double middle = kSmallest * std::exp2((b + 0.5) / kPerDoubling);
      return std::clamp(middle, min_, max_);
    }
  }
  return max_;
}

}  // namespace dt::roles

#pragma once
// A worker's per-step compute times, for the p50/p90/p99/max its report carries, in bounded
// memory: a histogram of log-spaced buckets, 16 to a doubling, from 1 ns to 78 hours, so a
// percentile is read within 2.2% of the true one (the bucket's geometric middle, kept within
// the exact minimum and maximum), and the minimum and maximum exactly. Keeping every step's time grew 8
// bytes a step, without bound: 800 MB a worker after 100M steps (found by bench/soak.py).
// Used by one thread.

#include <array>
#include <cstdint>
#include <limits>

namespace dt::roles {

class StepTimes {
 public:
  void add(double seconds) noexcept;
  // The value at rank round(q * (count - 1)) of the sorted times (q in [0, 1]; 1: the maximum
  // itself); 0 when there are none.
  [[nodiscard]] double percentile(double q) const noexcept;
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }

 private:
  static constexpr int kPerDoubling = 16;
  static constexpr int kBuckets = kPerDoubling * 48;  // 1 ns * 2^48: 78 hours
  static constexpr double kSmallest = 1e-9;
  std::array<std::uint64_t, kBuckets> buckets_{};
  std::uint64_t count_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = 0.0;
};

}  // namespace dt::roles

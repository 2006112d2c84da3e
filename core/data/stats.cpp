// Column statistics that merge across shards, and the normalization built from them.

#include "core/data/dataset.hpp"
#include "core/data/missing.hpp"
#include "base/error.hpp"

#include <algorithm>
#include <cmath>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dt::data {
namespace {

// Values of column j that are in the statistics (missing ones are not).
std::uint64_t present_in(const ColumnStats& s, std::size_t j) {
  return s.present.empty() ? s.count : s.present[j];
}

// Column j of x again, over its present (non-NaN) values only: a column with a missing value
// under data.missing: mean (NaN until the fill is known) came out NaN in the fast passes.
void present_column_stats(const RowMatrix& x, std::size_t j, ColumnStats& s) {
  const auto c = static_cast<Eigen::Index>(j);
  std::uint64_t n = 0;
  double sum = 0.0, lo = 0.0, hi = 0.0;
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double v = x(r, c);
    if (std::isnan(v)) continue;
    lo = n == 0 ? v : std::min(lo, v);
    hi = n == 0 ? v : std::max(hi, v);
    sum += v;
    ++n;
  }
  const double mean = n == 0 ? 0.0 : sum / static_cast<double>(n);
  double m2 = 0.0;
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double v = x(r, c);
    if (!std::isnan(v)) m2 += (v - mean) * (v - mean);
  }
  s.present[j] = n;
  s.mean[j] = mean;
  s.m2[j] = m2;
  s.min[j] = lo;
  s.max[j] = hi;
}

// The shard is walked a block of rows at a time (in cache), and within a block eight columns at
// a time with their sums in registers, two columns an instruction: every column still sees its
// rows in order and the same operations (add; min and max as std::min(m, v) and std::max(m, v):
// minpd(v, m) is v < m ? v : m, maxpd(v, m) is v > m ? v : m, NaN and -0 alike), so the
// statistics are bit for bit those of the plain loop over rows and columns, in two passes over
// memory (the shard is larger than any cache) with a few operations per value.
constexpr Eigen::Index kBlockRows = 128;
constexpr std::size_t kTile = 8;

// Pass 1 over rows [r0, r1): sum, min and max of every column.
void add_block(const RowMatrix& x, Eigen::Index r0, Eigen::Index r1, ColumnStats& s) {
  const auto cols = static_cast<std::size_t>(x.cols());
  std::size_t j = 0;
#if defined(__SSE2__)
  for (; j + kTile <= cols; j += kTile) {
    __m128d sum[kTile / 2], lo[kTile / 2], hi[kTile / 2];
    for (std::size_t k = 0; k < kTile / 2; ++k) {
      sum[k] = _mm_loadu_pd(&s.mean[j + 2 * k]);
      lo[k] = _mm_loadu_pd(&s.min[j + 2 * k]);
      hi[k] = _mm_loadu_pd(&s.max[j + 2 * k]);
    }
    for (Eigen::Index r = r0; r < r1; ++r) {
      const double* row = x.data() + r * x.cols() + j;
      for (std::size_t k = 0; k < kTile / 2; ++k) {
        const __m128d v = _mm_loadu_pd(row + 2 * k);
        sum[k] = _mm_add_pd(sum[k], v);
        lo[k] = _mm_min_pd(v, lo[k]);
        hi[k] = _mm_max_pd(v, hi[k]);
      }
    }
    for (std::size_t k = 0; k < kTile / 2; ++k) {
      _mm_storeu_pd(&s.mean[j + 2 * k], sum[k]);
      _mm_storeu_pd(&s.min[j + 2 * k], lo[k]);
      _mm_storeu_pd(&s.max[j + 2 * k], hi[k]);
    }
  }
#endif
  for (Eigen::Index r = r0; r < r1; ++r) {
    const double* row = x.data() + r * x.cols();
    for (std::size_t c = j; c < cols; ++c) {
      s.mean[c] += row[c];
      s.min[c] = std::min(s.min[c], row[c]);
      s.max[c] = std::max(s.max[c], row[c]);
    }
  }
}

// Pass 2 over rows [r0, r1): squared deviations from the mean.
void add_squares(const RowMatrix& x, Eigen::Index r0, Eigen::Index r1, ColumnStats& s) {
  const auto cols = static_cast<std::size_t>(x.cols());
  std::size_t j = 0;
#if defined(__SSE2__)
  for (; j + kTile <= cols; j += kTile) {
    __m128d m2[kTile / 2], mean[kTile / 2];
    for (std::size_t k = 0; k < kTile / 2; ++k) {
      m2[k] = _mm_loadu_pd(&s.m2[j + 2 * k]);
      mean[k] = _mm_loadu_pd(&s.mean[j + 2 * k]);
    }
    for (Eigen::Index r = r0; r < r1; ++r) {
      const double* row = x.data() + r * x.cols() + j;
      for (std::size_t k = 0; k < kTile / 2; ++k) {
        const __m128d d = _mm_sub_pd(_mm_loadu_pd(row + 2 * k), mean[k]);
        m2[k] = _mm_add_pd(m2[k], _mm_mul_pd(d, d));
      }
    }
    for (std::size_t k = 0; k < kTile / 2; ++k) _mm_storeu_pd(&s.m2[j + 2 * k], m2[k]);
  }
#endif
  for (Eigen::Index r = r0; r < r1; ++r) {
    const double* row = x.data() + r * x.cols();
    for (std::size_t c = j; c < cols; ++c) {
      const double d = row[c] - s.mean[c];
      s.m2[c] += d * d;
    }
  }
}

}  // namespace

ColumnStats column_stats(const RowMatrix& x) {
  const auto cols = static_cast<std::size_t>(x.cols());
  ColumnStats s;
  s.count = static_cast<std::uint64_t>(x.rows());
  // An empty shard still has the width of the data; its values are meaningless (count 0) and
  // merge_into treats it as the identity.
  s.mean.assign(cols, 0.0);
  s.m2.assign(cols, 0.0);
  s.min.assign(cols, 0.0);
  s.max.assign(cols, 0.0);
  if (s.count == 0) return s;

  // Two passes (mean, then squared deviations) rather than a running update: as accurate as
  // Welford and cheaper per element. Rows are walked in memory order.
  for (std::size_t j = 0; j < cols; ++j) s.min[j] = s.max[j] = x(0, static_cast<Eigen::Index>(j));
  for (Eigen::Index r = 0; r < x.rows(); r += kBlockRows) {
    add_block(x, r, std::min(r + kBlockRows, x.rows()), s);
  }
  const auto n = static_cast<double>(s.count);
  for (auto& m : s.mean) m /= n;
  for (Eigen::Index r = 0; r < x.rows(); r += kBlockRows) {
    add_squares(x, r, std::min(r + kBlockRows, x.rows()), s);
  }
  // A NaN makes its column's mean NaN: only such columns are read again (none in clean data).
  for (std::size_t j = 0; j < cols; ++j) {
    if (!std::isnan(s.mean[j])) continue;
    if (s.present.empty()) s.present.assign(cols, s.count);
    present_column_stats(x, j, s);
  }
  return s;
}

void merge_into(ColumnStats& into, const ColumnStats& other) {
  if (other.count == 0) return;
  if (into.count == 0) {
    into = other;
    return;
  }
  if (into.mean.size() != other.mean.size()) {
    fail<DataError>("cannot merge column statistics of {} and {} columns", into.mean.size(),
                    other.mean.size());
  }
  const bool per_column = !into.present.empty() || !other.present.empty();
  std::vector<std::uint64_t> present(per_column ? into.mean.size() : 0);
  for (std::size_t j = 0; j < into.mean.size(); ++j) {
    const std::uint64_t ca = present_in(into, j);
    const std::uint64_t cb = present_in(other, j);
    if (per_column) present[j] = ca + cb;
    if (cb == 0) continue;
    if (ca == 0) {
      into.mean[j] = other.mean[j];
      into.m2[j] = other.m2[j];
      into.min[j] = other.min[j];
      into.max[j] = other.max[j];
      continue;
    }
    const auto na = static_cast<double>(ca);
    const auto nb = static_cast<double>(cb);
    const double n = na + nb;
    // Chan, Golub & LeVeque: exact for the pooled mean and sum of squared deviations.
    const double delta = other.mean[j] - into.mean[j];
    into.mean[j] += delta * (nb / n);
    into.m2[j] += other.m2[j] + delta * delta * (na * nb / n);
    into.min[j] = std::min(into.min[j], other.min[j]);
    into.max[j] = std::max(into.max[j], other.max[j]);
  }
  into.count += other.count;
  if (per_column) into.present = std::move(present);
}

Normalization make_normalization(config::Normalize kind, const ColumnStats& stats,
                                 const std::vector<std::string>& features) {
  const std::size_t p = features.size();
  Normalization norm;
  norm.kind = kind;
  norm.shift.assign(p, 0.0);
  norm.scale.assign(p, 1.0);
  if (kind == config::Normalize::kNone) return norm;
  if (stats.count == 0) {
    fail<DataError>("cannot compute normalization statistics from 0 training rows");
  }
  if (stats.mean.size() != p) {
    fail<DataError>("normalization statistics have {} columns but there are {} features",
                    stats.mean.size(), p);
  }
  for (std::size_t j = 0; j < p; ++j) {
    const auto n = static_cast<double>(present_in(stats, j));
    const bool standard = kind == config::Normalize::kStandard;
    const double shift = standard ? stats.mean[j] : stats.min[j];
    const double scale = standard ? std::sqrt(stats.m2[j] / n) : stats.max[j] - stats.min[j];
    // Relative threshold: a column of 1e6 +- 1e-9 is constant up to rounding noise, and
    // dividing by that noise would blow it up into a meaningless feature.
    if (!(scale >= 1e-12 * std::max(1.0, std::abs(stats.mean[j])))) {
      norm.constant_columns.push_back(features[j]);
      continue;
    }
    norm.shift[j] = shift;
    norm.scale[j] = scale;
  }
  return norm;
}

void apply(const Normalization& norm, RowMatrix& x) {
  if (!norm.fill.empty()) fill_missing(norm.fill, x);
  if (norm.kind == config::Normalize::kNone) return;
  if (norm.shift.size() != static_cast<std::size_t>(x.cols()) ||
      norm.scale.size() != static_cast<std::size_t>(x.cols())) {
    fail<DataError>("normalization for {} columns applied to data with {} columns",
                    norm.shift.size(), x.cols());
  }
  const Eigen::Map<const Eigen::RowVectorXd> shift(norm.shift.data(), x.cols());
  const Eigen::Map<const Eigen::RowVectorXd> scale(norm.scale.data(), x.cols());
  // One pass over the shard, not one per operation: the same two roundings per value.
  x.array() = (x.array().rowwise() - shift.array()).rowwise() / scale.array();
}

}  // namespace dt::data

// Column statistics that merge across shards, and the normalization built from them.

#include "core/data/dataset.hpp"
#include "core/data/missing.hpp"
#include "base/error.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

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

}  // namespace

namespace {

// Column statistics of no row yet: the width of the data, every figure 0.
ColumnStats empty_stats(const RowMatrix& x) {
  const auto cols = static_cast<std::size_t>(x.cols());
  ColumnStats s;
  s.count = static_cast<std::uint64_t>(x.rows());
  s.mean.assign(cols, 0.0);
  s.m2.assign(cols, 0.0);
  s.min.assign(cols, 0.0);
  s.max.assign(cols, 0.0);
  return s;
}

// The second pass of column_stats: `s` holds the sums (in `mean`), minima and maxima of every
// column over the rows of x in order.
ColumnStats finish_stats(const RowMatrix& x, ColumnStats s) {
  const auto cols = static_cast<std::size_t>(x.cols());
  const auto n = static_cast<double>(s.count);
  for (auto& m : s.mean) m /= n;
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double* row = x.data() + r * x.cols();
    for (std::size_t j = 0; j < cols; ++j) {
      const double d = row[j] - s.mean[j];
      s.m2[j] += d * d;
    }
  }
  // A NaN makes its column's mean NaN: only such columns are read again (none in clean data).
  for (std::size_t j = 0; j < cols; ++j) {
    if (!std::isnan(s.mean[j])) continue;
    if (s.present.empty()) s.present.assign(cols, s.count);
    present_column_stats(x, j, s);
  }
  return s;
}

}  // namespace

ColumnStats column_stats(const RowMatrix& x) {
  const auto cols = static_cast<std::size_t>(x.cols());
  // An empty shard still has the width of the data; its values are meaningless (count 0) and
  // merge_into treats it as the identity.
  ColumnStats s = empty_stats(x);
  if (s.count == 0) return s;

  // Two passes (mean, then squared deviations) rather than a running update: as accurate as
  // Welford and cheaper per element. Rows are walked in memory order: the compiler vectorizes
  // these loops and memory streams in (walking eight columns of 128 rows at a time, sums in
  // registers, took twice as long: the strided reads defeat the prefetcher).
  for (std::size_t j = 0; j < cols; ++j) s.min[j] = s.max[j] = x(0, static_cast<Eigen::Index>(j));
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double* row = x.data() + r * x.cols();
    for (std::size_t j = 0; j < cols; ++j) {
      s.mean[j] += row[j];
      s.min[j] = std::min(s.min[j], row[j]);
      s.max[j] = std::max(s.max[j], row[j]);
    }
  }
  return finish_stats(x, std::move(s));
}

ColumnStats column_stats(const Shard& shard) {
  const auto cols = static_cast<std::size_t>(shard.x.cols());
  const auto& sums = shard.sums;
  if (!sums || shard.x.rows() == 0 || sums->mean.size() != cols || sums->min.size() != cols ||
      sums->max.size() != cols) {
    return column_stats(shard.x);
  }
  ColumnStats s = empty_stats(shard.x);
  s.mean = sums->mean;
  s.min = sums->min;
  s.max = sums->max;
  return finish_stats(shard.x, std::move(s));
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
  // One pass over the shard, not one per operation: the same two roundings per value, about
  // 1.8x faster on a 1M x 100 shard (0.07 s against 0.125 s).
  x.array() = (x.array().rowwise() - shift.array()).rowwise() / scale.array();
}

}  // namespace dt::data

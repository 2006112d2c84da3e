// Column statistics that merge across shards, and the normalization built from them.

#include "core/data/dataset.hpp"
#include "base/error.hpp"

#include <algorithm>
#include <cmath>

namespace dt::data {

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
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double* row = x.data() + r * x.cols();
    for (std::size_t j = 0; j < cols; ++j) {
      s.mean[j] += row[j];
      s.min[j] = std::min(s.min[j], row[j]);
      s.max[j] = std::max(s.max[j], row[j]);
    }
  }
  const auto n = static_cast<double>(s.count);
  for (auto& m : s.mean) m /= n;
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double* row = x.data() + r * x.cols();
    for (std::size_t j = 0; j < cols; ++j) {
      const double d = row[j] - s.mean[j];
      s.m2[j] += d * d;
    }
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
  const auto na = static_cast<double>(into.count);
  const auto nb = static_cast<double>(other.count);
  const double n = na + nb;
  for (std::size_t j = 0; j < into.mean.size(); ++j) {
    // Chan, Golub & LeVeque: exact for the pooled mean and sum of squared deviations.
    const double delta = other.mean[j] - into.mean[j];
    into.mean[j] += delta * (nb / n);
    into.m2[j] += other.m2[j] + delta * delta * (na * nb / n);
    into.min[j] = std::min(into.min[j], other.min[j]);
    into.max[j] = std::max(into.max[j], other.max[j]);
  }
  into.count += other.count;
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
  const auto n = static_cast<double>(stats.count);
  for (std::size_t j = 0; j < p; ++j) {
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
  if (norm.kind == config::Normalize::kNone) return;
  if (norm.shift.size() != static_cast<std::size_t>(x.cols()) ||
      norm.scale.size() != static_cast<std::size_t>(x.cols())) {
    fail<DataError>("normalization for {} columns applied to data with {} columns",
                    norm.shift.size(), x.cols());
  }
  const Eigen::Map<const Eigen::RowVectorXd> shift(norm.shift.data(), x.cols());
  const Eigen::Map<const Eigen::RowVectorXd> scale(norm.scale.data(), x.cols());
  x.rowwise() -= shift;
  x.array().rowwise() /= scale.array();
}

}  // namespace dt::data

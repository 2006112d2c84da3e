#include "core/coordinator/tensor_plan.hpp"

#include "base/error.hpp"

#include <algorithm>

namespace dt::roles {

void expand_for_tensor(const config::Config& config, Plan& plan) {
  const int tensor = config.parallelism.tensor;
  plan.tensor = std::max(1, tensor);
  plan.columns.clear();
  if (tensor <= 1) return;
  const auto features = static_cast<std::int64_t>(plan.source.features.size());
  models::check_tensor_split(config.model, features, tensor);
  std::vector<std::vector<data::Segment>> segments;
  std::vector<std::uint64_t> rows;
  std::vector<data::SourceInfo> sources;  // strategy files: each replica's file
  for (std::size_t d = 0; d < plan.segments.size(); ++d) {
    for (int t = 0; t < tensor; ++t) {
      segments.push_back(plan.segments[d]);
      rows.push_back(plan.shard_rows[d]);
      if (!plan.rank_sources.empty()) sources.push_back(plan.rank_sources[d]);
      if (models::splits_features(config.model.type)) {
        plan.columns.push_back(models::split_range(features, tensor, t));
      }
    }
  }
  plan.segments = std::move(segments);
  plan.shard_rows = std::move(rows);
  plan.rank_sources = std::move(sources);
}

models::Range columns_of(const Plan& plan, std::size_t rank) {
  if (plan.columns.empty()) return {0, static_cast<std::int64_t>(plan.source.features.size())};
  return plan.columns.at(rank);
}

data::SourceInfo source_for(const Plan& plan, std::size_t rank) {
  data::SourceInfo source = plan.source_of(rank);
  if (plan.columns.empty()) return source;
  // The features by name, in the run's order (every file of strategy files has them all).
  const auto c = columns_of(plan, rank);
  source.features.assign(plan.source.features.begin() + c.begin,
                         plan.source.features.begin() + c.end);
  return source;
}

data::Normalization normalization_for(const Plan& plan, std::size_t rank,
                                      const data::Normalization& full) {
  if (plan.columns.empty()) return full;
  const auto c = columns_of(plan, rank);
  data::Normalization n;
  n.kind = full.kind;
  n.shift.assign(full.shift.begin() + c.begin, full.shift.begin() + c.end);
  n.scale.assign(full.scale.begin() + c.begin, full.scale.begin() + c.end);
  n.missing = full.missing;
  if (!full.fill.empty()) n.fill.assign(full.fill.begin() + c.begin, full.fill.begin() + c.end);
  const auto first = plan.source.features.begin() + c.begin;
  const auto last = plan.source.features.begin() + c.end;
  for (const auto& name : full.constant_columns) {
    if (std::find(first, last, name) != last) n.constant_columns.push_back(name);
  }
  return n;
}

data::ColumnStats merge_tensor_stats(const Plan& plan,
                                     const std::vector<data::ColumnStats>& per_rank) {
  const auto tensor = static_cast<std::size_t>(plan.tensor);
  const std::size_t slices = plan.columns.empty() ? 1 : tensor;
  data::ColumnStats full;
  std::vector<std::uint64_t> present;  // per column, when some slice has missing values
  bool short_columns = false;
  for (std::size_t t = 0; t < slices; ++t) {
    data::ColumnStats slice;
    for (std::size_t r = t; r < per_rank.size(); r += tensor) data::merge_into(slice, per_rank[r]);
    const auto width = static_cast<std::size_t>(columns_of(plan, t).size());
    if (slice.count == 0) {  // no training rows at all: the widths still add up
      slice.mean.assign(width, 0.0);
      slice.m2.assign(width, 0.0);
      slice.min.assign(width, 0.0);
      slice.max.assign(width, 0.0);
    }
    if (t > 0 && slice.count != full.count) {
      fail<ProtocolError>("tensor slices loaded different row counts ({} and {})", full.count,
                          slice.count);
    }
    full.count = slice.count;
    full.mean.insert(full.mean.end(), slice.mean.begin(), slice.mean.end());
    full.m2.insert(full.m2.end(), slice.m2.begin(), slice.m2.end());
    full.min.insert(full.min.end(), slice.min.begin(), slice.min.end());
    full.max.insert(full.max.end(), slice.max.begin(), slice.max.end());
    short_columns = short_columns || !slice.present.empty();
    if (slice.present.empty()) slice.present.assign(width, slice.count);
    present.insert(present.end(), slice.present.begin(), slice.present.end());
  }
  if (short_columns) full.present = std::move(present);
  return full;
}

}  // namespace dt::roles

#pragma once
// Tensor parallelism's part of the plan and of the loading phase (parallelism.tensor = T > 1).
// shards.count = D data-parallel replicas, each a tensor-parallel group of T workers: D * T
// ranks in all, rank r being replica d = r / T and slice t = r % T. The ranks of one group share
// their replica's shard (the same segments, the same batches); for the linear models each loads
// only its slice's feature columns (models::split_range of the features), for the mlp every
// column. The coordinator merges the per-slice column statistics back into the full feature
// order and sends each rank the normalization of its own columns.

#include "core/coordinator/plan.hpp"

#include <vector>

namespace dt::roles {

// Turns a plan of D shards into one of D * T ranks (each shard's segments repeated for the T
// ranks of its group; train_rows unchanged) and sets plan.tensor and plan.columns. Checks that
// the model can be split T ways over the data's features (DataError / ConfigError, exit 2).
void expand_for_tensor(const config::Config& config, Plan& plan);

// The feature columns rank r loads: plan.columns[r], or every feature without a tensor split.
[[nodiscard]] models::Range columns_of(const Plan& plan, std::size_t rank);
[[nodiscard]] data::SourceInfo source_for(const Plan& plan, std::size_t rank);
[[nodiscard]] data::Normalization normalization_for(const Plan& plan, std::size_t rank,
                                                    const data::Normalization& full);

// The statistics of every training row in the full feature order, from each rank's statistics
// of its own columns: per slice merged over the replicas in rank order, then the slices side by
// side (for the mlp, whose ranks all load every column, slice 0 of each group alone). Column by
// column the same arithmetic as without the split, so the normalization has the same bits.
[[nodiscard]] data::ColumnStats merge_tensor_stats(const Plan& plan,
                                                   const std::vector<data::ColumnStats>& per_rank);

}  // namespace dt::roles

#pragma once
// The shard plan of each strategy, for make_plan: the IID strategies over one source, by_label
// and dirichlet over its label column, and files over one CSV per worker.

#include "core/coordinator/plan.hpp"

#include <cstdint>
#include <vector>

namespace dt::roles {

// Fills plan.source and plan.validation_rows (and, for strategy files, plan.rank_sources) and
// returns each rank's training rows, sorted, numbered in its own source. (The contiguous
// strategy, the default, goes straight to segments instead: plan_segments.)
// index_threads and indexed as in make_plan.
[[nodiscard]] std::vector<std::vector<std::uint64_t>> plan_rows(const config::Config& config,
                                                                Plan& plan, unsigned index_threads,
                                                                const data::CsvIndex* indexed);

// The contiguous strategy: fills plan.source, plan.validation_rows, plan.segments and
// plan.shard_rows without listing every row (data::contiguous_segments).
void plan_segments(const config::Config& config, Plan& plan, unsigned index_threads,
                   const data::CsvIndex* indexed);

// Warnings for ranks whose shard is empty (possible with by_label and dirichlet).
[[nodiscard]] std::vector<std::string> empty_shard_warnings(
    const config::Config& config, const std::vector<std::vector<std::uint64_t>>& shards);

}  // namespace dt::roles

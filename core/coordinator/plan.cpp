#include "core/coordinator/plan.hpp"
#include "core/coordinator/tensor_plan.hpp"

#include "core/data/non_iid.hpp"
#include "core/coordinator/plan_shards.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/text.hpp"

#include <algorithm>

namespace dt::roles {

std::uint64_t local_steps_per_epoch(const config::TrainingConfig& training, std::uint64_t rows) {
  if (training.full_batch) return 1;
  const auto batch = static_cast<std::uint64_t>(training.batch_size);
  return std::max<std::uint64_t>(1, (rows + batch - 1) / batch);
}

namespace {

// What sparse rows cannot train (docs/sparse.md).
void refuse_sparse_misfits(const config::Config& config) {
  const char* how = config.data.hash ? "data.hash" : "data.sparse";
  if (config.model.type == config::ModelType::kMlp) {
    fail<ConfigError>("model.type mlp has no sparse form, and the rows are sparse ({}): train "
                      "linear_regression, logistic_regression or softmax_regression on them, or "
                      "read the data densely with data.sparse: false",
                      how);
  }
  if (config.parallelism.tensor > 1) {
    fail<ConfigError>("parallelism.tensor {} splits the feature columns among ranks, and the rows "
                      "are sparse ({}): use parallelism.tensor: 1 (the sparse models' data "
                      "parallelism exchanges only the keys a batch touches)",
                      config.parallelism.tensor, how);
  }
}

}  // namespace

Plan make_plan(const config::Config& config, unsigned index_threads,
               const data::CsvIndex* indexed) {
  Plan plan;
  if (config.shards.strategy == config::ShardStrategy::kContiguous) {
    plan_segments(config, plan, index_threads, indexed);  // no list of every row: no shard can be empty
  } else {
    const auto shards = plan_rows(config, plan, index_threads, indexed);
    for (std::size_t r = 0; r < shards.size(); ++r) {
      plan.segments.push_back(data::to_segments(shards[r], plan.source_of(r).csv));
      plan.shard_rows.push_back(shards[r].size());
      plan.train_rows += shards[r].size();
    }
    plan.warnings = empty_shard_warnings(config, shards);
  }
  // The config check sees data.validation > 0; only the data tells whether it rounds to no row.
  const auto merge = config.aggregation.parameters.merge;
  if (config.aggregation.mode == config::AggregationMode::kParameters &&
      (merge == config::MergeRule::kBest || merge == config::MergeRule::kValidationWeighted) &&
      plan.validation_rows.empty()) {
    fail<ConfigError>("aggregation.parameters.merge {} scores each worker's model on the "
                      "validation rows, but data.validation {} of {} rows holds out none; raise "
                      "data.validation or use merge weighted_average",
                      config::name_of(merge), text::format_double(config.data.validation_fraction),
                      plan.train_rows);
  }
  if (plan.source.sparse) refuse_sparse_misfits(config);
  for (const auto& w : plan.warnings) log::warn("{}", w);
  expand_for_tensor(config, plan);  // D shards -> D * T ranks when parallelism.tensor > 1
  const auto batch = static_cast<std::uint64_t>(std::max<std::int64_t>(1, config.training.batch_size));
  plan.steps_per_epoch = config.training.full_batch ? 1 : (plan.train_rows + batch - 1) / batch;
  plan.steps_per_epoch = std::max<std::uint64_t>(1, plan.steps_per_epoch);
  return plan;
}

data::Shard load_validation(const config::Config& config, const Plan& plan, data::LabelKind kind) {
  if (plan.rank_sources.empty()) {
    return data::load_shard(config, plan.source,
                            data::to_segments(plan.validation_rows, plan.source.csv), kind);
  }
  // Strategy files: the held-out rows of each file, in file order.
  data::Shard out;
  auto it = plan.validation_rows.begin();
  std::uint64_t first = 0;
  // With parallelism.tensor, rank_sources repeats each file for the T ranks of its replica:
  // take every T-th entry, so that the held-out rows are read from the file they belong to.
  for (std::size_t r = 0; r < plan.rank_sources.size(); r += static_cast<std::size_t>(plan.tensor)) {
    const auto& part = plan.rank_sources[r];
    std::vector<std::uint64_t> rows;
    for (; it != plan.validation_rows.end() && *it < first + part.rows; ++it) rows.push_back(*it - first);
    first += part.rows;
    if (rows.empty()) continue;
    data::append_rows(out, data::load_shard(config, part, data::to_segments(rows, part.csv), kind));
  }
  return out;
}

Plan with_join_slots(const config::Config& config, Plan plan) {
  const auto& elastic = config.fault_tolerance.elastic;
  const int starting = static_cast<int>(plan.shard_rows.size());
  if (!elastic || elastic->max_workers <= starting) return plan;
  plan.join_slots = elastic->max_workers - starting;
  plan.shard_rows.resize(static_cast<std::size_t>(elastic->max_workers), 0);
  plan.segments.resize(static_cast<std::size_t>(elastic->max_workers));
  return plan;
}

}  // namespace dt::roles

#include "core/roles/coordinator.hpp"
#include "core/roles/tensor_plan.hpp"

#include <algorithm>

namespace dt::roles {

Plan make_plan(const config::Config& config) {
  Plan plan;
  plan.source = data::describe_source(config);
  plan.validation_rows =
      data::validation_rows(plan.source.rows, config.data.validation_fraction, config.seed);
  const auto shards = data::plan_shards(plan.source.rows, plan.validation_rows,
                                        config.shards.count, config.shards.strategy, config.seed);
  for (const auto& rows : shards) {
    plan.segments.push_back(data::to_segments(rows, plan.source.csv));
    plan.shard_rows.push_back(rows.size());
    plan.train_rows += rows.size();
  }
  expand_for_tensor(config, plan);  // D shards -> D * T ranks when parallelism.tensor > 1
  const auto batch = static_cast<std::uint64_t>(std::max<std::int64_t>(1, config.training.batch_size));
  plan.steps_per_epoch = config.training.full_batch ? 1 : (plan.train_rows + batch - 1) / batch;
  plan.steps_per_epoch = std::max<std::uint64_t>(1, plan.steps_per_epoch);
  return plan;
}

models::BatchResult evaluate_rows(models::Model& model, std::span<const double> params,
                                  const data::Shard& shard) {
  constexpr std::int64_t kChunkRows = 8192;
  models::BatchResult total;
  const auto rows = static_cast<std::int64_t>(shard.y.size());
  for (std::int64_t begin = 0; begin < rows; begin += kChunkRows) {
    const auto n = std::min(kChunkRows, rows - begin);
    const auto r = model.evaluate(params, shard.x.middleRows(begin, n), shard.y.segment(begin, n));
    total.loss_sum += r.loss_sum;
    total.correct += r.correct;
    total.squared_error_sum += r.squared_error_sum;
  }
  return total;
}

Metrics to_metrics(config::Task task, double loss_sum, double correct, double squared_error_sum,
                   std::uint64_t rows) {
  Metrics m;
  m.rows = rows;
  if (rows == 0) return m;
  const double n = static_cast<double>(rows);
  m.loss = loss_sum / n;
  if (task == config::Task::kRegression) {
    m.mse = squared_error_sum / n;
  } else {
    m.accuracy = correct / n;
    m.log_loss = m.loss;
  }
  return m;
}

}  // namespace dt::roles

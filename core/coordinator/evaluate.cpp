#include "core/coordinator/evaluate.hpp"

#include <algorithm>

namespace dt::roles {

std::optional<Metrics> Evaluation::validate(const std::vector<double>& params) {
  if (!validation_ || validation_->y.size() == 0 || !model_) return std::nullopt;
  const auto total = evaluate_rows(*model_, params, *validation_);
  const auto rows = validation_->y.size();
  return to_metrics(model_->task(), total.loss_sum, total.correct, total.squared_error_sum, rows);
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

#include "core/coordinator/evaluate.hpp"

#include "base/error.hpp"

#include <algorithm>

namespace dt::roles {
namespace {

// Rows a model evaluates or predicts at once: its scratch memory stays bounded.
constexpr std::int64_t kEvaluateChunkRows = 8192;

}  // namespace

std::optional<Metrics> Evaluation::validate(const std::vector<double>& params) {
  if (!validation_ || validation_->y.size() == 0 || !model_) return std::nullopt;
  const auto total = evaluate_rows(*model_, params, *validation_);
  const auto rows = validation_->y.size();
  auto m = to_metrics(model_->task(), total.loss_sum, total.correct, total.squared_error_sum, rows);
  if (model_->task() != config::Task::kRegression) {
    // The coordinator holds every held-out row: their AUC is exact.
    models::ScoreMetrics scores(model_->task(), models::ScoreMetrics::Auc::kExact);
    score_rows(*model_, params, *validation_, scores);
    set_score_metrics(m, scores);
  }
  return m;
}

models::BatchResult evaluate_rows(models::Model& model, std::span<const double> params,
                                  const data::Shard& shard) {
  models::BatchResult total;
  RowScorer scorer(model, params, shard);
  const auto rows = scorer.rows();
  for (std::int64_t begin = 0; begin < rows; begin += kEvaluateChunkRows) {
    const auto n = std::min(kEvaluateChunkRows, rows - begin);
    const auto r = scorer.evaluate(begin, n);
    total.loss_sum += r.loss_sum;
    total.correct += r.correct;
    total.squared_error_sum += r.squared_error_sum;
  }
  return total;
}

void score_rows(models::Model& model, std::span<const double> params, const data::Shard& shard,
                models::ScoreMetrics& scores) {
  models::RowMatrix predictions;
  RowScorer scorer(model, params, shard);
  const auto rows = scorer.rows();
  for (std::int64_t begin = 0; begin < rows; begin += kEvaluateChunkRows) {
    const auto n = std::min(kEvaluateChunkRows, rows - begin);
    scorer.predict(begin, n, predictions);
    scores.add(predictions, shard.y.segment(begin, n));
  }
}

void set_score_metrics(Metrics& m, models::ScoreMetrics& scores) {
  if (scores.rows() > 0) m.log_loss = scores.log_loss_sum() / static_cast<double>(scores.rows());
  if (scores.task() == config::Task::kBinary) {
    m.auc_measured = true;
    m.auc = scores.auc();
    m.auc_error_bound = m.auc ? scores.auc_error_bound() : 0.0;
  }
}

void put_scores(models::Model& model, std::span<const double> params, const data::Shard& shard,
                protocol::Envelope& reply) {
  if (model.task() == config::Task::kRegression) return;
  models::ScoreMetrics scores(model.task(), models::ScoreMetrics::Auc::kHistogram);
  score_rows(model, params, shard, scores);
  reply.fields["log_loss_sum"] = scores.log_loss_sum();
  if (model.task() == config::Task::kBinary) {
    reply.arrays.push_back(protocol::u64_bytes(scores.histogram().counts()));
  }
}

Metrics merge_evaluations(config::Task task, const std::vector<protocol::Envelope>& replies) {
  double loss = 0, correct = 0, squared = 0;
  std::uint64_t rows = 0;
  models::ScoreMetrics scores(task, models::ScoreMetrics::Auc::kHistogram);
  bool scored = task != config::Task::kRegression;
  for (const auto& e : replies) {  // in rank order: the same sums on every rerun
    loss += protocol::number(e, "loss_sum");
    correct += protocol::number(e, "correct");
    squared += protocol::number(e, "squared_error_sum");
    rows += protocol::count(e, "rows");
    // Tensor mode's groups send loss sums only.
    scored = scored && e.fields.contains("log_loss_sum");
    if (!scored) continue;
    scores.add_sums(protocol::number(e, "log_loss_sum"), protocol::count(e, "rows"));
    if (task == config::Task::kBinary &&
        (e.arrays.empty() || !scores.histogram().add_counts(protocol::u64s(e, 0)))) {
      fail<ProtocolError>("worker {}'s evaluation has no score histogram of {} bins", e.rank,
                          models::AucHistogram::kBins);
    }
  }
  auto m = to_metrics(task, loss, correct, squared, rows);
  if (scored) set_score_metrics(m, scores);
  return m;
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

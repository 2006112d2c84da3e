#pragma once
// How the coordinator scores parameters: Evaluation holds its own copy of the model (set once
// the classes are known) and the held-out rows, and gives the validation metrics of any
// parameters; evaluate_rows and to_metrics are the sums and the numbers they become (also used
// for the final evaluation over the training rows).

#include "core/config/config.hpp"
#include "core/coordinator/early_stop.hpp"
#include "core/coordinator/result.hpp"
#include "core/data/dataset.hpp"
#include "core/models/metrics.hpp"
#include "core/models/model.hpp"
#include "core/models/sparse_model.hpp"
#include "core/protocol/protocol.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace dt::roles {

class Evaluation {
 public:
  // The coordinator's own model object (validation, regularization).
  [[nodiscard]] models::Model& model() noexcept { return *model_; }
  void set_model(std::unique_ptr<models::Model> model) { model_ = std::move(model); }
  // The held-out rows (normalized, classes assigned), or nullptr without a split.
  [[nodiscard]] const data::Shard* validation() const noexcept {
    return validation_ ? &*validation_ : nullptr;
  }
  void set_validation(data::Shard shard) { validation_ = std::move(shard); }
  // Validation metrics of `params` on the held-out rows (nullopt without a split).
  [[nodiscard]] std::optional<Metrics> validate(const std::vector<double>& params);
  // training.early_stopping on the validation metrics of the log rows (early_stop.hpp): the
  // session checks each row; a mode ends its loop once early_stop().stopped().
  [[nodiscard]] EarlyStopper& early_stop() noexcept { return early_stop_; }

 private:
  EarlyStopper early_stop_{std::nullopt};
  std::unique_ptr<models::Model> model_;
  std::optional<data::Shard> validation_;
};

// Scores rows begin .. begin + n - 1 of a shard with `params`: the model's own evaluate and
// predict on dense rows; on sparse rows (shard.sparse) the sparse model of the same spec on the
// chunk's keys (the same numbers). Callers keep chunks bounded (scratch grows with them).
class RowScorer {
 public:
  RowScorer(models::Model& model, std::span<const double> params, const data::Shard& shard);
  [[nodiscard]] std::int64_t rows() const noexcept { return shard_.y.size(); }
  [[nodiscard]] models::BatchResult evaluate(std::int64_t begin, std::int64_t n);
  void predict(std::int64_t begin, std::int64_t n, models::RowMatrix& out);

 private:
  void compact_rows(std::int64_t begin, std::int64_t n);
  models::Model& model_;
  std::span<const double> params_;
  const data::Shard& shard_;
  std::unique_ptr<models::SparseModel> sparse_;
  models::SparseBatch batch_;
  std::vector<double> local_;
};

// Loss and metric sums of `params` over every row of `shard`, in chunks so that the model's
// scratch memory stays bounded whatever the shard size.
[[nodiscard]] models::BatchResult evaluate_rows(models::Model& model,
                                                std::span<const double> params,
                                                const data::Shard& shard);

// Adds the score metrics of `params` over every row of `shard` to `scores` (predictions in the
// chunks of evaluate_rows). Binary and multiclass tasks only.
void score_rows(models::Model& model, std::span<const double> params, const data::Shard& shard,
                models::ScoreMetrics& scores);

// Sets m.log_loss to the clipped mean of `scores` and, for binary tasks, m.auc (m covers the
// same rows). Without it, a classification's log_loss is its mean loss (the same but for rows
// whose probability is within 2.2e-16 of 0 or 1).
void set_score_metrics(Metrics& m, models::ScoreMetrics& scores);

// A worker's final evaluation: adds the score part to its kEvaluation `reply` ("log_loss_sum",
// and for binary tasks its score histogram as array 0; nothing for regression).
void put_scores(models::Model& model, std::span<const double> params, const data::Shard& shard,
                protocol::Envelope& reply);
// The final metrics over the training rows from every worker's kEvaluation reply (in rank
// order): the loss and metric sums added, the histograms merged (an AUC within its bound).
// Replies without scores (tensor mode) leave log_loss as the mean loss and auc unmeasured.
[[nodiscard]] Metrics merge_evaluations(config::Task task,
                                        const std::vector<protocol::Envelope>& replies);

// Turns a Metrics for the task into loss/metric numbers.
[[nodiscard]] Metrics to_metrics(config::Task task, double loss_sum, double correct,
                                 double squared_error_sum, std::uint64_t rows);

}  // namespace dt::roles

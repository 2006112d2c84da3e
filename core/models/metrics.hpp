#pragma once
// Metrics of predicted probabilities that do not follow from the models' loss sums: the log-loss
// with scikit-learn's clip, and the area under the ROC curve (AUC) of binary tasks, exact over
// rows kept in memory or from a score histogram that workers fill apart and the coordinator adds
// up (an AUC of shards does not add up; counts do).
//
// AUC is the Mann-Whitney statistic: the share of (positive, negative) row pairs whose positive
// scores higher, a tie counting half. It is undefined when the rows hold one class only
// (nullopt: null in JSON, as scikit-learn's roc_auc_score refuses such rows).

#include "core/config/config.hpp"
#include "core/models/model.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dt::models {

// Probabilities are clipped to [eps, 1 - eps] with eps the double's machine epsilon
// (2.220446049250313e-16), each row renormalized to sum 1, as scikit-learn's log_loss does
// (eps="auto", the default since 1.2; earlier versions clipped at 1e-15).
inline constexpr double kLogLossEpsilon = 2.220446049250313e-16;

// The sum over rows of -log(clipped probability of the row's class). `predictions`: Model::predict's
// rows (binary: P(y = 1), one column; multiclass: K columns); `y`: 0/1 or the class index.
[[nodiscard]] double log_loss_sum(const RowMatrix& predictions, ConstVectorRef y);

// Exact AUC of the negative and the positive rows' scores; sorts both (two arrays of doubles
// sort ~30 % faster than (score, label) pairs), O(n log n): the cost of a validation pass of a
// binary model. NaN scores rank below every other score.
[[nodiscard]] std::optional<double> exact_auc(std::vector<double>& negatives,
                                              std::vector<double>& positives);

// Counts of positive and negative rows by score bin. The bins split the logit log(p / (1 - p))
// of P(y = 1) evenly over [-kLogitLimit, kLogitLimit] (beyond it: the end bins), so that both
// tails keep their resolution (a click model's scores lie near 0). The AUC of the histogram
// counts pairs in different bins exactly and pairs within one bin as ties: it is within
// error_bound() = (sum over bins of positives * negatives) / (2 * P * N) of the exact AUC.
class AucHistogram {
 public:
  static constexpr int kBins = 1 << 15;  // 512 KiB of counts: a message under the 1 MiB floor
  static constexpr double kLogitLimit = 20.0;

  void add(double probability, bool positive);
  // Adds another histogram's counts (negatives then positives, as counts() gives them: empty
  // until a row is added); false when `counts` is not one (wrong size).
  [[nodiscard]] bool add_counts(std::span<const std::uint64_t> counts);
  [[nodiscard]] std::span<const std::uint64_t> counts() const noexcept { return counts_; }
  [[nodiscard]] static int bin_of(double probability) noexcept;
  [[nodiscard]] std::optional<double> auc() const;
  [[nodiscard]] double error_bound() const;

 private:
  void allocate();
  std::vector<std::uint64_t> counts_;  // [negatives by bin..., positives by bin...] or empty
};

// The score metrics of rows given a chunk at a time: the clipped log-loss sum and, for binary
// tasks, the rows' scores (exact AUC) or their histogram.
class ScoreMetrics {
 public:
  enum class Auc { kExact, kHistogram };
  ScoreMetrics(config::Task task, Auc auc) : task_(task), auc_(auc) {}
  void add(const RowMatrix& predictions, ConstVectorRef y);
  // Another part's log-loss sum and rows (a worker's reply).
  void add_sums(double log_loss_sum, std::uint64_t rows) noexcept {
    log_loss_sum_ += log_loss_sum;
    rows_ += rows;
  }
  [[nodiscard]] AucHistogram& histogram() noexcept { return histogram_; }
  [[nodiscard]] config::Task task() const noexcept { return task_; }
  [[nodiscard]] double log_loss_sum() const noexcept { return log_loss_sum_; }
  [[nodiscard]] std::uint64_t rows() const noexcept { return rows_; }
  // Binary tasks' AUC (nullopt: one class only), and its bound (0 when exact).
  [[nodiscard]] std::optional<double> auc();
  [[nodiscard]] double auc_error_bound() const;

 private:
  config::Task task_;
  Auc auc_;
  double log_loss_sum_ = 0;
  std::uint64_t rows_ = 0;
  std::vector<double> negatives_;  // kExact: the scores of each class
  std::vector<double> positives_;
  AucHistogram histogram_;  // kHistogram
};

}  // namespace dt::models

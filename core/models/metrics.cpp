#include "core/models/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dt::models {
namespace {

// AUC from counts walked in ascending score order: each group of tied rows (one score, or one
// bin) adds, per positive, the negatives below it plus half the negatives tied with it. Twice
// that sum is a whole number, kept exact in 64 bits (up to 2^31 rows of each class).
class PairCount {
 public:
  void group(std::uint64_t negatives, std::uint64_t positives) {
    twice_ += 2 * positives * negatives_below_ + positives * negatives;
    tied_ += positives * negatives;
    negatives_below_ += negatives;
    positives_ += positives;
  }
  [[nodiscard]] std::optional<double> auc() const {
    if (positives_ == 0 || negatives_below_ == 0) return std::nullopt;
    return static_cast<double>(twice_) / (2.0 * pairs());
  }
  [[nodiscard]] double tied_share() const {
    return positives_ == 0 || negatives_below_ == 0 ? 0.0 : static_cast<double>(tied_) / pairs();
  }

 private:
  [[nodiscard]] double pairs() const {
    return static_cast<double>(positives_) * static_cast<double>(negatives_below_);
  }
  std::uint64_t twice_ = 0;
  std::uint64_t tied_ = 0;
  std::uint64_t negatives_below_ = 0;
  std::uint64_t positives_ = 0;
};

// scikit-learn's per-row clip and renormalization, then -log of the true class's share.
double row_log_loss(const RowMatrix& predictions, Eigen::Index i, double label) {
  const auto clip = [](double p) { return std::clamp(p, kLogLossEpsilon, 1.0 - kLogLossEpsilon); };
  if (predictions.cols() == 1) {
    // NaN stays NaN through the clip (std::clamp compares), so a diverged model shows.
    const double p1 = std::isnan(predictions(i, 0)) ? predictions(i, 0) : clip(predictions(i, 0));
    const double p0 = 1.0 - p1;
    return -std::log((label >= 0.5 ? p1 : p0) / (p0 + p1));
  }
  // A label that is no class index (never from the data readers) gets no probability: +inf.
  const auto k = label >= 0 && label < static_cast<double>(predictions.cols())
                     ? static_cast<Eigen::Index>(label)
                     : Eigen::Index{-1};
  double sum = 0;
  double mine = 0;
  for (Eigen::Index c = 0; c < predictions.cols(); ++c) {
    const double p = std::isnan(predictions(i, c)) ? predictions(i, c) : clip(predictions(i, c));
    sum += p;
    if (c == k) mine = p;
  }
  return -std::log(mine / sum);
}

}  // namespace

double log_loss_sum(const RowMatrix& predictions, ConstVectorRef y) {
  double total = 0;
  for (Eigen::Index i = 0; i < predictions.rows(); ++i) total += row_log_loss(predictions, i, y(i));
  return total;
}

std::optional<double> exact_auc(std::vector<double>& negatives, std::vector<double>& positives) {
  for (auto* scores : {&negatives, &positives}) {
    for (double& s : *scores) {
      if (std::isnan(s)) s = -std::numeric_limits<double>::infinity();
    }
    std::sort(scores->begin(), scores->end());
  }
  // Both lists merged in ascending order, one group per distinct score.
  PairCount count;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < negatives.size() || j < positives.size()) {
    const double score = j == positives.size()   ? negatives[i]
                         : i == negatives.size() ? positives[j]
                                                 : std::min(negatives[i], positives[j]);
    const std::size_t i0 = i;
    const std::size_t j0 = j;
    while (i < negatives.size() && negatives[i] == score) ++i;
    while (j < positives.size() && positives[j] == score) ++j;
    count.group(i - i0, j - j0);
  }
  return count.auc();
}

int AucHistogram::bin_of(double probability) noexcept {
  const double logit = std::log(probability) - std::log1p(-probability);
  if (!(logit > -kLogitLimit)) return 0;  // NaN too
  if (!(logit < kLogitLimit)) return kBins - 1;
  const auto bin = static_cast<int>((logit + kLogitLimit) / (2 * kLogitLimit) * kBins);
  return std::min(bin, kBins - 1);
}

void AucHistogram::allocate() {
  if (counts_.empty()) counts_.assign(2 * static_cast<std::size_t>(kBins), 0);
}

void AucHistogram::add(double probability, bool positive) {
  allocate();
  ++counts_[static_cast<std::size_t>(bin_of(probability) + (positive ? kBins : 0))];
}

bool AucHistogram::add_counts(std::span<const std::uint64_t> counts) {
  if (counts.empty()) return true;
  if (counts.size() != 2 * static_cast<std::size_t>(kBins)) return false;
  allocate();
  for (std::size_t i = 0; i < counts.size(); ++i) counts_[i] += counts[i];
  return true;
}

std::optional<double> AucHistogram::auc() const {
  PairCount count;
  for (std::size_t b = 0; b < counts_.size() / 2; ++b) count.group(counts_[b], counts_[b + kBins]);
  return count.auc();
}

double AucHistogram::error_bound() const {
  PairCount count;
  for (std::size_t b = 0; b < counts_.size() / 2; ++b) count.group(counts_[b], counts_[b + kBins]);
  return count.tied_share() / 2.0;
}

void ScoreMetrics::add(const RowMatrix& predictions, ConstVectorRef y) {
  log_loss_sum_ += models::log_loss_sum(predictions, y);
  rows_ += static_cast<std::uint64_t>(predictions.rows());
  if (task_ != config::Task::kBinary) return;
  for (Eigen::Index i = 0; i < predictions.rows(); ++i) {
    const bool positive = y(i) >= 0.5;
    if (auc_ == Auc::kExact) {
      (positive ? positives_ : negatives_).push_back(predictions(i, 0));
    } else {
      histogram_.add(predictions(i, 0), positive);
    }
  }
}

std::optional<double> ScoreMetrics::auc() {
  if (task_ != config::Task::kBinary) return std::nullopt;
  return auc_ == Auc::kExact ? exact_auc(negatives_, positives_) : histogram_.auc();
}

double ScoreMetrics::auc_error_bound() const {
  return auc_ == Auc::kExact ? 0.0 : histogram_.error_bound();
}

}  // namespace dt::models

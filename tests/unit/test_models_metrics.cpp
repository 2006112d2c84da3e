// AUC and log-loss (core/models/metrics.hpp): hand-computed cases (ties, one class, clipping),
// the histogram's bound and merge, and scikit-learn 1.2's roc_auc_score / log_loss on 400 rows
// made by an integer formula (the Python that gave the expected values is in each case).

#include "core/models/metrics.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace {

using dt::models::AucHistogram;
using dt::models::RowMatrix;
using dt::models::ScoreMetrics;

std::optional<double> exact_or_none(const std::vector<double>& s, const std::vector<int>& y) {
  std::vector<double> negatives, positives;
  for (std::size_t i = 0; i < s.size(); ++i) (y[i] == 1 ? positives : negatives).push_back(s[i]);
  return dt::models::exact_auc(negatives, positives);
}

double exact(const std::vector<double>& s, const std::vector<int>& y) {
  const auto auc = exact_or_none(s, y);
  REQUIRE(auc.has_value());
  return *auc;
}

std::optional<double> histogram_auc(const std::vector<double>& s, const std::vector<int>& y,
                                    double* bound = nullptr) {
  AucHistogram h;
  for (std::size_t i = 0; i < s.size(); ++i) h.add(s[i], y[i] == 1);
  if (bound != nullptr) *bound = h.error_bound();
  return h.auc();
}

// The 400 rows: i = 0..399, score ((i*7919+13) % 101) / 100 (0 and 1 among them, many ties),
// label 1 when (i*7919+13) % 101 + (i*53) % 61 > 80.
void formula_rows(std::vector<double>& s, std::vector<int>& y) {
  for (int i = 0; i < 400; ++i) {
    const int a = (i * 7919 + 13) % 101;
    s.push_back(a / 100.0);
    y.push_back(a + (i * 53) % 61 > 80 ? 1 : 0);
  }
}

}  // namespace

TEST_CASE("auc: hand-computed pairs, ties counting half") {
  // 4 pairs; the positive 0.35 is below the negative 0.4: 3 of 4.
  CHECK(exact({0.1, 0.4, 0.35, 0.8}, {0, 0, 1, 1}) == 0.75);
  // Positive 0.5 ties negative 0.5: 1 + 0.5 + 2 = 3.5 of 4.
  CHECK(exact({0.2, 0.5, 0.5, 0.9}, {0, 0, 1, 1}) == 0.875);
  CHECK(exact({0.5, 0.5, 0.5, 0.5}, {0, 1, 0, 1}) == 0.5);
  CHECK(exact({0.9, 0.1}, {0, 1}) == 0.0);
  CHECK(exact({0.1, 0.9}, {0, 1}) == 1.0);
  // The order the rows come in does not matter.
  CHECK(exact({0.8, 0.35, 0.4, 0.1}, {1, 1, 0, 0}) == 0.75);
}

TEST_CASE("auc: undefined with one class only") {
  CHECK_FALSE(exact_or_none({0.1, 0.7}, {1, 1}).has_value());
  CHECK_FALSE(exact_or_none({0.1, 0.7}, {0, 0}).has_value());
  CHECK_FALSE(exact_or_none({}, {}).has_value());
  CHECK_FALSE(histogram_auc({0.1, 0.7}, {1, 1}).has_value());
  CHECK_FALSE(AucHistogram().auc().has_value());
}

TEST_CASE("auc: NaN scores rank lowest instead of breaking the sort") {
  CHECK(exact({std::nan(""), 0.3, 0.2}, {0, 1, 0}) == 1.0);
  CHECK(exact({std::nan(""), 0.3}, {1, 0}) == 0.0);
  CHECK(exact({std::nan(""), -std::numeric_limits<double>::infinity()}, {1, 0}) == 0.5);
}

TEST_CASE("auc histogram: bins follow the logit, the ends catch the tails") {
  CHECK(AucHistogram::bin_of(0.5) == AucHistogram::kBins / 2);
  CHECK(AucHistogram::bin_of(0.0) == 0);
  CHECK(AucHistogram::bin_of(1.0) == AucHistogram::kBins - 1);
  CHECK(AucHistogram::bin_of(std::nan("")) == 0);
  CHECK(AucHistogram::bin_of(1e-3) < AucHistogram::bin_of(1.1e-3));  // fine near 0
  CHECK(AucHistogram::bin_of(1 - 1e-3) < AucHistogram::bin_of(1 - 0.9e-3));  // and near 1
}

TEST_CASE("auc histogram: exact when no pair shares a bin, within its bound otherwise") {
  double bound = -1;
  CHECK(histogram_auc({0.1, 0.4, 0.35, 0.8}, {0, 0, 1, 1}, &bound) == 0.75);
  CHECK(bound == 0.0);
  CHECK(histogram_auc({0.2, 0.5, 0.5, 0.9}, {0, 0, 1, 1}, &bound) == 0.875);
  CHECK(bound == 0.125);  // the one tied pair of 4, counted half: at most half a pair off
  // 0.5 and 0.5 + 1e-9 share a bin: exact 1, the histogram 0.5, and the bound says 0.5.
  CHECK(exact({0.5, 0.5 + 1e-9}, {0, 1}) == 1.0);
  CHECK(histogram_auc({0.5, 0.5 + 1e-9}, {0, 1}, &bound) == 0.5);
  CHECK(bound == 0.5);
  std::vector<double> s;
  std::vector<int> y;
  formula_rows(s, y);
  const auto h = histogram_auc(s, y, &bound);
  REQUIRE(h);
  CHECK(std::abs(*h - exact(s, y)) <= bound);
}

TEST_CASE("auc histogram: merged parts give the whole's counts and AUC") {
  std::vector<double> s;
  std::vector<int> y;
  formula_rows(s, y);
  AucHistogram whole, first, second, merged;
  for (std::size_t i = 0; i < s.size(); ++i) {
    whole.add(s[i], y[i] == 1);
    (i % 3 == 0 ? first : second).add(s[i], y[i] == 1);
  }
  CHECK(merged.add_counts(first.counts()));
  CHECK(merged.add_counts(second.counts()));
  CHECK(merged.add_counts({}));  // a worker without rows
  CHECK(std::equal(merged.counts().begin(), merged.counts().end(), whole.counts().begin(),
                   whole.counts().end()));
  CHECK(merged.auc() == whole.auc());
  const std::vector<std::uint64_t> wrong(7, 1);
  CHECK_FALSE(merged.add_counts(wrong));
}

TEST_CASE("auc and log-loss match scikit-learn on 400 rows with ties, 0 and 1") {
  // y = (((i*7919+13)%101 + (i*53)%61) > 80); s = ((i*7919+13)%101)/100
  // roc_auc_score(y, s) = 0.9364734118352958; log_loss(y, s) = 0.37037848622017494
  std::vector<double> s;
  std::vector<int> y;
  formula_rows(s, y);
  CHECK(exact(s, y) == doctest::Approx(0.9364734118352958).epsilon(1e-15));
  RowMatrix p(static_cast<Eigen::Index>(s.size()), 1);
  Eigen::VectorXd labels(static_cast<Eigen::Index>(s.size()));
  for (std::size_t i = 0; i < s.size(); ++i) {
    p(static_cast<Eigen::Index>(i), 0) = s[i];
    labels(static_cast<Eigen::Index>(i)) = y[i];
  }
  CHECK(dt::models::log_loss_sum(p, labels) / 400.0 ==
        doctest::Approx(0.37037848622017494).epsilon(1e-13));
  ScoreMetrics scores(dt::config::Task::kBinary, ScoreMetrics::Auc::kExact);
  scores.add(p.topRows(150), labels.head(150));  // two chunks
  scores.add(p.bottomRows(250), labels.tail(250));
  CHECK(scores.rows() == 400);
  CHECK(scores.auc() == doctest::Approx(0.9364734118352958).epsilon(1e-15));
  CHECK(scores.auc_error_bound() == 0.0);
}

TEST_CASE("log-loss: probabilities clipped at machine epsilon, rows renormalized") {
  RowMatrix p(3, 1);
  p << 0.0, 1.0, 1.0;
  Eigen::VectorXd y(3);
  y << 1, 1, 0;
  // -log(eps) twice and -log(1 - eps) once: log_loss([1,1,0], [0,1,1]) = 24.029102259411435
  const double eps = dt::models::kLogLossEpsilon;
  CHECK(eps == std::numeric_limits<double>::epsilon());
  CHECK(dt::models::log_loss_sum(p, y) / 3 == doctest::Approx(24.029102259411435).epsilon(1e-14));
  CHECK(dt::models::log_loss_sum(p.topRows(1), y.head(1)) == -std::log(eps));
  RowMatrix q(1, 1);
  q << 0.8;
  Eigen::VectorXd one(1);
  one << 1;
  CHECK(dt::models::log_loss_sum(q, one) == doctest::Approx(-std::log(0.8)).epsilon(1e-15));
  // Multiclass: a row that does not sum to 1 is renormalized first.
  RowMatrix m(2, 3);
  m << 0.2, 0.3, 0.5, 0.2, 0.2, 0.2;
  Eigen::VectorXd k(2);
  k << 2, 0;
  CHECK(dt::models::log_loss_sum(m, k) ==
        doctest::Approx(-std::log(0.5) - std::log(1.0 / 3)).epsilon(1e-15));
  // A label that is no class index gets no probability (and no out-of-range read).
  Eigen::VectorXd bad(1);
  bad << 5;
  CHECK(std::isinf(dt::models::log_loss_sum(m.topRows(1), bad)));
}

TEST_CASE("log-loss matches scikit-learn on 400 rows of 3 classes") {
  // P = [i%5+1, i*3%7+1, i*11%13+1] / row sum; y = i % 3
  // log_loss(y, P, labels=[0, 1, 2]) = 1.2752089725117797
  RowMatrix p(400, 3);
  Eigen::VectorXd y(400);
  for (int i = 0; i < 400; ++i) {
    const double a = i % 5 + 1, b = i * 3 % 7 + 1, c = i * 11 % 13 + 1;
    p.row(i) << a / (a + b + c), b / (a + b + c), c / (a + b + c);
    y(i) = i % 3;
  }
  ScoreMetrics scores(dt::config::Task::kMulticlass, ScoreMetrics::Auc::kExact);
  scores.add(p, y);
  CHECK(scores.log_loss_sum() / 400 == doctest::Approx(1.2752089725117797).epsilon(1e-13));
  CHECK_FALSE(scores.auc().has_value());  // AUC is for binary tasks
}

// The loss heads: squared error, binary cross-entropy on the logit, softmax cross-entropy.
// Each works row by row on the outputs in place, so no model needs a second n x K buffer.

#include "core/models/detail.hpp"
#include "base/error.hpp"

#include <algorithm>
#include <cmath>

namespace dt::models::detail {

namespace {

// log(1 + e^z) without overflow for large |z| nor loss of precision near 0.
double softplus(double z) noexcept { return std::max(z, 0.0) + std::log1p(std::exp(-std::abs(z))); }

double sigmoid(double z) noexcept {
  if (z >= 0.0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

Eigen::Index class_index(double label, Eigen::Index classes, Eigen::Index row) {
  // The negated test also rejects NaN.
  if (!(label >= 0.0 && label < static_cast<double>(classes)) || label != std::floor(label)) {
    fail<DataError>("row {} of the batch: label {} is not a class index in [0, {})", row, label,
                    classes);
  }
  return static_cast<Eigen::Index>(label);
}

BatchResult regression(Eigen::Ref<RowMatrix> z, const ConstVectorRef& y, bool gradient) {
  BatchResult r;
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    const double residual = z(i, 0) - y(i);
    r.loss_sum += residual * residual;
    if (gradient) z(i, 0) = 2.0 * residual;
  }
  r.squared_error_sum = r.loss_sum;
  return r;
}

BatchResult binary(Eigen::Ref<RowMatrix> z, const ConstVectorRef& y, bool gradient) {
  BatchResult r;
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    const double logit = z(i, 0);
    const double label = y(i);
    // -[y log p + (1 - y) log(1 - p)] with p = sigmoid(z) simplifies to softplus(z) - y z.
    r.loss_sum += softplus(logit) - label * logit;
    // p >= 0.5 exactly when z >= 0; labels are 0/1, read as "positive" from 0.5 up.
    if ((logit >= 0.0) == (label >= 0.5)) r.correct += 1.0;
    if (gradient) z(i, 0) = sigmoid(logit) - label;
  }
  return r;
}

BatchResult multiclass(Eigen::Ref<RowMatrix> z, const ConstVectorRef& y, bool gradient,
                       Eigen::Index first_row) {
  BatchResult r;
  const Eigen::Index k = z.cols();
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    auto row = z.row(i);
    const Eigen::Index label = class_index(y(i), k, first_row + i);
    // Strict > keeps the lowest index among ties.
    Eigen::Index best = 0;
    for (Eigen::Index c = 1; c < k; ++c) {
      if (row(c) > row(best)) best = c;
    }
    const double shift = row(best);
    const double log_sum_exp = shift + std::log((row.array() - shift).exp().sum());
    r.loss_sum += log_sum_exp - row(label);
    if (best == label) r.correct += 1.0;
    if (gradient) {
      row = (row.array() - log_sum_exp).exp().matrix();
      row(label) -= 1.0;
    }
  }
  return r;
}

}  // namespace

BatchResult apply_head(config::Task task, Eigen::Ref<RowMatrix> z, const ConstVectorRef& y,
                       bool gradient, Eigen::Index first_row) {
  switch (task) {
    case config::Task::kRegression:
      return regression(z, y, gradient);
    case config::Task::kBinary:
      return binary(z, y, gradient);
    case config::Task::kMulticlass:
      return multiclass(z, y, gradient, first_row);
  }
  return {};
}

void apply_link(config::Task task, Eigen::Ref<RowMatrix> z) {
  switch (task) {
    case config::Task::kRegression:
      return;
    case config::Task::kBinary:
      z = z.unaryExpr([](double v) { return sigmoid(v); });
      return;
    case config::Task::kMulticlass:
      for (Eigen::Index i = 0; i < z.rows(); ++i) {
        auto row = z.row(i);
        row = (row.array() - row.maxCoeff()).exp().matrix();
        row /= row.sum();
      }
      return;
  }
}

}  // namespace dt::models::detail

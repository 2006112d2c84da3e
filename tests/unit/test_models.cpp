// Models: gradients against central finite differences for every model, activation and task;
// losses in closed form; layouts; deterministic init; error messages.

#include "core/models/model.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

namespace {

using dt::config::Activation;
using dt::config::ModelType;
using dt::config::Task;
using dt::models::BatchResult;
using dt::models::Model;
using dt::models::ModelSpec;
using dt::models::RowMatrix;
using dt::test::Batch;
using dt::test::random_batch;
using dt::test::random_params;
using dt::test::spec_of;

using dt::test::close;

// The analytic gradient of the batch loss sum against central differences of evaluate().
void check_gradient(Model& model, const std::vector<double>& params, const Batch& batch) {
  const std::size_t n = params.size();
  // loss_and_gradient ADDS to grad_sum: start from a non-zero vector and subtract it.
  std::vector<double> grad(n, 0.25);
  const BatchResult with_grad = model.loss_and_gradient(params, batch.x, batch.y, grad);
  const BatchResult plain = model.evaluate(params, batch.x, batch.y);
  CHECK(with_grad.loss_sum == doctest::Approx(plain.loss_sum).epsilon(1e-14));
  CHECK(with_grad.correct == plain.correct);

  constexpr double h = 1e-6;
  std::vector<double> p = params;
  int bad = 0;
  for (std::size_t k = 0; k < n; ++k) {
    p[k] = params[k] + h;
    const double up = model.evaluate(p, batch.x, batch.y).loss_sum;
    p[k] = params[k] - h;
    const double down = model.evaluate(p, batch.x, batch.y).loss_sum;
    p[k] = params[k];
    const double numeric = (up - down) / (2.0 * h);
    const double analytic = grad[k] - 0.25;
    if (!close(analytic, numeric, 1e-6)) {
      ++bad;
      INFO("parameter ", k, ": analytic ", analytic, " numeric ", numeric);
      CHECK(close(analytic, numeric, 1e-6));
    }
  }
  CHECK(bad == 0);
}

void check_regularization_gradient(const Model& model, const std::vector<double>& params) {
  const std::size_t n = params.size();
  std::vector<double> grad(n, 0.0);
  model.add_regularization_gradient(params, grad);
  constexpr double h = 1e-6;
  std::vector<double> p = params;
  for (std::size_t k = 0; k < n; ++k) {
    p[k] = params[k] + h;
    const double up = model.regularization(p);
    p[k] = params[k] - h;
    const double down = model.regularization(p);
    p[k] = params[k];
    CHECK(close(grad[k], (up - down) / (2.0 * h), 1e-6));
  }
  // Biases are not regularized.
  for (const auto& block : model.layout()) {
    if (block.regularized) continue;
    for (std::size_t k = block.offset; k < block.offset + block.size; ++k) CHECK(grad[k] == 0.0);
  }
  // Closed form: 0.5 * l2 * sum of squared weights.
  double sum = 0.0;
  for (const auto& block : model.layout()) {
    if (!block.regularized) continue;
    for (std::size_t k = block.offset; k < block.offset + block.size; ++k) {
      sum += params[k] * params[k];
    }
  }
  CHECK(model.regularization(params) == doctest::Approx(0.5 * model.spec().config.l2 * sum));
}

void check_model(const ModelSpec& spec, std::uint64_t seed) {
  auto model = dt::models::make_model(spec);
  const Task task = model->task();
  const auto params = random_params(model->parameter_count(), seed, 0.7);
  // Two batch sizes, larger then smaller, so that the scratch reuse is checked as well.
  for (const Eigen::Index rows : {9, 4}) {
    CAPTURE(rows);
    const Batch batch = random_batch(rows, spec.inputs, task, spec.classes, seed + 1);
    check_gradient(*model, params, batch);
  }
  check_regularization_gradient(*model, params);
}

}  // namespace

TEST_CASE("models: convex model gradients match central finite differences") {
  SUBCASE("linear_regression") {
    check_model(spec_of(ModelType::kLinearRegression, 4, 0, {}, {}, {}, 0.3), 11);
  }
  SUBCASE("logistic_regression") {
    check_model(spec_of(ModelType::kLogisticRegression, 4, 0, {}, {}, {}, 0.3), 12);
  }
  SUBCASE("softmax_regression") {
    check_model(spec_of(ModelType::kSoftmaxRegression, 4, 3, {}, {}, {}, 0.3), 13);
  }
}

TEST_CASE("models: mlp gradients match central finite differences for every activation and task") {
  std::uint64_t seed = 100;
  for (const auto activation : {Activation::kRelu, Activation::kTanh, Activation::kSigmoid}) {
    for (const auto task : {Task::kRegression, Task::kBinary, Task::kMulticlass}) {
      for (const auto& hidden : {std::vector<int>{5}, std::vector<int>{4, 3}}) {
        INFO("activation ", dt::config::name_of(activation), " task ", static_cast<int>(task),
             " hidden layers ", hidden.size());
        const int classes = task == Task::kMulticlass ? 3 : 0;
        check_model(spec_of(ModelType::kMlp, 4, classes, hidden, activation, task, 0.2), ++seed);
      }
    }
  }
}

TEST_CASE("models: linear regression loss and gradient on a hand-made batch") {
  auto model = dt::models::make_model(spec_of(ModelType::kLinearRegression, 2));
  const std::vector<double> params{1.0, 2.0, 0.5};  // w = [1, 2], b = 0.5
  RowMatrix x(3, 2);
  x << 1, 0, 0, 1, 1, 1;
  const Eigen::Vector3d y(1, 1, 5);
  // predictions 1.5, 2.5, 3.5; residuals 0.5, 1.5, -1.5
  std::vector<double> grad(3, 0.0);
  const BatchResult r = model->loss_and_gradient(params, x, y, grad);
  CHECK(r.loss_sum == doctest::Approx(0.25 + 2.25 + 2.25));
  CHECK(r.squared_error_sum == doctest::Approx(4.75));
  // 2 X^T r = 2 [0.5 - 1.5, 1.5 - 1.5]; bias 2 * sum r = 1
  CHECK(grad[0] == doctest::Approx(-2.0));
  CHECK(grad[1] == doctest::Approx(0.0));
  CHECK(grad[2] == doctest::Approx(1.0));

  RowMatrix out;
  model->predict(params, x, out);
  REQUIRE(out.rows() == 3);
  REQUIRE(out.cols() == 1);
  CHECK(out(0, 0) == doctest::Approx(1.5));
  CHECK(out(2, 0) == doctest::Approx(3.5));
}

TEST_CASE("models: losses at zero parameters are n log 2 and n log K") {
  const Batch bin = random_batch(6, 3, Task::kBinary, 0, 5);
  auto logistic = dt::models::make_model(spec_of(ModelType::kLogisticRegression, 3));
  std::vector<double> zeros(logistic->parameter_count(), 0.0);
  std::vector<double> grad(zeros.size(), 0.0);
  CHECK(logistic->loss_and_gradient(zeros, bin.x, bin.y, grad).loss_sum ==
        doctest::Approx(6.0 * std::numbers::ln2));
  // p = 1/2 everywhere: gradient sum (1/2 - y) x and bias sum (1/2 - y)
  const Eigen::VectorXd residual = Eigen::VectorXd::Constant(6, 0.5) - bin.y;
  const Eigen::VectorXd expected = bin.x.transpose() * residual;
  for (int j = 0; j < 3; ++j) CHECK(grad[j] == doctest::Approx(expected(j)));
  CHECK(grad[3] == doctest::Approx(residual.sum()));

  const Batch multi = random_batch(7, 3, Task::kMulticlass, 4, 6);
  auto softmax = dt::models::make_model(spec_of(ModelType::kSoftmaxRegression, 3, 4));
  std::vector<double> zeros_k(softmax->parameter_count(), 0.0);
  const BatchResult r = softmax->evaluate(zeros_k, multi.x, multi.y);
  CHECK(r.loss_sum == doctest::Approx(7.0 * std::log(4.0)));
  // All logits tie: the prediction is class 0.
  CHECK(r.correct == static_cast<double>((multi.y.array() == 0.0).count()));
}

TEST_CASE("models: huge logits give finite losses and gradients") {
  auto logistic = dt::models::make_model(spec_of(ModelType::kLogisticRegression, 1));
  const std::vector<double> params{1000.0, 0.0};  // z = 1000 x
  RowMatrix x(1, 1);
  x << 1.0;
  for (const double sign : {1.0, -1.0}) {
    x(0, 0) = sign;
    for (const double label : {0.0, 1.0}) {
      CAPTURE(sign);
      CAPTURE(label);
      std::vector<double> grad(2, 0.0);
      const BatchResult r =
          logistic->loss_and_gradient(params, x, Eigen::VectorXd::Constant(1, label), grad);
      const bool right = (sign > 0) == (label > 0.5);
      CHECK(std::isfinite(r.loss_sum));
      CHECK(r.loss_sum == doctest::Approx(right ? 0.0 : 1000.0));
      CHECK(r.correct == (right ? 1.0 : 0.0));
      // d/dz = sigmoid(z) - y, which is 0 or +-1; times x = sign
      const double dz = (sign > 0 ? 1.0 : 0.0) - label;
      CHECK(grad[0] == doctest::Approx(dz * sign));
      CHECK(grad[1] == doctest::Approx(dz));
    }
  }

  auto softmax = dt::models::make_model(spec_of(ModelType::kSoftmaxRegression, 1, 3));
  const std::vector<double> w{1000.0, 0.0, -1000.0, 0.0, 0.0, 0.0};
  x(0, 0) = 1.0;
  std::vector<double> grad(6, 0.0);
  const BatchResult r = softmax->loss_and_gradient(w, x, Eigen::VectorXd::Constant(1, 2.0), grad);
  CHECK(r.loss_sum == doctest::Approx(2000.0));
  for (const double g : grad) CHECK(std::isfinite(g));
  CHECK(grad[0] == doctest::Approx(1.0));
  CHECK(grad[2] == doctest::Approx(-1.0));
}

TEST_CASE("models: evaluate counts correct predictions on a hand-made batch") {
  // Logistic: z = x; predicted 1 iff z >= 0 (z = 0 counts as 1).
  auto logistic = dt::models::make_model(spec_of(ModelType::kLogisticRegression, 1));
  const std::vector<double> params{1.0, 0.0};
  RowMatrix x(4, 1);
  x << 2.0, -1.0, 0.0, 3.0;
  const Eigen::Vector4d y(1, 1, 1, 0);  // right, wrong, right, wrong
  CHECK(logistic->evaluate(params, x, y).correct == 2.0);

  // Softmax with logits = bias [0, 1, 1]: the tie between classes 1 and 2 goes to 1.
  auto softmax = dt::models::make_model(spec_of(ModelType::kSoftmaxRegression, 1, 3));
  const std::vector<double> w{0.0, 0.0, 0.0, 0.0, 1.0, 1.0};
  const Eigen::Vector4d labels(1, 2, 0, 1);
  const BatchResult r = softmax->evaluate(w, x, labels);
  CHECK(r.correct == 2.0);
  CHECK(r.loss_sum == doctest::Approx(4.0 * std::log(1.0 + 2.0 * std::numbers::e) - 3.0));
  CHECK(r.squared_error_sum == 0.0);
}

TEST_CASE("models: predictions are values, probabilities and distributions") {
  const Batch batch = random_batch(5, 3, Task::kMulticlass, 3, 21);
  SUBCASE("softmax rows are the normalized exponentials of the logits") {
    auto model = dt::models::make_model(spec_of(ModelType::kSoftmaxRegression, 3, 3));
    const auto params = random_params(model->parameter_count(), 22, 1.0);
    RowMatrix out;
    model->predict(params, batch.x, out);
    REQUIRE(out.rows() == 5);
    REQUIRE(out.cols() == 3);
    const Eigen::Map<const RowMatrix> w(params.data(), 3, 3);
    const Eigen::Map<const Eigen::RowVectorXd> b(params.data() + 9, 3);
    for (Eigen::Index i = 0; i < 5; ++i) {
      const Eigen::RowVectorXd z = batch.x.row(i) * w + b;
      const Eigen::RowVectorXd p = z.array().exp() / z.array().exp().sum();
      for (Eigen::Index k = 0; k < 3; ++k) CHECK(out(i, k) == doctest::Approx(p(k)));
    }
  }
  SUBCASE("logistic gives the sigmoid of the logit") {
    auto model = dt::models::make_model(spec_of(ModelType::kLogisticRegression, 3));
    const std::vector<double> params{0.5, -1.0, 2.0, 0.25};
    RowMatrix out;
    model->predict(params, batch.x, out);
    for (Eigen::Index i = 0; i < 5; ++i) {
      const double z = 0.5 * batch.x(i, 0) - batch.x(i, 1) + 2.0 * batch.x(i, 2) + 0.25;
      CHECK(out(i, 0) == doctest::Approx(1.0 / (1.0 + std::exp(-z))));
    }
  }
  SUBCASE("mlp predictions agree with evaluate") {
    for (const auto task : {Task::kRegression, Task::kBinary, Task::kMulticlass}) {
      const int classes = task == Task::kMulticlass ? 3 : 0;
      auto model = dt::models::make_model(
          spec_of(ModelType::kMlp, 3, classes, {4}, Activation::kTanh, task));
      const auto params = random_params(model->parameter_count(), 23, 0.8);
      const Batch b = random_batch(5, 3, task, classes, 24);
      RowMatrix out;
      model->predict(params, b.x, out);
      REQUIRE(out.rows() == 5);
      REQUIRE(out.cols() == model->outputs());
      const BatchResult r = model->evaluate(params, b.x, b.y);
      double loss = 0.0;
      for (Eigen::Index i = 0; i < 5; ++i) {
        if (task == Task::kRegression) loss += std::pow(out(i, 0) - b.y(i), 2);
        if (task == Task::kBinary) {
          loss -= b.y(i) == 1.0 ? std::log(out(i, 0)) : std::log(1.0 - out(i, 0));
        }
        if (task == Task::kMulticlass) {
          CHECK(out.row(i).sum() == doctest::Approx(1.0));
          loss -= std::log(out(i, static_cast<Eigen::Index>(b.y(i))));
        }
      }
      CHECK(r.loss_sum == doctest::Approx(loss));
    }
  }
}

TEST_CASE("models: batches may be strided views and may be empty") {
  auto model = dt::models::make_model(
      spec_of(ModelType::kMlp, 3, 0, {4, 2}, Activation::kSigmoid, Task::kBinary));
  const auto params = random_params(model->parameter_count(), 31, 0.9);
  const Batch wide = random_batch(6, 5, Task::kBinary, 0, 32);
  // Columns 1..3 of a wider matrix: rows are 5 apart, not 3.
  const RowMatrix copy = wide.x.middleCols(1, 3);
  std::vector<double> g_view(params.size(), 0.0);
  std::vector<double> g_copy(params.size(), 0.0);
  const auto a = model->loss_and_gradient(params, wide.x.middleCols(1, 3), wide.y, g_view);
  const auto b = model->loss_and_gradient(params, copy, wide.y, g_copy);
  CHECK(a.loss_sum == b.loss_sum);
  CHECK(g_view == g_copy);

  const RowMatrix empty(0, 3);
  const Eigen::VectorXd no_labels(0);
  std::vector<double> grad(params.size(), 0.0);
  const auto r = model->loss_and_gradient(params, empty, no_labels, grad);
  CHECK(r.loss_sum == 0.0);
  CHECK(std::all_of(grad.begin(), grad.end(), [](double v) { return v == 0.0; }));
}

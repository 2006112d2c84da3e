// model.dtype float32: the mlp's products in float32, everything it returns in double. Its
// gradient is the float64 one within float32 rounding (and not the same bits: the products
// really are single precision); a picked batch gives the bits of the same rows gathered by
// hand; the combinations it is not available for are refused with the exact texts.

#include "core/config/config.hpp"
#include "core/models/model.hpp"
#include "core/models/tensor.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

using dt::config::Activation;
using dt::config::Dtype;
using dt::config::ModelType;
using dt::config::Task;
using dt::models::ModelSpec;

ModelSpec f32(ModelSpec spec) {
  spec.config.dtype = Dtype::kFloat32;
  return spec;
}

struct Sums {
  std::vector<double> grad;
  double loss = 0;
};

Sums gradient_of(const ModelSpec& spec, const std::vector<double>& params,
                 const dt::test::Batch& batch) {
  auto model = dt::models::make_model(spec);
  Sums s{std::vector<double>(params.size(), 0.0), 0.0};
  s.loss = model->loss_and_gradient(params, batch.x, batch.y, s.grad).loss_sum;
  return s;
}

}  // namespace

TEST_CASE("float32 mlp: the gradient is the float64 one within float32 rounding") {
  std::uint64_t seed = 300;
  for (const auto activation : {Activation::kRelu, Activation::kTanh, Activation::kSigmoid}) {
    for (const auto task : {Task::kRegression, Task::kBinary, Task::kMulticlass}) {
      for (const auto& hidden : {std::vector<int>{5}, std::vector<int>{8, 3}}) {
        INFO("activation ", dt::config::name_of(activation), " task ", dt::config::name_of(task),
             " hidden layers ", hidden.size());
        const int classes = task == Task::kMulticlass ? 3 : 0;
        const auto spec = dt::test::spec_of(ModelType::kMlp, 6, classes, hidden, activation, task);
        const auto params = dt::test::random_params(
            dt::models::make_model(spec)->parameter_count(), ++seed, 0.7);
        const auto batch = dt::test::random_batch(33, 6, task, classes, seed + 7);
        const Sums d = gradient_of(spec, params, batch);
        const Sums f = gradient_of(f32(spec), params, batch);
        // float32 keeps 24 bits: a sum of 33 rows of products of a few terms each is good to
        // about 1e-6 of the largest magnitude it adds; 1e-4 leaves room and still fails a
        // wrong formula by orders of magnitude.
        double scale = 0;
        for (const double g : d.grad) scale = std::max(scale, std::abs(g));
        int bad = 0;
        bool differs = false;
        for (std::size_t k = 0; k < d.grad.size(); ++k) {
          differs = differs || d.grad[k] != f.grad[k];
          if (std::abs(d.grad[k] - f.grad[k]) > 1e-4 * scale) {
            ++bad;
            INFO("parameter ", k, ": float64 ", d.grad[k], " float32 ", f.grad[k]);
            CHECK(std::abs(d.grad[k] - f.grad[k]) <= 1e-4 * scale);
          }
        }
        CHECK(bad == 0);
        CHECK(std::abs(d.loss - f.loss) <= 1e-5 * std::abs(d.loss) + 1e-9);
        CHECK(differs);  // the float32 path ran: not the float64 bits
      }
    }
  }
}

TEST_CASE("float32 mlp: a picked batch gives the bits of its rows gathered by hand") {
  const auto spec = f32(dt::test::spec_of(ModelType::kMlp, 5, 3, {7}, Activation::kTanh,
                                          Task::kMulticlass));
  auto model = dt::models::make_model(spec);
  const auto params = dt::test::random_params(model->parameter_count(), 41, 0.5);
  const auto all = dt::test::random_batch(20, 5, Task::kMulticlass, 3, 42);
  const std::vector<std::uint64_t> pick{17, 3, 3, 0, 12, 19, 8};
  dt::test::Batch by_hand{dt::models::RowMatrix(7, 5), Eigen::VectorXd(7)};
  for (std::size_t i = 0; i < pick.size(); ++i) {
    by_hand.x.row(static_cast<Eigen::Index>(i)) = all.x.row(static_cast<Eigen::Index>(pick[i]));
    by_hand.y(static_cast<Eigen::Index>(i)) = all.y(static_cast<Eigen::Index>(pick[i]));
  }
  std::vector<double> picked(params.size(), 0.0);
  std::vector<double> gathered(params.size(), 0.0);
  const dt::models::BatchRows rows{all.x, all.y, pick};
  const auto a = model->batch_loss_and_gradient(params, rows, picked);
  const auto b = gradient_of(spec, params, by_hand);
  CHECK(a.loss_sum == b.loss);
  CHECK(std::memcmp(picked.data(), b.grad.data(), picked.size() * sizeof(double)) == 0);
}

TEST_CASE("float32 mlp: evaluate and predict compute as training does") {
  const auto spec = f32(dt::test::spec_of(ModelType::kMlp, 4, 0, {6}, Activation::kSigmoid,
                                          Task::kBinary));
  auto model = dt::models::make_model(spec);
  const auto params = dt::test::random_params(model->parameter_count(), 51, 0.8);
  const auto batch = dt::test::random_batch(25, 4, Task::kBinary, 0, 52);
  std::vector<double> grad(params.size(), 0.0);
  const auto trained = model->loss_and_gradient(params, batch.x, batch.y, grad);
  const auto evaluated = model->evaluate(params, batch.x, batch.y);
  CHECK(trained.loss_sum == evaluated.loss_sum);
  CHECK(trained.correct == evaluated.correct);
  // The float64 model's loss differs in the last bits only.
  auto f64 = dt::models::make_model(dt::test::spec_of(ModelType::kMlp, 4, 0, {6},
                                                      Activation::kSigmoid, Task::kBinary));
  const double loss64 = f64->evaluate(params, batch.x, batch.y).loss_sum;
  CHECK(evaluated.loss_sum != loss64);
  CHECK(evaluated.loss_sum == doctest::Approx(loss64).epsilon(1e-5));
  dt::models::RowMatrix p32;
  dt::models::RowMatrix p64;
  model->predict(params, batch.x, p32);
  f64->predict(params, batch.x, p64);
  CHECK((p32 - p64).cwiseAbs().maxCoeff() < 1e-5);
}

TEST_CASE("float32: refused for the other model types and for tensor slices") {
  const auto softmax = f32(dt::test::spec_of(ModelType::kSoftmaxRegression, 4, 3));
  CHECK(dt::test::message_of<dt::TrainingError>([&] {
          (void)dt::models::make_model(softmax);
        }) == "softmax_regression: dtype float32 is available for mlp only");
  const auto mlp = f32(dt::test::spec_of(ModelType::kMlp, 4, 0, {4}));
  CHECK(dt::test::message_of<dt::TrainingError>([&] {
          (void)dt::models::make_tensor_slice(mlp, 2, 0);
        }) == "tensor-parallel slices compute in float64 only; use dtype float64");
}

TEST_CASE("config: model.dtype is float64 by default, float32 for mlp only, not with tensor") {
  using dt::test::message_of;
  const std::string head = "version: 1\ndata: {path: a.csv}\n";
  CHECK(dt::test::parse_text(head + "model: {type: mlp}\n").model.dtype == Dtype::kFloat64);
  CHECK(dt::test::parse_text(head + "model: {type: mlp, dtype: float32}\n").model.dtype ==
        Dtype::kFloat32);
  CHECK(dt::test::parse_text(head + "model: {dtype: float64}\n").model.dtype == Dtype::kFloat64);
  const auto error = [&](const std::string& body) {
    return message_of<dt::ConfigError>([&] { (void)dt::test::parse_text(head + body); });
  };
  CHECK(error("model: {type: softmax_regression, dtype: float32}\n") ==
        "test.yaml:3:42: model.dtype: float32 applies to mlp only (its dense products), but "
        "model.type is softmax_regression, which computes in float64; remove it or set dtype: "
        "float64");
  CHECK(error("model: {type: mlp, dtype: float16}\n") ==
        "test.yaml:3:27: model.dtype: unknown value 'float16' (expected float64 or float32; did "
        "you mean 'float64'?)");
  CHECK(error("model: {type: mlp, dtype: float32}\nparallelism: {tensor: 2}\n") ==
        "test.yaml:3:27: model.dtype: float32 is not available with parallelism.tensor > 1 (the "
        "tensor-parallel slices compute in float64); use dtype: float64 or tensor: 1");
}

// Models: parameter layouts, deterministic init (He / Xavier), and the errors make_model and the
// batch checks raise, with their messages pinned.

#include "core/models/model.hpp"
#include "base/error.hpp"
#include "base/random.hpp"
#include "tests/unit/harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

using dt::config::Activation;
using dt::config::ModelType;
using dt::config::Task;
using dt::models::RowMatrix;
using dt::test::spec_of;

}  // namespace

TEST_CASE("models: layouts name, shape and place every block") {
  using Shape = std::vector<std::int64_t>;
  SUBCASE("linear and logistic: weights [P], scalar bias") {
    for (const auto type : {ModelType::kLinearRegression, ModelType::kLogisticRegression}) {
      auto model = dt::models::make_model(spec_of(type, 3));
      const auto& l = model->layout();
      REQUIRE(l.size() == 2);
      CHECK(l[0].name == "weights");
      CHECK(l[0].shape == Shape{3});
      CHECK(l[0].offset == 0);
      CHECK(l[0].size == 3);
      CHECK(l[0].regularized);
      CHECK(l[1].name == "bias");
      CHECK(l[1].shape == Shape{});
      CHECK(l[1].offset == 3);
      CHECK(l[1].size == 1);
      CHECK_FALSE(l[1].regularized);
      CHECK(model->parameter_count() == 4);
      CHECK(model->outputs() == 1);
    }
  }
  SUBCASE("softmax: weights [P, K], bias [K]") {
    auto model = dt::models::make_model(spec_of(ModelType::kSoftmaxRegression, 3, 4));
    const auto& l = model->layout();
    REQUIRE(l.size() == 2);
    CHECK(l[0].name == "weights");
    CHECK(l[0].shape == Shape{3, 4});
    CHECK(l[0].size == 12);
    CHECK(l[1].name == "bias");
    CHECK(l[1].shape == Shape{4});
    CHECK(l[1].offset == 12);
    CHECK(l[1].size == 4);
    CHECK(model->parameter_count() == 16);
    CHECK(model->outputs() == 4);
    CHECK(model->task() == Task::kMulticlass);
  }
  SUBCASE("mlp: layers.i.weight [in, out], layers.i.bias [out]") {
    auto model = dt::models::make_model(
        spec_of(ModelType::kMlp, 3, 3, {4, 2}, Activation::kRelu, Task::kMulticlass));
    const auto& l = model->layout();
    REQUIRE(l.size() == 6);
    const std::vector<std::string> names{"layers.0.weight", "layers.0.bias",   "layers.1.weight",
                                         "layers.1.bias",   "layers.2.weight", "layers.2.bias"};
    const std::vector<Shape> shapes{{3, 4}, {4}, {4, 2}, {2}, {2, 3}, {3}};
    const std::vector<std::size_t> offsets{0, 12, 16, 24, 26, 32};
    for (std::size_t i = 0; i < l.size(); ++i) {
      CAPTURE(i);
      CHECK(l[i].name == names[i]);
      CHECK(l[i].shape == shapes[i]);
      CHECK(l[i].offset == offsets[i]);
      CHECK(l[i].regularized == (i % 2 == 0));
    }
    CHECK(model->parameter_count() == 35);
    CHECK(model->outputs() == 3);

    auto regression = dt::models::make_model(spec_of(ModelType::kMlp, 3, 0, {5}));
    REQUIRE(regression->layout().size() == 4);
    CHECK(regression->layout()[3].shape == Shape{1});
    CHECK(regression->parameter_count() == 3 * 5 + 5 + 5 + 1);
  }
}

TEST_CASE("models: init is deterministic and follows He / Xavier") {
  SUBCASE("convex models start at zero") {
    auto model = dt::models::make_model(spec_of(ModelType::kSoftmaxRegression, 3, 3));
    std::vector<double> p(model->parameter_count(), 7.0);
    model->init(p, 42);
    CHECK(std::all_of(p.begin(), p.end(), [](double v) { return v == 0.0; }));
  }
  SUBCASE("same seed same bits, other seed other values") {
    auto model = dt::models::make_model(
        spec_of(ModelType::kMlp, 6, 3, {5, 4}, Activation::kTanh, Task::kMulticlass));
    std::vector<double> a(model->parameter_count()), b(a.size()), c(a.size());
    model->init(a, 7);
    model->init(b, 7);
    model->init(c, 8);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
    CHECK(a != c);
  }
  SUBCASE("weight k is the k-th draw of the init stream, scaled") {
    auto model = dt::models::make_model(spec_of(ModelType::kMlp, 6, 0, {5}, Activation::kRelu));
    std::vector<double> p(model->parameter_count());
    model->init(p, 3);
    const auto& l = model->layout();
    const double he = std::sqrt(2.0 / 6.0);
    const double xavier = std::sqrt(2.0 / (5.0 + 1.0));
    for (std::size_t k = 0; k < l[0].size; ++k) {
      CHECK(p[k] == he * dt::random::normal(3, dt::random::stream::kInit, k));
    }
    for (std::size_t k = l[2].offset; k < l[2].offset + l[2].size; ++k) {
      CHECK(p[k] == xavier * dt::random::normal(3, dt::random::stream::kInit, k));
    }
    for (const std::size_t b : {std::size_t{1}, std::size_t{3}}) {
      for (std::size_t k = l[b].offset; k < l[b].offset + l[b].size; ++k) CHECK(p[k] == 0.0);
    }
  }
  SUBCASE("the variance of a large layer is He's 2/fan_in, or Xavier's 2/(fan_in+fan_out)") {
    for (const auto activation : {Activation::kRelu, Activation::kSigmoid}) {
      auto model = dt::models::make_model(spec_of(ModelType::kMlp, 400, 0, {500}, activation));
      std::vector<double> p(model->parameter_count());
      model->init(p, 99);
      const auto& w = model->layout()[0];
      const Eigen::Map<const Eigen::VectorXd> v(p.data(), static_cast<Eigen::Index>(w.size));
      const double mean = v.mean();
      const double variance = (v.array() - mean).square().mean();
      const double expected = activation == Activation::kRelu ? 2.0 / 400.0 : 2.0 / (400.0 + 500.0);
      CHECK(std::abs(mean) < 0.01 * std::sqrt(expected));
      CHECK(variance == doctest::Approx(expected).epsilon(0.02));
    }
  }
}

TEST_CASE("models: make_model and the batch checks reject what does not fit") {
  CHECK_THROWS_WITH_AS((void)dt::models::make_model(spec_of(ModelType::kLinearRegression, 0)),
                       "linear_regression needs at least 1 input feature, got 0",
                       dt::TrainingError);
  CHECK_THROWS_WITH_AS(
      (void)dt::models::make_model(spec_of(ModelType::kSoftmaxRegression, 3, 1)),
      "softmax_regression is a multiclass model and needs at least 2 classes, got 1; for two "
      "classes logistic_regression (or mlp with task: binary) fits the same problem",
      dt::TrainingError);
  CHECK_THROWS_WITH_AS(
      (void)dt::models::make_model(
          spec_of(ModelType::kMlp, 3, 0, {0}, Activation::kRelu, Task::kMulticlass)),
      "mlp is a multiclass model and needs at least 2 classes, got 0; for two classes "
      "logistic_regression (or mlp with task: binary) fits the same problem",
      dt::TrainingError);
  CHECK_THROWS_WITH_AS((void)dt::models::make_model(spec_of(ModelType::kMlp, 3, 0, {4, 0})),
                       "mlp hidden layer 1 needs at least 1 unit, got 0", dt::TrainingError);
  CHECK_THROWS_WITH_AS(
      (void)dt::models::make_model(spec_of(ModelType::kLinearRegression, 2, 0, {}, {}, {}, -1.0)),
      "linear_regression: l2 must be a finite number >= 0, got -1", dt::TrainingError);
  // Hidden sizes are an mlp key only; the default [64] must not bother a linear model.
  CHECK_NOTHROW((void)dt::models::make_model(spec_of(ModelType::kLinearRegression, 2, 0, {0})));

  auto model = dt::models::make_model(spec_of(ModelType::kSoftmaxRegression, 2, 3));
  const std::vector<double> params(model->parameter_count(), 0.0);
  RowMatrix x = RowMatrix::Zero(2, 2);
  CHECK_THROWS_WITH_AS((void)model->evaluate(params, x, Eigen::Vector2d(0, 3)),
                       "row 1 of the batch: label 3 is not a class index in [0, 3)", dt::DataError);
  CHECK_THROWS_WITH_AS((void)model->evaluate(params, x, Eigen::Vector2d(0.5, 1)),
                       "row 0 of the batch: label 0.5 is not a class index in [0, 3)",
                       dt::DataError);
  CHECK_THROWS_WITH_AS((void)model->evaluate(params, x, Eigen::Vector3d(0, 1, 2)),
                       "the batch has 2 rows but 3 labels", dt::TrainingError);
  CHECK_THROWS_WITH_AS((void)model->evaluate(params, RowMatrix::Zero(2, 3), Eigen::Vector2d(0, 1)),
                       "the batch has 3 feature columns but the model expects 2",
                       dt::TrainingError);
  const std::vector<double> short_params(5, 0.0);
  CHECK_THROWS_WITH_AS((void)model->evaluate(short_params, x, Eigen::Vector2d(0, 1)),
                       "the parameter vector has 5 values but the model has 9 parameters",
                       dt::TrainingError);
  std::vector<double> short_grad(4, 0.0);
  CHECK_THROWS_WITH_AS((void)model->loss_and_gradient(params, x, Eigen::Vector2d(0, 1), short_grad),
                       "the gradient has 4 values but the model has 9 parameters",
                       dt::TrainingError);
}

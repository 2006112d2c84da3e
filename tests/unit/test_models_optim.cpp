// Optimizers: steps against hand-computed values, exact state round trips, size errors.

#include "core/models/optim.hpp"
#include "base/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace {

using dt::config::OptimizerConfig;
using dt::config::OptimizerType;
using dt::models::OptimizerState;

OptimizerConfig sgd(double lr, double momentum) {
  OptimizerConfig c;
  c.type = OptimizerType::kSgd;
  c.lr = lr;
  c.momentum = momentum;
  return c;
}

OptimizerConfig adam(double lr) {
  OptimizerConfig c;
  c.type = OptimizerType::kAdam;
  c.lr = lr;
  c.beta1 = 0.9;
  c.beta2 = 0.999;
  c.epsilon = 1e-8;
  return c;
}

}  // namespace

TEST_CASE("optim: plain sgd is p -= lr g and keeps no slots") {
  auto opt = dt::models::make_optimizer(sgd(0.1, 0.0), 2);
  std::vector<double> p{1.0, -2.0};
  const std::vector<double> g{0.5, 1.0};
  opt->step(p, g);
  CHECK(p[0] == doctest::Approx(0.95));
  CHECK(p[1] == doctest::Approx(-2.1));
  CHECK(opt->state().steps == 1);
  CHECK(opt->state().slots.empty());
}

TEST_CASE("optim: sgd with momentum over two steps (v = m v + g; p -= lr v)") {
  auto opt = dt::models::make_optimizer(sgd(0.1, 0.9), 2);
  std::vector<double> p{1.0, 2.0};
  opt->step(p, std::vector<double>{1.0, -1.0});
  // v = [1, -1]
  CHECK(p[0] == doctest::Approx(0.9));
  CHECK(p[1] == doctest::Approx(2.1));
  opt->step(p, std::vector<double>{0.5, 2.0});
  // v = 0.9 [1, -1] + [0.5, 2] = [1.4, 1.1]
  CHECK(p[0] == doctest::Approx(0.9 - 0.14));
  CHECK(p[1] == doctest::Approx(2.1 - 0.11));
  REQUIRE(opt->state().slots.size() == 1);
  CHECK(opt->state().slots[0][0] == doctest::Approx(1.4));
  CHECK(opt->state().slots[0][1] == doctest::Approx(1.1));
  CHECK(opt->state().steps == 2);
}

TEST_CASE("optim: adam over two steps with bias correction") {
  const double lr = 0.1;
  const double eps = 1e-8;
  auto opt = dt::models::make_optimizer(adam(lr), 2);
  std::vector<double> p{1.0, 2.0};
  // Step 1, g = [1, -2]: m = 0.1 g, v = 0.001 g^2, so mhat = g and vhat = g^2.
  opt->step(p, std::vector<double>{1.0, -2.0});
  const double p0 = 1.0 - lr * 1.0 / (1.0 + eps);
  const double p1 = 2.0 - lr * -2.0 / (2.0 + eps);
  CHECK(p[0] == doctest::Approx(p0).epsilon(1e-13));
  CHECK(p[1] == doctest::Approx(p1).epsilon(1e-13));
  // Step 2, g = [0.5, 0.5]
  opt->step(p, std::vector<double>{0.5, 0.5});
  const double m0 = 0.9 * 0.1 + 0.1 * 0.5;         // 0.14
  const double m1 = 0.9 * -0.2 + 0.1 * 0.5;        // -0.13
  const double v0 = 0.999 * 0.001 + 0.001 * 0.25;  // 0.001249
  const double v1 = 0.999 * 0.004 + 0.001 * 0.25;  // 0.004246
  const double c1 = 1.0 - 0.9 * 0.9;
  const double c2 = 1.0 - 0.999 * 0.999;
  CHECK(p[0] == doctest::Approx(p0 - lr * (m0 / c1) / (std::sqrt(v0 / c2) + eps)).epsilon(1e-13));
  CHECK(p[1] == doctest::Approx(p1 - lr * (m1 / c1) / (std::sqrt(v1 / c2) + eps)).epsilon(1e-13));
  const OptimizerState& s = opt->state();
  CHECK(s.steps == 2);
  REQUIRE(s.slots.size() == 2);
  CHECK(s.slots[0][0] == doctest::Approx(m0));
  CHECK(s.slots[1][1] == doctest::Approx(v1));
}

TEST_CASE("optim: step_scaled gives the bits of scaling the gradient first, and leaves it") {
  // A gradient SUM over 3 rows: each optimizer's one-pass step on sum * (1/3) against the
  // two passes it replaces, over three steps (so the state's slots take part).
  const std::vector<double> start = {0.5, -1.25, 3.0, 1e-3, -7.0};
  const std::vector<double> sum = {0.1, -2.0, 1e16, 3.3, -0.7};
  const double scale = 1.0 / 3.0;
  for (const auto& config : {sgd(0.1, 0.0), sgd(0.05, 0.9), adam(0.01)}) {
    auto fused = dt::models::make_optimizer(config, start.size());
    auto plain = dt::models::make_optimizer(config, start.size());
    std::vector<double> a = start, b = start, next(start.size());
    for (int step = 0; step < 3; ++step) {
      const std::vector<double> grad_sum = sum;
      fused->step_scaled(a, grad_sum, scale, next);
      CHECK(grad_sum == sum);  // left as it was
      a.swap(next);
      std::vector<double> mean = sum;
      for (double& g : mean) g *= scale;
      plain->step(b, mean);
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("parameter ", i);
      CHECK(std::memcmp(&a[i], &b[i], sizeof(double)) == 0);
    }
    CHECK(a != start);
    CHECK(fused->state().slots == plain->state().slots);
  }
}

TEST_CASE("optim: step_scaled_parts gives the bits of adding the parts first, in order") {
  // The star's coordinator hands the workers' gradient sums to the step as parts: sgd adds one
  // or two inside its pass, the rest (and every other optimizer) add them into scratch first.
  // The bits must be those of sum_parts + step_scaled: (0.0 + a) + b in that order, which -0.0
  // (0.0 + -0.0 is +0.0) and values whose sum rounds differently by order would show; parameters
  // that start at 0 show the update's every bit (and so the order of lr, scale and the sum).
  const std::vector<double> start = {0.0, 0.0, 3.0, 1e-3, -7.0, 0.0};
  const std::vector<std::vector<double>> sums = {{0.1, -2.0, 1e16, 3.3, -0.7, -0.0},
                                                 {0.2, 1.0, 1.0, -3.3, 0.7, -0.0},
                                                 {-0.3, 0.5, -1e16, 1e-17, 0.1, -0.0}};
  const double scale = 1.0 / 7.0;
  for (std::size_t count = 1; count <= sums.size(); ++count) {
    for (const auto& config : {sgd(0.1, 0.0), sgd(0.05, 0.9), adam(0.01)}) {
      INFO("parts ", count, ", momentum ", config.momentum, ", type ", static_cast<int>(config.type));
      auto fused = dt::models::make_optimizer(config, start.size());
      auto plain = dt::models::make_optimizer(config, start.size());
      std::vector<const double*> parts;
      for (std::size_t k = 0; k < count; ++k) parts.push_back(sums[k].data());
      std::vector<double> a = start, b = start, scratch, sum(start.size());
      for (int step = 0; step < 3; ++step) {
        fused->step_scaled_parts(a, parts, scale, a, scratch);
        sum.assign(start.size(), 0.0);
        for (std::size_t k = 0; k < count; ++k) {
          for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += sums[k][i];
        }
        plain->step_scaled(b, sum, scale, b);
      }
      for (std::size_t i = 0; i < a.size(); ++i) {
        INFO("parameter ", i);
        CHECK(std::memcmp(&a[i], &b[i], sizeof(double)) == 0);
      }
      CHECK(a != start);
      CHECK(fused->state().slots == plain->state().slots);
      CHECK(fused->state().steps == 3);
    }
  }
}

TEST_CASE("optim: state round trips exactly") {
  for (const auto& config : {sgd(0.05, 0.0), sgd(0.05, 0.8), adam(0.01)}) {
    auto a = dt::models::make_optimizer(config, 3);
    std::vector<double> pa{0.1, -0.2, 0.3};
    for (int i = 0; i < 3; ++i) {
      a->step(pa, std::vector<double>{0.3 * i, -0.1, 1.0 / (i + 1)});
    }
    auto b = dt::models::make_optimizer(config, 3);
    b->set_state(a->state());
    std::vector<double> pb = pa;
    const std::vector<double> g{0.7, -0.4, 0.05};
    a->step(pa, g);
    b->step(pb, g);
    CHECK(pa == pb);  // bit for bit
    CHECK(a->state().steps == 4);
    CHECK(b->state().steps == 4);
    CHECK(a->state().slots == b->state().slots);
  }
}

TEST_CASE("optim: set_state and step reject sizes that do not fit") {
  auto momentum = dt::models::make_optimizer(sgd(0.1, 0.9), 3);
  CHECK_THROWS_WITH_AS(momentum->set_state(OptimizerState{1, {}}),
                       "sgd (momentum) optimizer state must have 1 slot(s), got 0",
                       dt::TrainingError);
  CHECK_THROWS_WITH_AS(momentum->set_state(OptimizerState{1, {{1.0, 2.0}}}),
                       "sgd (momentum) optimizer state slot 0 has 2 values, the model has 3 "
                       "parameters",
                       dt::TrainingError);
  auto plain = dt::models::make_optimizer(sgd(0.1, 0.0), 3);
  CHECK_THROWS_WITH_AS(plain->set_state(OptimizerState{1, {{1.0, 2.0, 3.0}}}),
                       "sgd optimizer state must have 0 slot(s), got 1", dt::TrainingError);
  auto a = dt::models::make_optimizer(adam(0.1), 3);
  CHECK_THROWS_WITH_AS(a->set_state(OptimizerState{2, {{0, 0, 0}, {0, 0, 0, 0}}}),
                       "adam optimizer state slot 1 has 4 values, the model has 3 parameters",
                       dt::TrainingError);
  // A rejected state leaves the old one in place.
  CHECK(a->state().steps == 0);
  CHECK(a->state().slots[1].size() == 3);

  std::vector<double> p(2, 0.0);
  CHECK_THROWS_WITH_AS(a->step(p, std::vector<double>(3, 0.0)),
                       "optimizer step: the optimizer was built for 3 parameters but got 2 "
                       "parameters and a gradient of 3",
                       dt::TrainingError);
}

TEST_CASE("optim: make_optimizer rejects hyper-parameters that cannot work") {
  CHECK_THROWS_WITH_AS((void)dt::models::make_optimizer(sgd(0.0, 0.0), 1),
                       "optimizer lr must be a finite number > 0, got 0", dt::TrainingError);
  CHECK_THROWS_WITH_AS((void)dt::models::make_optimizer(sgd(0.1, 1.0), 1),
                       "sgd momentum must be in [0, 1), got 1", dt::TrainingError);
  auto bad = adam(0.1);
  bad.beta2 = 1.0;
  CHECK_THROWS_WITH_AS((void)dt::models::make_optimizer(bad, 1),
                       "adam beta2 must be in [0, 1), got 1", dt::TrainingError);
}

// Learning-rate schedules, clip_norm, AdamW and RMSprop: the rates at chosen steps in closed
// form, steps against hand-computed values, lazy forms and exact state round trips.

#include "core/models/optim.hpp"
#include "core/models/optim_controls.hpp"
#include "base/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

namespace {

using dt::config::LrScheduleType;
using dt::config::OptimizerConfig;
using dt::config::OptimizerType;
using dt::models::make_optimizer;
using dt::models::scheduled_lr;

OptimizerConfig scheduled(LrScheduleType type, double lr) {
  OptimizerConfig c;
  c.type = OptimizerType::kSgd;
  c.lr = lr;
  c.schedule.type = type;
  return c;
}

OptimizerConfig rule(OptimizerType type, double lr) {
  OptimizerConfig c;
  c.type = type;
  c.lr = lr;
  return c;
}

}  // namespace

TEST_CASE("lr schedule: step multiplies by gamma every step_size steps, counted from 0") {
  auto c = scheduled(LrScheduleType::kStep, 0.1);
  c.schedule.step_size = 3;
  c.schedule.gamma = 0.5;
  CHECK(scheduled_lr(c, 0, 0) == 0.1);
  CHECK(scheduled_lr(c, 2, 0) == 0.1);
  CHECK(scheduled_lr(c, 3, 0) == 0.05);   // 0.1 / 2, exact
  CHECK(scheduled_lr(c, 7, 0) == 0.025);  // 0.1 / 4, exact
}

TEST_CASE("lr schedule: exponential is lr * gamma^t") {
  auto c = scheduled(LrScheduleType::kExponential, 2.0);
  c.schedule.gamma = 0.5;
  CHECK(scheduled_lr(c, 0, 0) == 2.0);
  CHECK(scheduled_lr(c, 1, 0) == 1.0);
  CHECK(scheduled_lr(c, 4, 0) == 0.125);
}

TEST_CASE("lr schedule: cosine from lr to min_lr over the run or t_max, then flat") {
  auto c = scheduled(LrScheduleType::kCosine, 1.0);
  CHECK(scheduled_lr(c, 0, 10) == 1.0);
  CHECK(scheduled_lr(c, 5, 10) == doctest::Approx(0.5).epsilon(1e-15));
  CHECK(scheduled_lr(c, 10, 10) == 0.0);
  CHECK(scheduled_lr(c, 15, 10) == 0.0);
  c.schedule.min_lr = 0.2;
  CHECK(scheduled_lr(c, 5, 10) == doctest::Approx(0.6).epsilon(1e-15));
  // t = 2 of 8: (1 + cos(pi / 4)) / 2 of the way from 0.2 to 1.
  CHECK(scheduled_lr(c, 2, 8) ==
        doctest::Approx(0.2 + 0.8 * (1 + std::sqrt(0.5)) / 2).epsilon(1e-15));
  c.schedule.t_max = 4;  // t_max wins over the run's steps
  CHECK(scheduled_lr(c, 2, 1000) == doctest::Approx(0.6).epsilon(1e-15));
  CHECK(scheduled_lr(c, 4, 1000) == doctest::Approx(0.2).epsilon(1e-15));
  c.schedule.t_max = 0;
  CHECK_THROWS_AS((void)scheduled_lr(c, 3, 0), dt::TrainingError);  // the span is unknown
}

TEST_CASE("lr schedule: linear warmup from warmup_start * lr, the schedule counts after it") {
  auto c = scheduled(LrScheduleType::kCosine, 1.0);
  c.schedule.warmup_steps = 4;
  c.schedule.warmup_start = 0.2;
  CHECK(scheduled_lr(c, 0, 14) == 0.2);
  CHECK(scheduled_lr(c, 2, 14) == doctest::Approx(0.6).epsilon(1e-15));
  CHECK(scheduled_lr(c, 4, 14) == 1.0);  // the cosine's start
  CHECK(scheduled_lr(c, 9, 14) == doctest::Approx(0.5).epsilon(1e-15));  // 5 of its 10
  CHECK(scheduled_lr(c, 14, 14) == doctest::Approx(0.0).epsilon(1e-15));
  auto constant = scheduled(LrScheduleType::kConstant, 0.5);
  constant.schedule.warmup_steps = 2;
  CHECK(scheduled_lr(constant, 0, 0) == 0.0);  // warmup_start 0: the first step does not move
  CHECK(scheduled_lr(constant, 1, 0) == 0.25);
  CHECK(scheduled_lr(constant, 2, 0) == 0.5);
  CHECK(dt::models::has_lr_schedule(constant));
  CHECK_FALSE(dt::models::has_lr_schedule(rule(OptimizerType::kSgd, 0.5)));
}

TEST_CASE("lr schedule: each step uses the rate of the optimizer's step count") {
  auto c = scheduled(LrScheduleType::kStep, 1.0);
  c.schedule.step_size = 1;
  c.schedule.gamma = 0.5;
  auto opt = make_optimizer(c, 1);
  std::vector<double> p{0.0};
  const std::vector<double> g{1.0};
  opt->step(p, g);  // lr 1
  CHECK(p[0] == -1.0);
  opt->step(p, g);  // lr 0.5
  CHECK(p[0] == -1.5);
  opt->step(p, g);  // lr 0.25
  CHECK(p[0] == -1.75);
  CHECK(opt->state().steps == 3);
  // A parameters-mode worker: the count is its local step, and goes on from there.
  auto local = make_optimizer(c, 1);
  std::vector<double> q{0.0};
  local->set_schedule_step(2, 0);
  local->step(q, g);  // lr 0.25
  local->step(q, g);  // lr 0.125
  CHECK(q[0] == -0.375);
}

TEST_CASE("lr schedule: a restored state continues with the rates of a run that never stopped") {
  for (const auto type : {OptimizerType::kSgd, OptimizerType::kAdam, OptimizerType::kAdamw,
                          OptimizerType::kRmsprop, OptimizerType::kAdagrad}) {
    CAPTURE(static_cast<int>(type));
    auto c = rule(type, 0.1);
    c.schedule.type = LrScheduleType::kCosine;
    c.schedule.warmup_steps = 2;
    c.clip_norm = 0.5;
    const std::vector<std::vector<double>> grads{{0.5, -1.0}, {2.0, 0.25}, {-0.3, 0.7},
                                                 {1.5, -2.0}, {0.1, 0.1},  {-1.0, 3.0}};
    auto straight = make_optimizer(c, 2, 6);
    std::vector<double> a{0.3, -0.2};
    for (const auto& g : grads) straight->step(a, g);
    auto first = make_optimizer(c, 2, 6);
    std::vector<double> b{0.3, -0.2};
    for (std::size_t i = 0; i < 3; ++i) first->step(b, grads[i]);
    auto second = make_optimizer(c, 2, 6);  // a resumed run: fresh, then the checkpoint's state
    second->set_state(first->state());
    for (std::size_t i = 3; i < 6; ++i) second->step(b, grads[i]);
    CHECK(a == b);
  }
}

TEST_CASE("clip_norm: the gradient is scaled to the norm, as clip_grad_norm_; below it, untouched") {
  auto c = rule(OptimizerType::kSgd, 1.0);
  c.clip_norm = 1.0;
  auto clipped = make_optimizer(c, 2);
  std::vector<double> p{0.0, 0.0};
  // The gradient sum (6, 8) over 2 rows: the mean (3, 4), norm 5.
  clipped->step_scaled(p, std::vector<double>{6.0, 8.0}, 0.5, p);
  const double coef = 1.0 / (5.0 + 1e-6);
  CHECK(p[0] == doctest::Approx(-3.0 * coef).epsilon(1e-15));
  CHECK(p[1] == doctest::Approx(-4.0 * coef).epsilon(1e-15));
  CHECK(std::hypot(p[0], p[1]) < 1.0);
  // Under the norm the step is the bare rule's, bit for bit.
  c.clip_norm = 10.0;
  auto loose = make_optimizer(c, 2);
  auto bare = make_optimizer(rule(OptimizerType::kSgd, 1.0), 2);
  std::vector<double> x{0.1, 0.2};
  std::vector<double> y{0.1, 0.2};
  loose->step_scaled(x, std::vector<double>{0.3, 0.7}, 0.5, x);
  bare->step_scaled(y, std::vector<double>{0.3, 0.7}, 0.5, y);
  CHECK(x == y);
  CHECK(dt::models::clip_factor(std::vector<double>{3.0, 4.0}, 1.0, 0.0) == 1.0);
}

TEST_CASE("clip_norm: a sparse step's norm is over the touched keys") {
  auto c = rule(OptimizerType::kSgd, 1.0);
  c.clip_norm = 1.0;
  auto opt = make_optimizer(c, 4);
  std::vector<double> p(4, 0.0);
  opt->step_indices(std::vector<std::uint64_t>{1, 3}, std::vector<double>{3.0, 4.0}, 1.0, p);
  CHECK(p[0] == 0.0);
  CHECK(p[2] == 0.0);
  CHECK(p[1] == doctest::Approx(-3.0 / (5.0 + 1e-6)).epsilon(1e-15));
  CHECK(p[3] == doctest::Approx(-4.0 / (5.0 + 1e-6)).epsilon(1e-15));
}

TEST_CASE("optim: adamw over two steps is PyTorch's decoupled decay and bias-corrected step") {
  auto c = rule(OptimizerType::kAdamw, 0.1);
  c.weight_decay = 0.5;
  auto opt = make_optimizer(c, 1);
  std::vector<double> p{1.0};
  opt->step(p, std::vector<double>{0.2});
  // Step 1: p = 1 * (1 - 0.05) = 0.95; m = 0.02, v = 0.001 * 0.04; m_hat = 0.2, v_hat = 0.04:
  // p -= 0.1 * 0.2 / (0.2 + 1e-8).
  const double p1 = 0.95 - 0.1 * 0.2 / (0.2 + 1e-8);
  CHECK(p[0] == doctest::Approx(p1).epsilon(1e-14));
  opt->step(p, std::vector<double>{-0.4});
  const double m = 0.9 * 0.02 + 0.1 * -0.4;
  const double v = 0.999 * 0.00004 + 0.001 * 0.16;
  const double p2 = p1 * 0.95 - (0.1 / (1 - 0.81)) * m / (std::sqrt(v / (1 - 0.998001)) + 1e-8);
  CHECK(p[0] == doctest::Approx(p2).epsilon(1e-14));
  CHECK(opt->state().slots.size() == 2);
}

TEST_CASE("optim: rmsprop plain, with momentum and centered, over two steps") {
  const std::vector<double> g{0.5, -2.0};
  SUBCASE("plain: s = a s + (1 - a) g^2; p -= lr g / (sqrt(s) + eps)") {
    auto opt = make_optimizer(rule(OptimizerType::kRmsprop, 0.01), 1);
    std::vector<double> p{0.0};
    opt->step(p, std::vector<double>{g[0]});
    const double s1 = 0.01 * 0.25;
    const double p1 = -0.01 * 0.5 / (std::sqrt(s1) + 1e-8);
    CHECK(p[0] == doctest::Approx(p1).epsilon(1e-14));
    opt->step(p, std::vector<double>{g[1]});
    const double s2 = 0.99 * s1 + 0.01 * 4.0;
    CHECK(p[0] == doctest::Approx(p1 + 0.01 * 2.0 / (std::sqrt(s2) + 1e-8)).epsilon(1e-14));
    CHECK(opt->state().slots.size() == 1);
  }
  SUBCASE("momentum and centered: b = m b + g / (sqrt(s - avg^2) + eps); p -= lr b") {
    auto c = rule(OptimizerType::kRmsprop, 0.01);
    c.momentum = 0.9;
    c.centered = true;
    c.rms_alpha = 0.5;
    auto opt = make_optimizer(c, 1);
    std::vector<double> p{0.0};
    opt->step(p, std::vector<double>{g[0]});
    const double s1 = 0.5 * 0.25, a1 = 0.5 * 0.5;
    const double b1 = 0.5 / (std::sqrt(s1 - a1 * a1) + 1e-8);
    CHECK(p[0] == doctest::Approx(-0.01 * b1).epsilon(1e-14));
    opt->step(p, std::vector<double>{g[1]});
    const double s2 = 0.5 * s1 + 0.5 * 4.0, a2 = 0.5 * a1 + 0.5 * -2.0;
    const double b2 = 0.9 * b1 + -2.0 / (std::sqrt(s2 - a2 * a2) + 1e-8);
    CHECK(p[0] == doctest::Approx(-0.01 * b1 - 0.01 * b2).epsilon(1e-14));
    CHECK(opt->state().slots.size() == 3);
  }
}

TEST_CASE("optim: lazy adamw and rmsprop leave untouched keys; over every key, the dense step") {
  for (const bool centered : {false, true}) {
    for (const auto type : {OptimizerType::kAdamw, OptimizerType::kRmsprop}) {
      CAPTURE(static_cast<int>(type));
      auto c = rule(type, 0.05);
      c.momentum = type == OptimizerType::kRmsprop ? 0.5 : 0.0;
      c.centered = centered && type == OptimizerType::kRmsprop;
      auto dense = make_optimizer(c, 3);
      auto lazy = make_optimizer(c, 3);
      std::vector<double> a{0.1, -0.2, 0.3};
      std::vector<double> b = a;
      const std::vector<std::uint64_t> all{0, 1, 2};
      for (const double s : {1.0, 0.5}) {
        dense->step_scaled(a, std::vector<double>{0.4, -0.1, 0.9}, s, a);
        lazy->step_indices(all, std::vector<double>{0.4, -0.1, 0.9}, s, b);
      }
      CHECK(a == b);
      CHECK(dense->state().slots == lazy->state().slots);
      const std::vector<double> before = b;
      const auto slots = lazy->state().slots;
      lazy->step_indices(std::vector<std::uint64_t>{1}, std::vector<double>{0.7}, 1.0, b);
      CHECK(b[0] == before[0]);
      CHECK(b[2] == before[2]);
      CHECK(b[1] != before[1]);
      for (std::size_t k = 0; k < slots.size(); ++k) {
        CHECK(lazy->state().slots[k][0] == slots[k][0]);
        CHECK(lazy->state().slots[k][2] == slots[k][2]);
      }
    }
  }
}

TEST_CASE("optim: adamw and rmsprop refuse bad settings and states that do not fit") {
  auto c = rule(OptimizerType::kAdamw, 0.1);
  c.weight_decay = -1.0;
  CHECK_THROWS_AS((void)make_optimizer(c, 2), dt::TrainingError);
  auto r = rule(OptimizerType::kRmsprop, 0.1);
  r.rms_alpha = 1.0;
  CHECK_THROWS_AS((void)make_optimizer(r, 2), dt::TrainingError);
  r.rms_alpha = 0.99;
  r.momentum = 0.9;
  auto opt = make_optimizer(r, 2);
  dt::models::OptimizerState wrong;
  wrong.slots.assign(1, std::vector<double>(2, 0.0));  // momentum needs two slots
  CHECK_THROWS_AS(opt->set_state(wrong), dt::TrainingError);
}

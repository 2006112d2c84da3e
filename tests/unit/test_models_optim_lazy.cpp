// Adagrad and FTRL-Proximal against values worked by hand from their formulas (Duchi et al. /
// PyTorch; McMahan et al. 2013, algorithm 1), and the lazy step (step_indices) of every
// optimizer: the same bits as the dense step where the lazy form is exact, hand-computed
// references where it is not (sgd momentum, adam).

#include "core/models/optim.hpp"
#include "base/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using dt::config::OptimizerConfig;
using dt::config::OptimizerType;

OptimizerConfig adagrad_config(double lr, double initial) {
  OptimizerConfig c;
  c.type = OptimizerType::kAdagrad;
  c.lr = lr;
  c.epsilon = dt::config::kAdagradEpsilon;
  c.initial_accumulator_value = initial;
  return c;
}

OptimizerConfig ftrl_config(double alpha, double beta, double l1, double l2) {
  OptimizerConfig c;
  c.type = OptimizerType::kFtrl;
  c.lr = alpha;
  c.beta = beta;
  c.l1 = l1;
  c.l2 = l2;
  return c;
}

OptimizerConfig lazy_config(OptimizerType type, double lr, double momentum) {
  OptimizerConfig c;
  c.type = type;
  c.lr = lr;
  c.momentum = momentum;
  return c;
}

// The five optimizers the lazy tests run, with settings that make every term count.
std::vector<std::pair<std::string, OptimizerConfig>> every_optimizer() {
  return {{"sgd", lazy_config(OptimizerType::kSgd, 0.1, 0.0)},
          {"sgd momentum", lazy_config(OptimizerType::kSgd, 0.1, 0.9)},
          {"adam", lazy_config(OptimizerType::kAdam, 0.1, 0.0)},
          {"adagrad", adagrad_config(0.2, 0.1)},
          {"ftrl", ftrl_config(0.5, 1.0, 0.05, 0.1)}};
}

bool bits_equal(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

bool states_equal(const dt::models::OptimizerState& a, const dt::models::OptimizerState& b) {
  if (a.steps != b.steps || a.slots.size() != b.slots.size()) return false;
  for (std::size_t i = 0; i < a.slots.size(); ++i) {
    if (!bits_equal(a.slots[i], b.slots[i])) return false;
  }
  return true;
}

// Gradients of 8 coordinates over 4 steps, zeros in different places each step (a step that
// touches a coordinate for the first time after others moved, and one never touched: 7).
const std::vector<std::vector<double>> kSparseGrads = {
    {0.5, 0.0, -1.25, 0.0, 0.0, 2.0, 0.0, 0.0},
    {0.0, 0.75, 0.5, 0.0, -0.3, 0.0, 0.0, 0.0},
    {1.5, 0.0, 0.0, 0.0, 0.25, -0.6, 0.1, 0.0},
    {-0.2, 0.4, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0},
};

}  // namespace

TEST_CASE("optim: adagrad over two steps is PyTorch's sum += g^2; p -= lr g / (sqrt(sum) + eps)") {
  auto opt = dt::models::make_optimizer(adagrad_config(0.1, 0.1), 2);
  std::vector<double> p{1.0, 2.0};
  opt->step(p, std::vector<double>{1.0, -2.0});
  // sum = 0.1 + g^2 = [1.1, 4.1]; p = [1 - 0.1 / sqrt(1.1), 2 + 0.2 / sqrt(4.1)]
  CHECK(p[0] == doctest::Approx(0.9046537410845317).epsilon(1e-14));
  CHECK(p[1] == doctest::Approx(2.098772959660081).epsilon(1e-14));
  opt->step(p, std::vector<double>{0.5, 0.0});
  // sum = [1.35, 4.1]; p0 -= 0.1 * 0.5 / sqrt(1.35); p1 unchanged (zero gradient)
  CHECK(p[0] == doctest::Approx(0.8616205927970418).epsilon(1e-14));
  CHECK(p[1] == doctest::Approx(2.098772959660081).epsilon(1e-14));
  REQUIRE(opt->state().slots.size() == 1);
  CHECK(opt->state().slots[0][0] == doctest::Approx(1.35).epsilon(1e-15));
  CHECK(opt->state().slots[0][1] == doctest::Approx(4.1).epsilon(1e-15));
  CHECK(opt->state().steps == 2);
}

TEST_CASE("optim: ftrl-proximal follows the paper's z, n and closed-form w; L1 clamps to 0") {
  // alpha 0.5, beta 1, l1 0.3, l2 0.2, one coordinate from w = 0.
  auto opt = dt::models::make_optimizer(ftrl_config(0.5, 1.0, 0.3, 0.2), 1);
  std::vector<double> w{0.0};
  const auto& s = opt->state();
  // g = 1: sigma = (1 - 0) / 0.5 = 2, z = 1 - 2 * 0 = 1, n = 1;
  // |z| > l1: w = -(1 - 0.3) / ((1 + 1) / 0.5 + 0.2) = -0.7 / 4.2 = -1/6
  opt->step(w, std::vector<double>{1.0});
  CHECK(s.at(0, 0) == 1.0);
  CHECK(s.at(1, 0) == 1.0);
  CHECK(w[0] == doctest::Approx(-1.0 / 6.0).epsilon(1e-15));
  // g = -0.5: n = 1.25, sigma = (sqrt(1.25) - 1) / 0.5, z = 1 - 0.5 - sigma * (-1/6);
  // w = -(z - 0.3) / ((1 + sqrt(1.25)) / 0.5 + 0.2)
  opt->step(w, std::vector<double>{-0.5});
  CHECK(s.at(0, 0) == doctest::Approx(0.5393446629166316).epsilon(1e-14));
  CHECK(s.at(1, 0) == 1.25);
  CHECK(w[0] == doctest::Approx(-0.05395423697982387).epsilon(1e-14));
  // g = -0.5: n = 1.5, z = 0.0508596714173839: |z| <= l1, so w is exactly 0.
  opt->step(w, std::vector<double>{-0.5});
  CHECK(s.at(0, 0) == doctest::Approx(0.0508596714173839).epsilon(1e-12));
  CHECK(s.at(1, 0) == 1.5);
  CHECK(w[0] == 0.0);
  CHECK_FALSE(std::signbit(w[0]));
  CHECK(s.steps == 3);
}

TEST_CASE("optim: ftrl from a nonzero weight continues from it (z set at the first gradient)") {
  // alpha 0.5, beta 1, no L1/L2, w0 = 0.5: z = -w0 * beta / alpha = -1; g = 1: n = 1, sigma = 2,
  // z = -1 + 1 - 2 * 0.5 = -1, w = 1 / ((1 + 1) / 0.5) = 0.25 = w0 - g / ((beta + |g|) / alpha).
  auto opt = dt::models::make_optimizer(ftrl_config(0.5, 1.0, 0.0, 0.0), 2);
  std::vector<double> w{0.5, -0.75};
  opt->step(w, std::vector<double>{1.0, 0.0});
  CHECK(w[0] == 0.25);
  CHECK(w[1] == -0.75);  // zero gradient: not moved, even though its z and n are 0
  CHECK(opt->state().at(0, 0) == -1.0);
  CHECK(opt->state().at(0, 1) == 0.0);
  CHECK(opt->state().at(1, 1) == 0.0);
  // With beta = 0 and l2 = 0 the closed form at n = 0 is 0/0 (or 0 by l1): a zero gradient
  // must leave the weight alone rather than recompute it.
  auto no_beta = dt::models::make_optimizer(ftrl_config(0.5, 0.0, 0.1, 0.0), 1);
  std::vector<double> kept{0.5};
  no_beta->step(kept, std::vector<double>{0.0});
  CHECK(kept[0] == 0.5);
  no_beta->step(kept, std::vector<double>{1.0});  // z = -0.1 + 1 - 2 * 0.5 = -0.1: |z| <= l1
  CHECK(kept[0] == 0.0);
}

TEST_CASE("optim: the lazy step of sgd, adagrad and ftrl is the dense step on zeros, bit for bit") {
  for (const auto& entry : every_optimizer()) {
    const std::string& name = entry.first;
    const OptimizerConfig& config = entry.second;
    if (name == "sgd momentum" || name == "adam") continue;  // lazy forms differ: tests below
    CAPTURE(name);
    auto dense = dt::models::make_optimizer(config, 8);
    auto lazy = dt::models::make_optimizer(config, 8);
    std::vector<double> p_dense{0.3, -1.0, 0.0, 2.5, 0.125, -0.7, 1.0, 4.0};
    std::vector<double> p_lazy = p_dense;
    const double scale = 1.0 / 3.0;  // a batch of 3 rows: grad_sum / rows, not exact in binary
    for (const auto& g : kSparseGrads) {
      dense->step_scaled(p_dense, g, scale, p_dense);
      std::vector<std::uint64_t> keys;
      std::vector<double> values;
      for (std::size_t k = 0; k < g.size(); ++k) {
        if (g[k] != 0.0) {
          keys.push_back(k);
          values.push_back(g[k]);
        }
      }
      lazy->step_indices(keys, values, scale, p_lazy);
      CHECK(bits_equal(p_dense, p_lazy));
      CHECK(states_equal(dense->state(), lazy->state()));
    }
    CHECK(p_lazy[7] == 4.0);  // never touched
    CHECK(p_lazy[0] != 0.3);  // touched: the test moves something
  }
}

TEST_CASE("optim: the lazy step over every key is the dense step, bit for bit, for all five") {
  for (const auto& entry : every_optimizer()) {
    const std::string& name = entry.first;
    const OptimizerConfig& config = entry.second;
    CAPTURE(name);
    auto dense = dt::models::make_optimizer(config, 8);
    auto lazy = dt::models::make_optimizer(config, 8);
    std::vector<double> p_dense{0.3, -1.0, 0.0, 2.5, 0.125, -0.7, 1.0, 4.0};
    std::vector<double> p_lazy = p_dense;
    const std::vector<std::uint64_t> all{0, 1, 2, 3, 4, 5, 6, 7};
    for (std::size_t s = 0; s < kSparseGrads.size(); ++s) {
      std::vector<double> g = kSparseGrads[s];
      for (std::size_t k = 0; k < g.size(); ++k) g[k] += 0.01 * static_cast<double>(k + s);
      dense->step_scaled(p_dense, g, 0.25, p_dense);
      lazy->step_indices(all, g, 0.25, p_lazy);
      CHECK(bits_equal(p_dense, p_lazy));
      CHECK(states_equal(dense->state(), lazy->state()));
    }
  }
}

TEST_CASE("optim: lazy sgd momentum leaves an untouched key's velocity and weight alone") {
  auto opt = dt::models::make_optimizer(lazy_config(OptimizerType::kSgd, 0.1, 0.9), 3);
  std::vector<double> p{1.0, 2.0, 3.0};
  opt->step_indices(std::vector<std::uint64_t>{0, 2}, std::vector<double>{1.0, -1.0}, 1.0, p);
  // v = [1, 0, -1]; p = [0.9, 2, 3.1]
  opt->step_indices(std::vector<std::uint64_t>{1, 2}, std::vector<double>{2.0, 0.5}, 1.0, p);
  // v = [1 (not decayed), 2, 0.9 * -1 + 0.5 = -0.4]; p = [0.9, 1.8, 3.14]
  CHECK(p[0] == doctest::Approx(0.9).epsilon(1e-15));  // the dense step would give 0.81
  CHECK(p[1] == doctest::Approx(1.8).epsilon(1e-15));
  CHECK(p[2] == doctest::Approx(3.14).epsilon(1e-15));
  const auto& v = opt->state().slots[0];
  CHECK(v[0] == 1.0);
  CHECK(v[1] == 2.0);
  CHECK(v[2] == doctest::Approx(-0.4).epsilon(1e-15));
  CHECK(opt->state().steps == 2);
}

TEST_CASE("optim: lazy adam: untouched moments stay, bias correction counts every step") {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  OptimizerConfig c = lazy_config(OptimizerType::kAdam, lr, 0.0);
  auto opt = dt::models::make_optimizer(c, 3);
  std::vector<double> p{1.0, 2.0, 3.0};
  // Step 1 touches 0 and 2 with g = [1, -1]: mhat = g, vhat = g^2.
  opt->step_indices(std::vector<std::uint64_t>{0, 2}, std::vector<double>{1.0, -1.0}, 1.0, p);
  const double p0 = 1.0 - lr * 1.0 / (1.0 + eps);
  double p2 = 3.0 + lr * 1.0 / (1.0 + eps);
  CHECK(p[0] == doctest::Approx(p0).epsilon(1e-14));
  CHECK(p[1] == 2.0);
  CHECK(p[2] == doctest::Approx(p2).epsilon(1e-14));
  // Step 2 (t = 2 for every key) touches 1 (its first update) and 2 with g = [2, 0.5].
  opt->step_indices(std::vector<std::uint64_t>{1, 2}, std::vector<double>{2.0, 0.5}, 1.0, p);
  const double c1 = 1.0 - b1 * b1, c2 = 1.0 - b2 * b2;
  const double m1 = (1 - b1) * 2.0, v1 = (1 - b2) * 4.0;
  const double p1 = 2.0 - lr * (m1 / c1) / (std::sqrt(v1 / c2) + eps);
  const double m2 = b1 * -0.1 + (1 - b1) * 0.5, v2 = b2 * 0.001 + (1 - b2) * 0.25;
  p2 -= lr * (m2 / c1) / (std::sqrt(v2 / c2) + eps);
  CHECK(p[0] == doctest::Approx(p0).epsilon(1e-14));  // not moved by its old moment
  CHECK(p[1] == doctest::Approx(p1).epsilon(1e-12));
  CHECK(p[2] == doctest::Approx(p2).epsilon(1e-12));
  const auto& s = opt->state();
  CHECK(s.slots[0][0] == doctest::Approx(0.1).epsilon(1e-15));  // dense would decay it to 0.09
  CHECK(s.slots[1][0] == doctest::Approx(0.001).epsilon(1e-15));
  CHECK(s.slots[0][1] == doctest::Approx(m1).epsilon(1e-15));
  CHECK(s.slots[1][2] == doctest::Approx(v2).epsilon(1e-14));
  CHECK(s.steps == 2);
}

TEST_CASE("optim: adagrad and ftrl state round trips continue with the same bits") {
  for (const auto& entry : every_optimizer()) {
    const std::string& name = entry.first;
    const OptimizerConfig& config = entry.second;
    if (name != "adagrad" && name != "ftrl") continue;
    CAPTURE(name);
    auto straight = dt::models::make_optimizer(config, 8);
    auto first = dt::models::make_optimizer(config, 8);
    std::vector<double> p_straight(8, 0.0), p_resumed(8, 0.0);
    for (std::size_t s = 0; s < 2; ++s) {
      straight->step(p_straight, kSparseGrads[s]);
      first->step(p_resumed, kSparseGrads[s]);
    }
    auto second = dt::models::make_optimizer(config, 8);  // a resumed run: fresh, then state
    second->set_state(first->state());
    for (std::size_t s = 2; s < kSparseGrads.size(); ++s) {
      straight->step(p_straight, kSparseGrads[s]);
      second->step(p_resumed, kSparseGrads[s]);
    }
    CHECK(bits_equal(p_straight, p_resumed));
    CHECK(states_equal(straight->state(), second->state()));
    dt::models::OptimizerState wrong = first->state();
    wrong.slots.pop_back();
    CHECK_THROWS_AS(second->set_state(wrong), dt::TrainingError);
    wrong = first->state();
    wrong.slots[0].pop_back();
    CHECK_THROWS_AS(second->set_state(wrong), dt::TrainingError);
  }
}

TEST_CASE("optim: step_indices refuses unsorted, repeated, out-of-range and mismatched keys") {
  for (const auto& entry : every_optimizer()) {
    const std::string& name = entry.first;
    const OptimizerConfig& config = entry.second;
    CAPTURE(name);
    auto opt = dt::models::make_optimizer(config, 4);
    std::vector<double> p(4, 1.0);
    const std::vector<double> g2{1.0, 1.0};
    using Keys = std::vector<std::uint64_t>;
    CHECK_THROWS_AS(opt->step_indices(Keys{2, 1}, g2, 1.0, p), dt::TrainingError);
    CHECK_THROWS_AS(opt->step_indices(Keys{1, 1}, g2, 1.0, p), dt::TrainingError);
    CHECK_THROWS_AS(opt->step_indices(Keys{1, 4}, g2, 1.0, p), dt::TrainingError);
    CHECK_THROWS_AS(opt->step_indices(Keys{1}, g2, 1.0, p), dt::TrainingError);
    std::vector<double> short_p(3, 1.0);
    CHECK_THROWS_AS(opt->step_indices(Keys{0, 1}, g2, 1.0, short_p), dt::TrainingError);
    CHECK(p == std::vector<double>(4, 1.0));
    CHECK(opt->state().steps == 0);
    opt->step_indices(Keys{}, std::vector<double>{}, 1.0, p);  // an empty batch is a step
    CHECK(opt->state().steps == 1);
  }
}

TEST_CASE("optim: make_optimizer refuses bad adagrad and ftrl settings") {
  OptimizerConfig c = adagrad_config(0.1, 0.0);
  c.epsilon = 0.0;
  CHECK_THROWS_AS((void)dt::models::make_optimizer(c, 2), dt::TrainingError);
  c = adagrad_config(0.1, -1.0);
  CHECK_THROWS_AS((void)dt::models::make_optimizer(c, 2), dt::TrainingError);
  CHECK_THROWS_AS((void)dt::models::make_optimizer(ftrl_config(0.1, -1.0, 0.0, 0.0), 2),
                  dt::TrainingError);
  CHECK_THROWS_AS((void)dt::models::make_optimizer(ftrl_config(0.1, 1.0, -0.1, 0.0), 2),
                  dt::TrainingError);
  CHECK_THROWS_AS((void)dt::models::make_optimizer(ftrl_config(0.1, 1.0, 0.0, NAN), 2),
                  dt::TrainingError);
  CHECK_THROWS_AS((void)dt::models::make_optimizer(ftrl_config(0.0, 1.0, 0.0, 0.0), 2),
                  dt::TrainingError);
  CHECK(dt::models::make_optimizer(ftrl_config(0.1, 0.0, 0.0, 0.0), 2) != nullptr);
}

// Optimizer::step_indices_with: the lazy step with its caller's marks and gathers in the same
// pass (ftrl folds them into its blocks) gives the bits of step_indices followed by a plain
// loop of each, for every optimizer, with keys to read below, among, between and above the
// stepped indices, and across many of ftrl's blocks.

#include "core/models/optim.hpp"
#include "base/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using dt::config::OptimizerConfig;
using dt::config::OptimizerType;
using Work = dt::models::Optimizer::LazyStepWork;

OptimizerConfig config(OptimizerType type, double lr) {
  OptimizerConfig c;
  c.type = type;
  c.lr = lr;
  c.beta = 1.0;
  c.l1 = 0.01;
  c.l2 = 0.1;
  c.initial_accumulator_value = 0.1;
  return c;
}

std::vector<std::pair<std::string, OptimizerConfig>> optimizers() {
  auto clipped = config(OptimizerType::kFtrl, 0.5);
  clipped.clip_norm = 0.5;  // wrapped (optim_controls): the call must reach ftrl's own
  return {{"ftrl", config(OptimizerType::kFtrl, 0.5)},
          {"ftrl, clip_norm", clipped},
          {"adagrad", config(OptimizerType::kAdagrad, 0.2)},
          {"sgd", config(OptimizerType::kSgd, 0.1)}};
}

// `count` distinct keys below `width`, ascending.
std::vector<std::uint64_t> sorted_keys(std::mt19937_64& rng, std::size_t width, std::size_t count) {
  std::vector<std::uint64_t> all(width);
  for (std::size_t i = 0; i < width; ++i) all[i] = i;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(count);
  std::sort(all.begin(), all.end());
  return all;
}

bool identical_bits(const std::vector<double>& a, const std::vector<double>& b) {
  // memcmp of empty vectors would pass it null pointers (undefined, whatever the size).
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

}  // namespace

TEST_CASE("optim: step_indices_with is step_indices, then its marks and gathers, bit for bit") {
  constexpr std::size_t kWidth = 6000;
  for (const auto& [name, c] : optimizers()) {
    CAPTURE(name);
    auto plain = dt::models::make_optimizer(c, kWidth);
    auto fused = dt::models::make_optimizer(c, kWidth);
    std::vector<double> w_plain(kWidth, 0.0), w_fused(kWidth, 0.0);
    std::vector<std::uint64_t> marks_plain(kWidth / 64 + 1, 0), marks_fused(kWidth / 64 + 1, 0);
    std::mt19937_64 rng(16);
    std::uniform_real_distribution<double> value(-1.0, 1.0);
    // Stepped indices from none to many of ftrl's blocks of 64, some gradients zero; the keys
    // to read are drawn from the whole width, so they fall below, among, between and above them.
    for (const std::size_t count : {0UL, 1UL, 63UL, 64UL, 65UL, 700UL, 3000UL, 700UL}) {
      CAPTURE(count);
      const auto indices = sorted_keys(rng, kWidth, count);
      std::vector<double> grad(count);
      for (double& g : grad) g = rng() % 5 == 0 ? 0.0 : value(rng);
      std::vector<std::vector<std::uint32_t>> keys;
      for (const std::size_t n : {0UL, 1UL, 500UL, 2500UL}) {
        const auto k = sorted_keys(rng, kWidth, n);
        keys.emplace_back(k.begin(), k.end());
      }
      std::vector<std::vector<double>> out_plain(keys.size()), out_fused(keys.size());
      std::vector<Work::Gather> gathers;
      for (std::size_t g = 0; g < keys.size(); ++g) {
        out_plain[g].assign(keys[g].size(), -7.0);
        out_fused[g].assign(keys[g].size(), -7.0);
        gathers.push_back({keys[g], out_fused[g].data()});
      }
      plain->step_indices(indices, grad, 0.5, w_plain);
      for (const auto k : indices) marks_plain[k / 64] |= std::uint64_t{1} << (k % 64);
      for (std::size_t g = 0; g < keys.size(); ++g) {
        for (std::size_t j = 0; j < keys[g].size(); ++j) out_plain[g][j] = w_plain[keys[g][j]];
      }
      fused->step_indices_with(indices, grad, 0.5, w_fused,
                               Work{.marks = marks_fused.data(), .gathers = gathers});
      CHECK(identical_bits(w_plain, w_fused));
      CHECK(marks_plain == marks_fused);
      for (std::size_t g = 0; g < keys.size(); ++g) CHECK(identical_bits(out_plain[g], out_fused[g]));
      REQUIRE(plain->state().slots.size() == fused->state().slots.size());
      for (std::size_t s = 0; s < plain->state().slots.size(); ++s) {
        CHECK(identical_bits(plain->state().slots[s], fused->state().slots[s]));
      }
      CHECK(plain->state().steps == fused->state().steps);
    }
    // Without marks or gathers: the step alone.
    fused->step_indices_with(std::vector<std::uint64_t>{5, 9}, std::vector<double>{1.0, -1.0},
                             1.0, w_fused, Work{});
    plain->step_indices(std::vector<std::uint64_t>{5, 9}, std::vector<double>{1.0, -1.0}, 1.0,
                        w_plain);
    CHECK(identical_bits(w_plain, w_fused));
  }
}

TEST_CASE("optim: step_indices_with refuses a key to read past the parameters") {
  for (const auto& [name, c] : optimizers()) {
    CAPTURE(name);
    auto opt = dt::models::make_optimizer(c, 100);
    std::vector<double> w(100, 0.0), out(2);
    const std::vector<std::uint32_t> keys = {3, 100};
    const std::vector<Work::Gather> gathers = {{keys, out.data()}};
    CHECK_THROWS_WITH_AS(
        opt->step_indices_with(std::vector<std::uint64_t>{1}, std::vector<double>{1.0}, 1.0, w,
                               Work{.gathers = gathers}),
        "optimizer lazy step: a key to read is 100, the model has 100 parameters",
        dt::TrainingError);
  }
}

TEST_CASE("optim: ftrl's step two keys at a time gives each key's own bits, in every case") {
  // Its pass steps keys in pairs (update_two: two lanes of the same operations), step_indices
  // one at a time. Each lane of a pair meets each case of the update on its own: weights that
  // start nonzero with n == 0 (model.init: z starts at the weight's closed form), -0.0 and 0.0,
  // zero gradients (nothing changes), |z| at or below l1 (the weight is 0.0), large gradients.
  constexpr std::size_t kWidth = 512;
  auto c = config(OptimizerType::kFtrl, 0.5);
  c.l1 = 0.3;
  auto plain = dt::models::make_optimizer(c, kWidth);
  auto paired = dt::models::make_optimizer(c, kWidth);
  std::mt19937_64 rng(61);
  std::uniform_real_distribution<double> value(-2.0, 2.0);
  std::vector<double> w_plain(kWidth);
  for (double& w : w_plain) {
    const auto pick = rng() % 4;
    w = pick == 0 ? 0.0 : pick == 1 ? -0.0 : value(rng);
  }
  std::vector<double> w_paired = w_plain;
  for (const std::size_t count : {2UL, 3UL, 129UL, 200UL, 511UL, 512UL}) {
    CAPTURE(count);
    const auto indices = sorted_keys(rng, kWidth, count);
    std::vector<double> grad(count);
    for (double& g : grad) {
      const auto pick = rng() % 4;
      g = pick == 0 ? 0.0 : pick == 1 ? value(rng) * 1e-3 : value(rng) * 10.0;
    }
    plain->step_indices(indices, grad, 1.0, w_plain);
    paired->step_indices_with(indices, grad, 1.0, w_paired, Work{});
    CHECK(identical_bits(w_plain, w_paired));
    CHECK(identical_bits(plain->state().slots[0], paired->state().slots[0]));
  }
}

// The per-coordinate optimizers of sparse problems: Adagrad and FTRL-Proximal. Each coordinate
// has its own learning rate from its own sum of squared gradients, and a coordinate whose
// gradient is zero keeps its weight and its state bit for bit, so the dense step and the lazy
// step (step_indices) agree exactly.

#include "core/models/optim_detail.hpp"

#include "base/error.hpp"
#include "base/memory.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dt::models::detail {

namespace {

// Adagrad (Duchi, Hazan & Singer 2011) in PyTorch's form, without lr_decay and weight_decay
// (model.l2 is the weight decay): sum += g^2; p -= lr * (g / (sqrt(sum) + epsilon)).
// Slot [sum], starting at initial_accumulator_value.
class Adagrad final : public Optimizer {
 public:
  Adagrad(const config::OptimizerConfig& c, std::size_t size)
      : lr_(c.lr), epsilon_(c.epsilon), size_(size) {
    state_.slots.resize(1);
    memory::assign_huge(state_.slots[0], size_, c.initial_accumulator_value);
  }

  void step_scaled(std::span<const double> from, std::span<const double> grad_sum, double scale,
                   std::span<double> to) override {
    check_step(size_, from, grad_sum, to);
    const double lr = lr_, epsilon = epsilon_;
    double* sum = state_.slots[0].data();
    for (std::size_t i = 0; i < size_; ++i) {
      to[i] = update(from[i], grad_sum[i] * scale, sum[i], lr, epsilon);
    }
    ++state_.steps;
  }

  void step_indices(std::span<const std::uint64_t> indices, std::span<const double> grad_sum,
                    double scale, std::span<double> params) override {
    check_indices(size_, indices, grad_sum, params);
    const double lr = lr_, epsilon = epsilon_;
    double* sum = state_.slots[0].data();
    for (std::size_t i = 0; i < indices.size(); ++i) {
      prefetch_indices_ahead(indices, i, params.data(), sum);
      const std::uint64_t k = indices[i];
      params[k] = update(params[k], grad_sum[i] * scale, sum[k], lr, epsilon);
    }
    ++state_.steps;
  }

  [[nodiscard]] const OptimizerState& state() const noexcept override { return state_; }
  void set_state(OptimizerState state) override {
    restore(state_, std::move(state), 1, size_, "adagrad");
  }
  void set_lr(double lr) override { lr_ = lr; }

 private:
  // g == 0 adds 0 to sum (>= 0) and subtracts lr * 0 from p: both unchanged, bit for bit.
  static double update(double p, double g, double& sum, double lr, double epsilon) {
    sum += g * g;
    return p - lr * (g / (std::sqrt(sum) + epsilon));
  }

  double lr_;
  double epsilon_;
  std::size_t size_;
  OptimizerState state_;
};

// FTRL-Proximal (McMahan et al. 2013, algorithm 1), per coordinate with gradient g and weight w:
//   sigma = (sqrt(n + g^2) - sqrt(n)) / alpha;  z += g - sigma * w;  n += g^2
//   w = 0                                                    when |z| <= l1
//   w = -(z - sign(z) l1) / ((beta + sqrt(n)) / alpha + l2)  otherwise
// Slots [z, n], interleaved: (z, n) of a key side by side in one 16-byte record (never across
// two cache lines), so the lazy step at a cold key of a wide model misses two lines (the
// weight and the record) instead of three. A coordinate with g == 0 is skipped (the paper updates only the features a
// row has; the closed form would give the same w for a weight it produced itself).
// The weight a coordinate starts from need not be 0 (model.init, a parameters-mode merge):
// at its first nonzero gradient (n == 0) z is first set to the value whose closed form is that
// weight, z = -w (beta / alpha + l2) - sign(w) l1, so the step continues from it as a
// gradient step would; from w = 0 this is the paper's z = 0.
class Ftrl final : public Optimizer {
 public:
  Ftrl(const config::OptimizerConfig& c, std::size_t size)
      : c_{c.lr, c.beta, c.l1, c.l2}, size_(size) {
    state_.interleaved = 2;
    state_.slots.resize(1);
    memory::assign_huge(state_.slots[0], 2 * size_, 0.0);
  }

  void step_scaled(std::span<const double> from, std::span<const double> grad_sum, double scale,
                   std::span<double> to) override {
    check_step(size_, from, grad_sum, to);
    const Constants c = c_;
    double* zn = state_.slots[0].data();
    for (std::size_t i = 0; i < size_; ++i) {
      to[i] = update(from[i], grad_sum[i] * scale, zn[2 * i], zn[2 * i + 1], c);
    }
    ++state_.steps;
  }

  void step_indices(std::span<const std::uint64_t> indices, std::span<const double> grad_sum,
                    double scale, std::span<double> params) override {
    check_indices(size_, indices, grad_sum, params);
    const Constants c = c_;
    double* zn = state_.slots[0].data();
    double* w = params.data();
    const std::size_t count = indices.size();
    for (std::size_t i = 0; i < count; ++i) {
      if (i + kIndicesAhead < count) {
        const std::uint64_t ahead = indices[i + kIndicesAhead];
        __builtin_prefetch(w + ahead, 1, 1);
        __builtin_prefetch(zn + 2 * ahead, 1, 1);
      }
      const std::uint64_t k = indices[i];
      w[k] = update(w[k], grad_sum[i] * scale, zn[2 * k], zn[2 * k + 1], c);
    }
    ++state_.steps;
  }

  // The step, its marks and its gathers in one pass. The indices go in blocks of kBlock; after
  // each block, each gather copies its keys up to the block's last index (each of them stepped
  // by then, or not stepped at all: their final values). While the step's arithmetic runs (its
  // square roots and divisions), each gather's next key at or below the index being fetched
  // kIndicesAhead on is fetched too, one a key: at 2^24 keys the gathers' reads, a miss each in
  // a loop of their own, arrive already in the caches (bench/README.md, "The next step's values
  // read within FTRL's step").
  void step_indices_with(std::span<const std::uint64_t> indices, std::span<const double> grad_sum,
                         double scale, std::span<double> params,
                         const LazyStepWork& work) override {
    check_indices(size_, indices, grad_sum, params);
    check_gathers(size_, work);
    const Constants c = c_;
    double* zn = state_.slots[0].data();
    double* w = params.data();
    std::uint64_t* marks = work.marks;
    const std::size_t count = indices.size();
    const std::size_t gathers = work.gathers.size();
    copied_.assign(gathers, 0);
    fetched_.assign(gathers, 0);
    constexpr std::size_t kBlock = 64;  // even: a block's keys go in pairs (update_two)
    // Fetches the records of the index kIndicesAhead after i, and each gather's next key.
    const auto fetch_ahead = [&](std::size_t i) __attribute__((always_inline)) {
      if (i + kIndicesAhead >= count) return;
      const std::uint64_t ahead = indices[i + kIndicesAhead];
      __builtin_prefetch(w + ahead, 1, 1);
      __builtin_prefetch(zn + 2 * ahead, 1, 1);
      if (marks != nullptr) __builtin_prefetch(marks + ahead / 64, 1, 1);
      for (std::size_t g = 0; g < gathers; ++g) {
        // Without a branch (taken about every other key, at random): the same key is asked
        // for again until the step's look-ahead passes it.
        const auto keys = work.gathers[g].keys;
        const std::size_t f = fetched_[g];
        if (keys.empty()) continue;
        const std::uint32_t key = keys[std::min(f, keys.size() - 1)];
        __builtin_prefetch(w + key, 0, 1);
        fetched_[g] = f + static_cast<std::size_t>((f < keys.size()) & (key <= ahead));
      }
    };
    const auto mark = [&](std::uint64_t k) {
      if (marks != nullptr) marks[k / 64] |= std::uint64_t{1} << (k % 64);
    };
    for (std::size_t start = 0; start < count; start += kBlock) {
      const std::size_t end = std::min(count, start + kBlock);
      for (std::size_t i = start; i < end; i += 2) {
        fetch_ahead(i);
        const std::uint64_t k = indices[i];
        if (i + 1 == end) {  // the last block's last key, when it is odd
          w[k] = update(w[k], grad_sum[i] * scale, zn[2 * k], zn[2 * k + 1], c);
          mark(k);
          break;
        }
        fetch_ahead(i + 1);
        const std::uint64_t k1 = indices[i + 1];
        update_two(w + k, w + k1, grad_sum[i] * scale, grad_sum[i + 1] * scale, zn + 2 * k,
                   zn + 2 * k1, c);
        mark(k);
        mark(k1);
      }
      const std::uint64_t last = indices[end - 1];
      for (std::size_t g = 0; g < gathers; ++g) {
        const auto& [keys, out] = work.gathers[g];
        std::size_t j = copied_[g];
        for (; j < keys.size() && keys[j] <= last; ++j) out[j] = w[keys[j]];
        copied_[g] = j;
      }
    }
    for (std::size_t g = 0; g < gathers; ++g) {  // the keys above the last index
      const auto& [keys, out] = work.gathers[g];
      for (std::size_t j = copied_[g]; j < keys.size(); ++j) {
        if (j + kIndicesAhead < keys.size()) __builtin_prefetch(w + keys[j + kIndicesAhead], 0, 1);
        out[j] = w[keys[j]];
      }
    }
    ++state_.steps;
  }

  [[nodiscard]] const OptimizerState& state() const noexcept override { return state_; }
  void set_state(OptimizerState state) override {
    restore(state_, std::move(state), 2, size_, "ftrl", 2);
  }
  void set_lr(double lr) override { c_.alpha = lr; }

 private:
  struct Constants {
    double alpha, beta, l1, l2;
  };

  static double update(double w, double g, double& z, double& n, const Constants& c) {
    if (g == 0.0) return w;
    if (n == 0.0 && w != 0.0) z = -w * (c.beta / c.alpha + c.l2) - std::copysign(c.l1, w);
    const double n_new = n + g * g;
    const double sigma = (std::sqrt(n_new) - std::sqrt(n)) / c.alpha;
    z += g - sigma * w;
    n = n_new;
    if (std::abs(z) <= c.l1) return 0.0;
    return -(z - std::copysign(c.l1, z)) / ((c.beta + std::sqrt(n)) / c.alpha + c.l2);
  }

  // update() at two distinct keys at once, their (z, n) records at zn0 and zn1: the same IEEE
  // operations in the two lanes of SSE2 registers, so the same bits. Why: a key's two square
  // roots and three divisions are most of the step where its keys are cached, and a packed one
  // costs what a single one does (bench/README.md, "FTRL's step two keys at a time": -24% a key
  // in a copy of the loop; in the star's coordinator -12% at 2^24, +8% at 2^18). Where g == 0
  // the key keeps w, z and n (update returns before any arithmetic); where n == 0 and w != 0,
  // z starts at w's closed form.
  static void update_two(double* w0, double* w1, double g0, double g1, double* zn0, double* zn1,
                         const Constants& c) {
#if defined(__SSE2__)
    const __m128d sign = _mm_set1_pd(-0.0);
    const __m128d zero = _mm_setzero_pd();
    const __m128d l1 = _mm_set1_pd(c.l1);
    const __m128d alpha = _mm_set1_pd(c.alpha);
    const __m128d w = _mm_set_pd(*w1, *w0);
    const __m128d g = _mm_set_pd(g1, g0);
    const __m128d r0 = _mm_loadu_pd(zn0);
    const __m128d r1 = _mm_loadu_pd(zn1);
    const __m128d z_old = _mm_unpacklo_pd(r0, r1);
    const __m128d n = _mm_unpackhi_pd(r0, r1);
    const auto pick = [](__m128d mask, __m128d a, __m128d b) {  // mask ? a : b, a lane each
      return _mm_or_pd(_mm_and_pd(mask, a), _mm_andnot_pd(mask, b));
    };
    const auto copysign_l1 = [&](__m128d x) {
      return _mm_or_pd(_mm_andnot_pd(sign, l1), _mm_and_pd(sign, x));
    };
    const __m128d first = _mm_and_pd(_mm_cmpeq_pd(n, zero), _mm_cmpneq_pd(w, zero));
    const __m128d z_first = _mm_sub_pd(
        _mm_mul_pd(_mm_xor_pd(w, sign), _mm_set1_pd(c.beta / c.alpha + c.l2)), copysign_l1(w));
    const __m128d z = pick(first, z_first, z_old);
    const __m128d n_new = _mm_add_pd(n, _mm_mul_pd(g, g));
    const __m128d sqrt_n_new = _mm_sqrt_pd(n_new);
    const __m128d sigma = _mm_div_pd(_mm_sub_pd(sqrt_n_new, _mm_sqrt_pd(n)), alpha);
    const __m128d z_new = _mm_add_pd(z, _mm_sub_pd(g, _mm_mul_pd(sigma, w)));
    const __m128d scale = _mm_add_pd(
        _mm_div_pd(_mm_add_pd(_mm_set1_pd(c.beta), sqrt_n_new), alpha), _mm_set1_pd(c.l2));
    const __m128d w_far =
        _mm_div_pd(_mm_xor_pd(_mm_sub_pd(z_new, copysign_l1(z_new)), sign), scale);
    const __m128d w_new = _mm_andnot_pd(_mm_cmple_pd(_mm_andnot_pd(sign, z_new), l1), w_far);
    const __m128d keep = _mm_cmpeq_pd(g, zero);
    const __m128d w_out = pick(keep, w, w_new);
    const __m128d z_out = pick(keep, z_old, z_new);
    const __m128d n_out = pick(keep, n, n_new);
    _mm_storel_pd(w0, w_out);
    _mm_storeh_pd(w1, w_out);
    _mm_storeu_pd(zn0, _mm_unpacklo_pd(z_out, n_out));
    _mm_storeu_pd(zn1, _mm_unpackhi_pd(z_out, n_out));
#else
    *w0 = update(*w0, g0, zn0[0], zn0[1], c);
    *w1 = update(*w1, g1, zn1[0], zn1[1], c);
#endif
  }

  Constants c_;
  std::size_t size_;
  OptimizerState state_;
  std::vector<std::size_t> copied_, fetched_;  // step_indices_with's place in each gather
};

}  // namespace

std::unique_ptr<Optimizer> make_adagrad(const config::OptimizerConfig& config, std::size_t size) {
  return std::make_unique<Adagrad>(config, size);
}

std::unique_ptr<Optimizer> make_ftrl(const config::OptimizerConfig& config, std::size_t size) {
  return std::make_unique<Ftrl>(config, size);
}

}  // namespace dt::models::detail

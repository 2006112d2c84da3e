// AdamW and RMSprop in PyTorch's forms (torch.optim.AdamW and torch.optim.RMSprop, the same
// operations in the same order, so a few steps agree with PyTorch's to rounding), each with a
// lazy step for sparse models in the manner of LazyAdam: only the touched keys' state moves.

#include "core/models/optim_detail.hpp"

#include "base/error.hpp"

#include <cmath>
#include <utility>

namespace dt::models::detail {

namespace {

// AdamW (Loshchilov & Hutter 2019): the weight decays apart from the gradient,
//   p *= 1 - lr * weight_decay;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// on every parameter (biases too, as PyTorch does with one parameter group). Slots [m, v].
class AdamW final : public Optimizer {
 public:
  AdamW(const config::OptimizerConfig& c, std::size_t size)
      : lr_(c.lr), beta1_(c.beta1), beta2_(c.beta2), epsilon_(c.epsilon),
        weight_decay_(c.weight_decay), size_(size) {
    state_.slots.assign(2, std::vector<double>(size_, 0.0));
  }

  void step_scaled(std::span<const double> from, std::span<const double> grad_sum, double scale,
                   std::span<double> to) override {
    check_step(size_, from, grad_sum, to);
    ++state_.steps;
    const Constants c = constants();
    double* m = state_.slots[0].data();
    double* v = state_.slots[1].data();
    for (std::size_t i = 0; i < size_; ++i) {
      to[i] = update(from[i], grad_sum[i] * scale, m[i], v[i], c);
    }
  }

  // Lazy: only `indices` decay and move; the bias correction uses the global step count.
  void step_indices(std::span<const std::uint64_t> indices, std::span<const double> grad_sum,
                    double scale, std::span<double> params) override {
    check_indices(size_, indices, grad_sum, params);
    ++state_.steps;
    const Constants c = constants();
    double* m = state_.slots[0].data();
    double* v = state_.slots[1].data();
    double* p = params.data();
    for (std::size_t i = 0; i < indices.size(); ++i) {
      prefetch_indices_ahead(indices, i, p, m, v);
      const std::uint64_t k = indices[i];
      p[k] = update(p[k], grad_sum[i] * scale, m[k], v[k], c);
    }
  }

  [[nodiscard]] const OptimizerState& state() const noexcept override { return state_; }
  void set_state(OptimizerState state) override {
    restore(state_, std::move(state), 2, size_, "adamw");
  }
  void set_lr(double lr) override { lr_ = lr; }

 private:
  struct Constants {
    double decay, beta1, beta2, epsilon, step_size, correction2_sqrt;
  };

  [[nodiscard]] Constants constants() const {
    const auto t = static_cast<double>(state_.steps);
    return {1.0 - lr_ * weight_decay_, beta1_, beta2_, epsilon_,
            lr_ / (1.0 - std::pow(beta1_, t)), std::sqrt(1.0 - std::pow(beta2_, t))};
  }

  static double update(double p, double g, double& m, double& v, const Constants& c) {
    p = p * c.decay;
    m = m * c.beta1 + g * (1.0 - c.beta1);
    v = v * c.beta2 + (1.0 - c.beta2) * g * g;
    const double denom = std::sqrt(v) / c.correction2_sqrt + c.epsilon;
    return p + -c.step_size * (m / denom);
  }

  double lr_;
  double beta1_;
  double beta2_;
  double epsilon_;
  double weight_decay_;
  std::size_t size_;
  OptimizerState state_;
};

// RMSprop (Hinton's lecture 6e) in PyTorch's form:
//   s = alpha s + (1 - alpha) g^2;  centered: a = alpha a + (1 - alpha) g, d = sqrt(s - a^2) + eps,
//   else d = sqrt(s) + eps;  momentum: b = momentum b + g / d, p -= lr b;  else p -= lr g / d.
// Slots [s], then [b] with momentum, then [a] when centered.
class RmsProp final : public Optimizer {
 public:
  RmsProp(const config::OptimizerConfig& c, std::size_t size)
      : c_{c.lr, c.rms_alpha, c.epsilon, c.momentum}, centered_(c.centered), size_(size) {
    state_.slots.assign(slot_count(), std::vector<double>(size_, 0.0));
  }

  void step_scaled(std::span<const double> from, std::span<const double> grad_sum, double scale,
                   std::span<double> to) override {
    check_step(size_, from, grad_sum, to);
    const Slots s = slots();
    const Constants c = c_;
    for (std::size_t i = 0; i < size_; ++i) {
      to[i] = update(from[i], grad_sum[i] * scale, s, i, c);
    }
    ++state_.steps;
  }

  // Lazy: the averages of untouched keys are not decayed and they do not move.
  void step_indices(std::span<const std::uint64_t> indices, std::span<const double> grad_sum,
                    double scale, std::span<double> params) override {
    check_indices(size_, indices, grad_sum, params);
    const Slots s = slots();
    const Constants c = c_;
    double* p = params.data();
    for (std::size_t i = 0; i < indices.size(); ++i) {
      prefetch_indices_ahead(indices, i, p, s.square, s.buffer);
      const std::uint64_t k = indices[i];
      p[k] = update(p[k], grad_sum[i] * scale, s, k, c);
    }
    ++state_.steps;
  }

  [[nodiscard]] const OptimizerState& state() const noexcept override { return state_; }
  void set_state(OptimizerState state) override {
    restore(state_, std::move(state), slot_count(), size_, "rmsprop");
  }
  void set_lr(double lr) override { c_.lr = lr; }

 private:
  struct Constants {
    double lr, alpha, epsilon, momentum;
  };
  struct Slots {
    double* square;
    double* buffer;   // null without momentum
    double* average;  // null unless centered
  };

  [[nodiscard]] std::size_t slot_count() const noexcept {
    return 1 + (c_.momentum > 0.0 ? 1 : 0) + (centered_ ? 1 : 0);
  }
  [[nodiscard]] Slots slots() {
    std::size_t next = 1;
    Slots s{state_.slots[0].data(), nullptr, nullptr};
    if (c_.momentum > 0.0) s.buffer = state_.slots[next++].data();
    if (centered_) s.average = state_.slots[next].data();
    return s;
  }

  static double update(double p, double g, const Slots& s, std::size_t k, const Constants& c) {
    double& square = s.square[k];
    square = square * c.alpha + (1.0 - c.alpha) * g * g;
    double denom = 0;
    if (s.average != nullptr) {
      double& average = s.average[k];
      average = average * c.alpha + g * (1.0 - c.alpha);
      denom = std::sqrt(square + -1.0 * average * average) + c.epsilon;
    } else {
      denom = std::sqrt(square) + c.epsilon;
    }
    if (s.buffer != nullptr) {
      double& buffer = s.buffer[k];
      buffer = buffer * c.momentum + g / denom;
      return p + -c.lr * buffer;
    }
    return p + -c.lr * (g / denom);
  }

  Constants c_;
  bool centered_;
  std::size_t size_;
  OptimizerState state_;
};

}  // namespace

std::unique_ptr<Optimizer> make_adamw(const config::OptimizerConfig& config, std::size_t size) {
  return std::make_unique<AdamW>(config, size);
}

std::unique_ptr<Optimizer> make_rmsprop(const config::OptimizerConfig& config, std::size_t size) {
  return std::make_unique<RmsProp>(config, size);
}

}  // namespace dt::models::detail

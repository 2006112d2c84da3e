#include "core/models/optim.hpp"
#include "core/models/optim_controls.hpp"
#include "core/models/optim_detail.hpp"

#include "base/error.hpp"
#include "base/memory.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dt::models {

namespace detail {

void check_step(std::size_t expected, std::span<const double> from, std::span<const double> grad,
                std::span<const double> to) {
  if (from.size() != expected || grad.size() != expected || to.size() != expected) {
    fail<TrainingError>(
        "optimizer step: the optimizer was built for {} parameters but got {} parameters and a "
        "gradient of {}",
        expected, from.size(), grad.size());
  }
}

void check_indices(std::size_t expected, std::span<const std::uint64_t> indices,
                   std::span<const double> grad, std::span<const double> params) {
  if (params.size() != expected || grad.size() != indices.size()) {
    fail<TrainingError>(
        "optimizer lazy step: the optimizer was built for {} parameters but got {} parameters, "
        "{} keys and {} gradient values",
        expected, params.size(), indices.size(), grad.size());
  }
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] >= expected || (i > 0 && indices[i] <= indices[i - 1])) {
      fail<TrainingError>(
          "optimizer lazy step: keys must be increasing and below {}, but key {} is {} after {}",
          expected, i, indices[i], i > 0 ? indices[i - 1] : 0);
    }
  }
}

void check_gathers(std::size_t expected, const Optimizer::LazyStepWork& work) {
  for (const auto& g : work.gathers) {
    // Ascending (decode_keys' contract): the last key is the largest.
    if (!g.keys.empty() && g.keys.back() >= expected) {
      fail<TrainingError>("optimizer lazy step: a key to read is {}, the model has {} parameters",
                          g.keys.back(), expected);
    }
  }
}

void restore(OptimizerState& current, OptimizerState state, std::size_t slots, std::size_t size,
             const char* name, std::size_t interleaved) {
  const bool whole = state.interleaved == 0 || (state.slots.size() == 1 &&
                                                state.slots[0].size() == size * state.interleaved);
  if (state.slot_count() != slots || !whole) {
    fail<TrainingError>("{} optimizer state must have {} slot(s), got {}", name, slots,
                        state.slot_count());
  }
  for (std::size_t i = 0; i < state.slots.size(); ++i) {
    if (state.slots[i].size() != size * state.stride()) {
      fail<TrainingError>("{} optimizer state slot {} has {} values, the model has {} parameters",
                          name, i, state.slots[i].size(), size);
    }
  }
  if (state.interleaved == interleaved) {
    current = std::move(state);
    return;
  }
  // The other layout (a checkpoint's or the wire's one array a slot, into ftrl's records):
  // written into the buffers `current` already has, huge pages and all.
  OptimizerState into;
  into.steps = state.steps;
  into.interleaved = interleaved;
  into.slots = std::move(current.slots);
  into.slots.resize(interleaved > 0 ? 1 : slots);
  for (auto& v : into.slots) v.resize(size * into.stride());
  for (std::size_t s = 0; s < slots; ++s) {
    const double* from = state.slot_data(s);
    double* to = into.slot_data(s);
    const std::size_t a = state.stride(), b = into.stride();
    for (std::size_t k = 0; k < size; ++k) to[k * b] = from[k * a];
  }
  current = std::move(into);
}

}  // namespace detail

std::vector<double> slot_values(const OptimizerState& state, std::size_t s) {
  if (state.interleaved == 0) return state.slots[s];
  std::vector<double> out(state.slot_size());
  const double* from = state.slot_data(s);
  const std::size_t stride = state.stride();
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = from[k * stride];
  return out;
}

OptimizerState separate_slots(const OptimizerState& state) {
  if (state.interleaved == 0) return state;
  OptimizerState out;
  out.steps = state.steps;
  for (std::size_t s = 0; s < state.slot_count(); ++s) out.slots.push_back(slot_values(state, s));
  return out;
}

void Optimizer::step_scaled_parts(std::span<const double> from,
                                  std::span<const double* const> parts, double scale,
                                  std::span<double> to, std::vector<double>& scratch) {
  scratch.resize(from.size());
  sum_parts(parts, scratch);
  step_scaled(from, scratch, scale, to);
}

void Optimizer::step_indices_with(std::span<const std::uint64_t> indices,
                                  std::span<const double> grad_sum, double scale,
                                  std::span<double> params, const LazyStepWork& work) {
  detail::check_gathers(params.size(), work);
  step_indices(indices, grad_sum, scale, params);
  lazy_step_work(indices, params, work);
}

void lazy_step_work(std::span<const std::uint64_t> indices, std::span<const double> params,
                    const Optimizer::LazyStepWork& work) {
  // Keys a few hundred apart in a wide model: words and values the hardware prefetcher does
  // not foresee, fetched a few keys early (as the loops were before step_indices_with).
  constexpr std::size_t kAhead = 32;
  if (work.marks != nullptr) {
    for (std::size_t i = 0; i < indices.size(); ++i) {
      if (i + kAhead < indices.size()) __builtin_prefetch(work.marks + indices[i + kAhead] / 64, 1, 1);
      work.marks[indices[i] / 64] |= std::uint64_t{1} << (indices[i] % 64);
    }
  }
  for (const auto& g : work.gathers) {
    const std::size_t n = g.keys.size();
    for (std::size_t j = 0; j < n; ++j) {
      if (j + kAhead < n) __builtin_prefetch(params.data() + g.keys[j + kAhead], 0, 1);
      g.out[j] = params[g.keys[j]];
    }
  }
}

// The first two parts in one pass over memory (the same bits as zeroing out and adding each).
void sum_parts(std::span<const double* const> parts, std::vector<double>& out) {
  double* o = out.data();
  const std::size_t n = out.size();
  std::size_t next = 0;
  if (parts.size() >= 2) {
    const double* a = parts[0];
    const double* b = parts[1];
    for (std::size_t i = 0; i < n; ++i) o[i] = (0.0 + a[i]) + b[i];
    next = 2;
  } else if (parts.size() == 1) {
    const double* a = parts[0];
    for (std::size_t i = 0; i < n; ++i) o[i] = 0.0 + a[i];
    next = 1;
  } else {
    std::fill(out.begin(), out.end(), 0.0);
  }
  for (; next < parts.size(); ++next) {
    const double* g = parts[next];
    for (std::size_t i = 0; i < n; ++i) o[i] += g[i];
  }
}

namespace {

using detail::check_indices;
using detail::check_step;
using detail::restore;

// Plain SGD, or SGD with momentum in PyTorch's form (v = m v + g; p -= lr v): the velocity
// does not absorb lr, so a checkpointed velocity stays valid when lr changes on resume.
class Sgd final : public Optimizer {
 public:
  Sgd(double lr, double momentum, std::size_t size) : lr_(lr), momentum_(momentum), size_(size) {
    if (momentum_ > 0.0) {
      state_.slots.resize(1);
      memory::assign_huge(state_.slots[0], size_, 0.0);
    }
  }

  void step_scaled(std::span<const double> from, std::span<const double> grad_sum, double scale,
                   std::span<double> to) override {
    check_step(size_, from, grad_sum, to);
    const double* g = grad_sum.data();
    run(from.data(), [g](std::size_t i) { return g[i]; }, scale, to.data());
  }

  // The lazy step: the dense formulas at `indices` only; an untouched key's velocity is not
  // decayed (with momentum this differs from the dense step on zeros, which decays it).
  void step_indices(std::span<const std::uint64_t> indices, std::span<const double> grad_sum,
                    double scale, std::span<double> params) override {
    check_indices(size_, indices, grad_sum, params);
    const double lr = lr_, momentum = momentum_;
    double* p = params.data();
    if (momentum > 0.0) {
      double* v = state_.slots[0].data();
      for (std::size_t i = 0; i < indices.size(); ++i) {
        detail::prefetch_indices_ahead(indices, i, p, v);
        const std::uint64_t k = indices[i];
        v[k] = momentum * v[k] + grad_sum[i] * scale;
        p[k] = p[k] - lr * v[k];
      }
    } else {
      for (std::size_t i = 0; i < indices.size(); ++i) {
        detail::prefetch_indices_ahead(indices, i, p);
        const std::uint64_t k = indices[i];
        p[k] = p[k] - lr * (grad_sum[i] * scale);
      }
    }
    ++state_.steps;
  }

  // One or two parts are added inside the step's own pass ((0.0 + a) + b, as the default adds
  // them); more go the default way.
  void step_scaled_parts(std::span<const double> from, std::span<const double* const> parts,
                         double scale, std::span<double> to,
                         std::vector<double>& scratch) override {
    if (parts.empty() || parts.size() > 2) {
      Optimizer::step_scaled_parts(from, parts, scale, to, scratch);
      return;
    }
    check_step(size_, from, from, to);
    const double* a = parts[0];
    if (parts.size() == 2) {
      const double* b = parts[1];
      run(from.data(), [a, b](std::size_t i) { return (0.0 + a[i]) + b[i]; }, scale, to.data());
    } else {
      run(from.data(), [a](std::size_t i) { return 0.0 + a[i]; }, scale, to.data());
    }
  }

  [[nodiscard]] const OptimizerState& state() const noexcept override { return state_; }
  void set_state(OptimizerState state) override {
    restore(state_, std::move(state), momentum_ > 0.0 ? 1 : 0, size_,
            momentum_ > 0.0 ? "sgd (momentum)" : "sgd");
  }
  void set_lr(double lr) override { lr_ = lr; }

 private:
  // The gradient is g[i] * scale. `to` is `from` or does not overlap it, so reading from[i]
  // before writing to[i] is all the in-place step needs. The members are read into locals
  // first: a store through `to` could alias them as far as the compiler knows, which would
  // reload them every iteration and keep the loop scalar.
  // The dense step on the gradient sum g(i) (a stored vector, or the workers' parts added as
  // they come: step_scaled_parts), times `scale`.
  template <class Gradient>
  void run(const double* from, Gradient g, double scale, double* to) {
    const double lr = lr_, momentum = momentum_;
    const std::size_t n = size_;
    if (momentum > 0.0) {
      double* v = state_.slots[0].data();
      for (std::size_t i = 0; i < n; ++i) {
        v[i] = momentum * v[i] + g(i) * scale;
        to[i] = from[i] - lr * v[i];
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) to[i] = from[i] - lr * (g(i) * scale);
    }
    ++state_.steps;
  }

  double lr_;
  double momentum_;
  std::size_t size_;
  OptimizerState state_;
};

// Adam (Kingma & Ba 2015, algorithm 1) with bias correction; slots [m, v].
class Adam final : public Optimizer {
 public:
  Adam(const config::OptimizerConfig& c, std::size_t size)
      : lr_(c.lr), beta1_(c.beta1), beta2_(c.beta2), epsilon_(c.epsilon), size_(size) {
    state_.slots.resize(2);
    for (auto& slot : state_.slots) memory::assign_huge(slot, size_, 0.0);
  }

  void step_scaled(std::span<const double> from, std::span<const double> grad_sum, double scale,
                   std::span<double> to) override {
    check_step(size_, from, grad_sum, to);
    run(from.data(), grad_sum.data(), scale, to.data());
  }

  // Lazy Adam (TensorFlow's LazyAdam, PyTorch's SparseAdam): the moments of `indices` only;
  // an untouched key's moments are not decayed and it does not move. The bias correction uses
  // the global step count (this call is step t for every key), as both of those do.
  void step_indices(std::span<const std::uint64_t> indices, std::span<const double> grad_sum,
                    double scale, std::span<double> params) override {
    check_indices(size_, indices, grad_sum, params);
    ++state_.steps;
    const Corrections c = corrections();
    double* m = state_.slots[0].data();
    double* v = state_.slots[1].data();
    double* p = params.data();
    for (std::size_t i = 0; i < indices.size(); ++i) {
      detail::prefetch_indices_ahead(indices, i, p, m, v);
      const std::uint64_t k = indices[i];
      p[k] = update(p[k], grad_sum[i] * scale, m[k], v[k], c);
    }
  }

  [[nodiscard]] const OptimizerState& state() const noexcept override { return state_; }
  void set_state(OptimizerState state) override {
    restore(state_, std::move(state), 2, size_, "adam");
  }
  void set_lr(double lr) override { lr_ = lr; }

 private:
  struct Corrections {
    double lr, beta1, beta2, epsilon, correction1, correction2;
  };

  // The constants of step state_.steps, in locals so that stores through `to` do not reload
  // them (as in Sgd::run).
  [[nodiscard]] Corrections corrections() const {
    const auto t = static_cast<double>(state_.steps);
    return {lr_, beta1_, beta2_, epsilon_, 1.0 - std::pow(beta1_, t), 1.0 - std::pow(beta2_, t)};
  }

  // One coordinate: moments m and v updated in place with gradient g; returns the new weight.
  static double update(double from, double g, double& m, double& v, const Corrections& c) {
    m = c.beta1 * m + (1.0 - c.beta1) * g;
    v = c.beta2 * v + (1.0 - c.beta2) * g * g;
    const double m_hat = m / c.correction1;
    const double v_hat = v / c.correction2;
    return from - c.lr * m_hat / (std::sqrt(v_hat) + c.epsilon);
  }

  // The gradient is grad[i] * scale.
  void run(const double* from, const double* grad, double scale, double* to) {
    ++state_.steps;
    const Corrections c = corrections();
    const std::size_t n = size_;
    double* m = state_.slots[0].data();
    double* v = state_.slots[1].data();
    for (std::size_t i = 0; i < n; ++i) to[i] = update(from[i], grad[i] * scale, m[i], v[i], c);
  }

  double lr_;
  double beta1_;
  double beta2_;
  double epsilon_;
  std::size_t size_;
  OptimizerState state_;
};

void validate(const config::OptimizerConfig& c) {
  if (!(c.lr > 0.0) || !std::isfinite(c.lr)) {
    fail<TrainingError>("optimizer lr must be a finite number > 0, got {}", c.lr);
  }
  if (c.type == config::OptimizerType::kSgd && !(c.momentum >= 0.0 && c.momentum < 1.0)) {
    fail<TrainingError>("sgd momentum must be in [0, 1), got {}", c.momentum);
  }
  if (c.type == config::OptimizerType::kAdam || c.type == config::OptimizerType::kAdamw) {
    if (!(c.beta1 >= 0.0 && c.beta1 < 1.0)) {
      fail<TrainingError>("adam beta1 must be in [0, 1), got {}", c.beta1);
    }
    if (!(c.beta2 >= 0.0 && c.beta2 < 1.0)) {
      fail<TrainingError>("adam beta2 must be in [0, 1), got {}", c.beta2);
    }
    if (!(c.epsilon > 0.0) || !std::isfinite(c.epsilon)) {
      fail<TrainingError>("adam epsilon must be a finite number > 0, got {}", c.epsilon);
    }
  }
  if (c.type == config::OptimizerType::kAdamw &&
      (!(c.weight_decay >= 0.0) || !std::isfinite(c.weight_decay))) {
    fail<TrainingError>("adamw weight_decay must be a finite number >= 0, got {}",
                        c.weight_decay);
  }
  if (c.type == config::OptimizerType::kRmsprop) {
    if (!(c.rms_alpha >= 0.0 && c.rms_alpha < 1.0)) {
      fail<TrainingError>("rmsprop alpha must be in [0, 1), got {}", c.rms_alpha);
    }
    if (!(c.momentum >= 0.0 && c.momentum < 1.0)) {
      fail<TrainingError>("rmsprop momentum must be in [0, 1), got {}", c.momentum);
    }
    if (!(c.epsilon > 0.0) || !std::isfinite(c.epsilon)) {
      fail<TrainingError>("rmsprop epsilon must be a finite number > 0, got {}", c.epsilon);
    }
  }
  if (c.type == config::OptimizerType::kAdagrad) {
    if (!(c.epsilon > 0.0) || !std::isfinite(c.epsilon)) {
      fail<TrainingError>("adagrad epsilon must be a finite number > 0, got {}", c.epsilon);
    }
    if (!(c.initial_accumulator_value >= 0.0) || !std::isfinite(c.initial_accumulator_value)) {
      fail<TrainingError>("adagrad initial_accumulator_value must be a finite number >= 0, got {}",
                          c.initial_accumulator_value);
    }
  }
  if (c.type == config::OptimizerType::kFtrl) {
    for (const auto& [name, value] : {std::pair{"beta", c.beta}, std::pair{"l1", c.l1},
                                      std::pair{"l2", c.l2}}) {
      if (!(value >= 0.0) || !std::isfinite(value)) {
        fail<TrainingError>("ftrl {} must be a finite number >= 0, got {}", name, value);
      }
    }
  }
}

}  // namespace

namespace {

std::unique_ptr<Optimizer> make_rule(const config::OptimizerConfig& config,
                                     std::size_t parameter_count) {
  switch (config.type) {
    case config::OptimizerType::kSgd:
      return std::make_unique<Sgd>(config.lr, config.momentum, parameter_count);
    case config::OptimizerType::kAdam:
      return std::make_unique<Adam>(config, parameter_count);
    case config::OptimizerType::kAdagrad:
      return detail::make_adagrad(config, parameter_count);
    case config::OptimizerType::kFtrl:
      return detail::make_ftrl(config, parameter_count);
    case config::OptimizerType::kAdamw:
      return detail::make_adamw(config, parameter_count);
    case config::OptimizerType::kRmsprop:
      return detail::make_rmsprop(config, parameter_count);
  }
  fail<TrainingError>("unknown optimizer type {}", static_cast<int>(config.type));
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config,
                                          std::size_t parameter_count,
                                          std::uint64_t total_steps) {
  validate(config);
  auto rule = make_rule(config, parameter_count);
  if (!has_lr_schedule(config) && !(config.clip_norm > 0.0)) return rule;
  return detail::make_controlled(std::move(rule), config, total_steps);
}

}  // namespace dt::models

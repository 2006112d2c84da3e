#pragma once
// Optimizers: sgd (with optional momentum, the PyTorch form v = m*v + g; p -= lr*v) and adam
// (Kingma & Ba with bias correction). Their state is plain vectors so a checkpoint can save and
// restore it exactly.

#include "core/config/config.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dt::models {

struct OptimizerState {
  std::uint64_t steps = 0;
  std::vector<std::vector<double>> slots;  // sgd momentum: [velocity]; adam: [m, v]
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // params -= update(grad); grad is the full objective's gradient (mean loss + regularization).
  void step(std::span<double> params, std::span<const double> grad) {
    step_scaled(params, grad, 1.0, params);
  }
  // The same step out of place: `to` = `from` - update(grad), the same bits as step() on a copy
  // of `from`, with `from` left as it was (a ring replica keeps its state before the step without
  // copying it). `to` is `from` itself (the in-place step) or does not overlap it.
  void step(std::span<const double> from, std::span<const double> grad, std::span<double> to) {
    step_scaled(from, grad, 1.0, to);  // g * 1.0 is g, bit for bit, for every double
  }
  // The out-of-place step on the gradient grad_sum[i] * scale (a sum over rows times 1/rows):
  // the same bits as scaling grad_sum in place and then step(from, grad_sum, to), in one pass
  // over memory instead of two. grad_sum is left as it was. What each optimizer implements.
  virtual void step_scaled(std::span<const double> from, std::span<const double> grad_sum,
                           double scale, std::span<double> to) = 0;
  [[nodiscard]] virtual const OptimizerState& state() const noexcept = 0;
  virtual void set_state(OptimizerState state) = 0;  // TrainingError when the sizes do not fit
};

[[nodiscard]] std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config,
                                                        std::size_t parameter_count);

}  // namespace dt::models

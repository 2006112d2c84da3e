#pragma once
// Optimizers: sgd (with optional momentum, the PyTorch form v = m*v + g; p -= lr*v), adam
// (Kingma & Ba with bias correction), adagrad (Duchi et al., PyTorch's form) and ftrl
// (FTRL-Proximal, McMahan et al. 2013, with L1 and L2). Their state is plain vectors so a
// checkpoint can save and restore it exactly. docs/optimizers.md has the formulas.

#include "core/config/config.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dt::models {

struct OptimizerState {
  std::uint64_t steps = 0;
  // sgd momentum: [velocity]; adam: [m, v]; adagrad: [sum of g^2]; ftrl: [z, n]
  std::vector<std::vector<double>> slots;
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
  // The lazy step of a sparse update (what a sparse parameter server calls): steps only the
  // coordinates `indices` of `params` (the vector this optimizer was made for: its state has
  // the same size), whose gradient is grad_sum[i] * scale for indices[i]. `indices` is sorted
  // and unique (strictly increasing, each < params.size(), TrainingError otherwise). Every
  // other coordinate and its state are left as they are; state().steps counts the call as one
  // step. Costs the touched keys, not the width.
  // sgd without momentum, adagrad and ftrl: a zero gradient moves neither the coordinate nor
  // its state, so this gives the same bits as the dense step on a gradient that holds these
  // values at `indices` and zeros elsewhere. sgd with momentum and adam: the lazy forms of
  // TensorFlow's LazyAdam and PyTorch's SparseAdam: an untouched key's velocity or moments are
  // not decayed and it does not move; adam's bias correction uses the global step count.
  virtual void step_indices(std::span<const std::uint64_t> indices,
                            std::span<const double> grad_sum, double scale,
                            std::span<double> params) = 0;
  [[nodiscard]] virtual const OptimizerState& state() const noexcept = 0;
  virtual void set_state(OptimizerState state) = 0;  // TrainingError when the sizes do not fit
};

[[nodiscard]] std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config,
                                                        std::size_t parameter_count);

}  // namespace dt::models

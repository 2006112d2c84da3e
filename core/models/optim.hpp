#pragma once
// Optimizers: sgd (with optional momentum, the PyTorch form v = m*v + g; p -= lr*v), adam
// (Kingma & Ba with bias correction), adagrad (Duchi et al., PyTorch's form), ftrl
// (FTRL-Proximal, McMahan et al. 2013, with L1 and L2), adamw (PyTorch's AdamW: decoupled
// weight decay) and rmsprop (PyTorch's RMSprop). Their state is plain vectors so a checkpoint
// can save and restore it exactly. docs/optimizers.md has the formulas. training.lr_schedule
// and training.clip_norm wrap one of them (optim_controls.hpp).

#include "core/config/config.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dt::models {

struct OptimizerState {
  std::uint64_t steps = 0;
  // sgd momentum: [velocity]; adam, adamw: [m, v]; adagrad: [sum of g^2]; ftrl: [z, n];
  // rmsprop: [square average], then [momentum buffer] with momentum, then [gradient average]
  // when centered. One vector a slot, or (interleaved > 0) one vector of `interleaved` values
  // a coordinate, its slots side by side: ftrl keeps (z, n) of a key in one 16-byte record, so
  // a lazy step at a cold key misses one cache line for both instead of two. Checkpoints and
  // the wire always hold one array a slot (slot_values); set_state takes either layout.
  std::vector<std::vector<double>> slots;
  std::size_t interleaved = 0;

  [[nodiscard]] std::size_t slot_count() const noexcept {
    return interleaved > 0 ? interleaved : slots.size();
  }
  // Slot s of coordinate k is slot_data(s)[k * stride()].
  [[nodiscard]] std::size_t stride() const noexcept { return interleaved > 0 ? interleaved : 1; }
  [[nodiscard]] const double* slot_data(std::size_t s) const noexcept {
    return interleaved > 0 ? slots[0].data() + s : slots[s].data();
  }
  [[nodiscard]] double* slot_data(std::size_t s) noexcept {
    return interleaved > 0 ? slots[0].data() + s : slots[s].data();
  }
  // Coordinates a slot has.
  [[nodiscard]] std::size_t slot_size() const noexcept {
    return slots.empty() ? 0 : slots[0].size() / stride();
  }
  [[nodiscard]] double at(std::size_t s, std::size_t k) const noexcept {
    return slot_data(s)[k * stride()];
  }
};

// Slot s's values in coordinate order, as a checkpoint and the wire hold them.
[[nodiscard]] std::vector<double> slot_values(const OptimizerState& state, std::size_t s);
// `state` with one vector a slot: the same values, the layout of checkpoints and the wire.
[[nodiscard]] OptimizerState separate_slots(const OptimizerState& state);

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
  // The out-of-place step on the gradient (0.0 + parts[0][i] + parts[1][i] + ...) * scale: the
  // parts (each as long as `from`) added in their order, the same bits as adding them one by
  // one into a zeroed vector and then step_scaled. The star's coordinator passes the workers'
  // gradient sums as they came. This default adds them into `scratch` first; plain sgd and sgd
  // with momentum fuse one or two parts into their own pass (one pass over memory, not two).
  virtual void step_scaled_parts(std::span<const double> from,
                                 std::span<const double* const> parts, double scale,
                                 std::span<double> to, std::vector<double>& scratch);
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
  // step_indices, and in the same pass what its caller does at keys of the same vector right
  // after it (LazyStepWork): in a wide sparse model each of those keys is a cache miss, which in
  // a pass of its own the CPU waits for, and which within the step's arithmetic it need not.
  // The same bits as step_indices and then those loops. This default runs them one after the
  // other; ftrl folds them into its step.
  struct LazyStepWork;
  virtual void step_indices_with(std::span<const std::uint64_t> indices,
                                 std::span<const double> grad_sum, double scale,
                                 std::span<double> params, const LazyStepWork& work);
  [[nodiscard]] virtual const OptimizerState& state() const noexcept = 0;
  virtual void set_state(OptimizerState state) = 0;  // TrainingError when the sizes do not fit
  // The learning rate of the next steps (ftrl: alpha). A schedule sets it before each step.
  virtual void set_lr(double lr) = 0;
  // The step count a learning-rate schedule reads for the next step, when it is not the
  // optimizer's own state().steps (a parameters-mode worker's local step, which goes on across
  // rounds whose optimizer may start afresh), and the run's total of such steps; the count goes
  // on by one per step. No effect without a schedule.
  virtual void set_schedule_step(std::uint64_t step, std::uint64_t total_steps) {
    (void)step;
    (void)total_steps;
  }
};

// The work of step_indices_with beside the step.
struct Optimizer::LazyStepWork {
  // Bit k of marks[k / 64] set for every index k stepped (the keys a checkpoint reads); null: none.
  std::uint64_t* marks = nullptr;
  // After the step: out[j] = params[keys[j]], keys ascending, each below params.size() (the
  // values of the next step's keys, which the star's step messages carry).
  struct Gather {
    std::span<const std::uint32_t> keys;
    double* out = nullptr;
  };
  std::span<const Gather> gathers;
};
// step_indices_with's loops after the step, in the default's order: the marks, then each gather.
void lazy_step_work(std::span<const std::uint64_t> indices, std::span<const double> params,
                    const Optimizer::LazyStepWork& work);

// out = (0.0 + parts[0][i] + parts[1][i] + ...), the parts added in their order; out keeps its
// size, which each part has.
void sum_parts(std::span<const double* const> parts, std::vector<double>& out);

// The optimizer of `config`, wrapped by its lr schedule and clip_norm when it has them (else the
// bare rule, the same bits as before those existed). `total_steps`: the steps of the whole run
// as the schedule counts them, which a cosine schedule without t_max needs (TrainingError at
// its first step when 0).
[[nodiscard]] std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config,
                                                        std::size_t parameter_count,
                                                        std::uint64_t total_steps = 0);

}  // namespace dt::models

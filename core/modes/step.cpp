#include "core/modes/step.hpp"

#include "core/util/error.hpp"
#include "core/util/text.hpp"

#include <cmath>

namespace dt::modes {

void check_batch_loss(const config::Config& config, std::uint64_t step, double loss_sum,
                      std::uint64_t rows) {
  if (rows == 0 || std::isfinite(loss_sum)) return;
  fail<TrainingError>("training diverged at step {}: the batch loss is {}; lower "
                      "training.optimizer.lr (now {}) or normalize the data",
                      step, text::format_double(loss_sum / static_cast<double>(rows)),
                      text::format_double(config.training.optimizer.lr));
}

void apply_gradient_sum(const models::Model& model, models::Optimizer& optimizer,
                        std::span<double> params, std::span<double> grad, double rows) {
  const double inv = 1.0 / rows;
  for (double& g : grad) g *= inv;
  model.add_regularization_gradient(params, grad);
  optimizer.step(params, grad);
}

}  // namespace dt::modes

#include "core/modes/step.hpp"

#include "core/coordinator/session.hpp"
#include "core/coordinator/resume.hpp"
#include "core/modes/lent_params.hpp"
#include "base/error.hpp"
#include "base/text.hpp"
#include "base/timeline.hpp"

#include <cmath>

namespace dt::modes {

void refuse_compressed_sparse_rows(const roles::CoordinatorSession& session) {
  const auto& config = session.config();
  const bool compressed = config.aggregation.compression != config::WireCompression::kNone;
  if (!compressed || !session.plan().source.sparse) return;
  fail<ConfigError>("aggregation.compression {} compresses dense gradients, but {} is read as "
                    "sparse rows (exchanged as keyed gradients, not compressed yet); use "
                    "compression none with this data",
                    config::name_of(config.aggregation.compression), config.data.path.string());
}

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
  apply_gradient_sum(model, optimizer, params, grad, rows, params);
}

void apply_gradient_sum(const models::Model& model, models::Optimizer& optimizer,
                        std::span<const double> from, std::span<double> grad, double rows,
                        std::span<double> to) {
  const double inv = 1.0 / rows;
  if (model.spec().config.l2 == 0.0) {
    // No L2 term: the mean is taken inside the optimizer's pass (the same bits, one pass).
    optimizer.step_scaled(from, grad, inv, to);
    return;
  }
  for (double& g : grad) g *= inv;
  model.add_regularization_gradient(from, grad);
  optimizer.step(from, grad, to);
}

void apply_gradient_parts(const models::Model& model, models::Optimizer& optimizer,
                          std::span<double> params, std::span<const double* const> parts,
                          std::vector<double>& grad, double rows) {
  apply_gradient_parts(model, optimizer, params, parts, grad, rows, params);
}

void apply_gradient_parts(const models::Model& model, models::Optimizer& optimizer,
                          std::span<const double> from, std::span<const double* const> parts,
                          std::vector<double>& grad, double rows, std::span<double> to) {
  if (model.spec().config.l2 == 0.0) {
    optimizer.step_scaled_parts(from, parts, 1.0 / rows, to, grad);
    return;
  }
  grad.resize(from.size());
  models::sum_parts(parts, grad);
  apply_gradient_sum(model, optimizer, from, grad, rows, to);
}

StepTotals tally_replies(const std::vector<protocol::Envelope>& replies,
                         std::vector<double>& worker_loss,
                         std::vector<std::uint64_t>& worker_rows) {
  std::fill(worker_loss.begin(), worker_loss.end(), 0.0);
  std::fill(worker_rows.begin(), worker_rows.end(), 0);
  StepTotals totals;
  for (const auto& reply : replies) {
    const auto ri = static_cast<std::size_t>(reply.rank);
    worker_loss[ri] = protocol::number(reply, "loss_sum");
    worker_rows[ri] = protocol::count(reply, "rows");
    totals.loss_sum += worker_loss[ri];
    totals.rows += worker_rows[ri];
  }
  return totals;
}

void finish_step(roles::CoordinatorSession& session, models::Optimizer& optimizer,
                 std::vector<double>& grad, std::uint64_t step, double loss_sum,
                 std::uint64_t rows, const std::vector<double>& worker_loss,
                 const std::vector<std::uint64_t>& worker_rows, timeline::Lap& lap,
                 std::span<const double* const> parts, LentParams* lent) {
  if (rows > 0) {  // else an empty step (only possible with tiny shards)
    check_batch_loss(session.config(), step, loss_sum, rows);
    auto& params = session.params();
    // In place, or out of place into the buffer that becomes the parameters (lent_params.hpp).
    const std::span<double> to = lent != nullptr ? lent->target() : std::span<double>(params);
    if (parts.empty()) {
      apply_gradient_sum(session.model(), optimizer, params, grad, static_cast<double>(rows),
                         to);
    } else {
      apply_gradient_parts(session.model(), optimizer, params, parts, grad,
                           static_cast<double>(rows), to);
    }
    if (lent != nullptr) lent->swap();
    lap.mark(timeline::Phase::kApply);
    session.add_samples(rows);
    session.record_step(step, loss_sum, rows, worker_loss, worker_rows);
  }
  session.step_boundary(step);
}

void save_coordinator_state(roles::CoordinatorSession& session, const models::Optimizer& optimizer,
                            checkpoint::Checkpoint& out, const std::vector<std::uint32_t>* at) {
  if (at == nullptr) {
    checkpoint::put(out, "parameters", session.params());
  } else {
    checkpoint::ArrayBuilder params("parameters", session.params().size());
    params.add_at(session.params(), *at);
    params.finish(out);
  }
  roles::put_optimizer(out, "optimizer", optimizer.state(), at);
}

std::unique_ptr<models::Optimizer> coordinator_optimizer(roles::CoordinatorSession& session,
                                                         const checkpoint::Checkpoint* from) {
  auto optimizer = models::make_optimizer(session.config().training.optimizer,
                                          session.params().size(),
                                          session.schedule().total_steps());
  if (from != nullptr) optimizer->set_state(roles::get_optimizer(*from, "optimizer"));
  return optimizer;
}

}  // namespace dt::modes

#pragma once
// What the synchronous modes (gradients star, sharded servers, ring, tensor) do alike with a
// step's summed gradient, kept in one place so their numbers and messages cannot drift apart.

#include "core/config/config.hpp"
#include "core/models/model.hpp"
#include "core/modes/mode.hpp"
#include "core/models/optim.hpp"
#include "base/timeline.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace dt::roles {
class CoordinatorSession;
}  // namespace dt::roles

namespace dt::checkpoint {
struct Checkpoint;
}

namespace dt::modes {

class LentParams;  // lent_params.hpp

// aggregation.compression compresses dense gradients: data read as sparse rows (found so from
// the file too, as a LIBSVM file under data.sparse: auto) exchange keyed gradients, which are
// not compressed yet. ConfigError (exit 2) for such a run; nothing otherwise.
void refuse_compressed_sparse_rows(const roles::CoordinatorSession& session);

// A non-finite batch loss stops the run before its update, naming the step (1-based) and the
// learning rate to lower. Steps without rows are not checked (they have no loss).
void check_batch_loss(const config::Config& config, std::uint64_t step, double loss_sum,
                      std::uint64_t rows);

// `grad` holds a gradient SUM over `rows` rows: it becomes the mean, gets the L2 term, and the
// optimizer takes one step on `params`. The star's coordinator and every ring replica call this
// same function, so the two topologies differ only in how the sum was added up.
void apply_gradient_sum(const models::Model& model, models::Optimizer& optimizer,
                        std::span<double> params, std::span<double> grad, double rows);
// The same step out of place: `to` gets the new parameters, `from` keeps the old (same bits).
void apply_gradient_sum(const models::Model& model, models::Optimizer& optimizer,
                        std::span<const double> from, std::span<double> grad, double rows,
                        std::span<double> to);

// The same step on a gradient sum given as `parts` (each worker's sum, in rank order), added
// as models::sum_parts adds them: inside the optimizer's pass when it can
// (Optimizer::step_scaled_parts), else into `grad` first.
void apply_gradient_parts(const models::Model& model, models::Optimizer& optimizer,
                          std::span<double> params, std::span<const double* const> parts,
                          std::vector<double>& grad, double rows);
// The same step out of place: `to` gets the new parameters, `from` keeps the old (same bits).
void apply_gradient_parts(const models::Model& model, models::Optimizer& optimizer,
                          std::span<const double> from, std::span<const double* const> parts,
                          std::vector<double>& grad, double rows, std::span<double> to);

// Each worker's loss sum and rows of a step from its reply ("loss_sum", "rows"), into
// worker_loss/worker_rows by rank (zero for ranks without a reply), and their totals, added in
// the replies' (rank) order.
struct StepTotals {
  double loss_sum = 0;
  std::uint64_t rows = 0;
};
[[nodiscard]] StepTotals tally_replies(const std::vector<protocol::Envelope>& replies,
                                       std::vector<double>& worker_loss,
                                       std::vector<std::uint64_t>& worker_rows);

// The end of a coordinator-side synchronous step (star, tensor): skips an empty step, checks the
// loss, applies the mean gradient to the session's parameters, records the step's losses, and
// reports the step boundary (a checkpoint when one is due). output.timeline: `lap` (the step's,
// last marked at the gather's end) marks the `apply` span, which includes summing the replies.
// `parts`: when given, `grad` is scratch and the gradient sum is theirs (apply_gradient_parts).
// `lent`: when given, the parameters' buffer is lent to the step's requests, so the step goes
// out of place into lent->target(), which then becomes the parameters (lent_params.hpp).
void finish_step(roles::CoordinatorSession& session, models::Optimizer& optimizer,
                 std::vector<double>& grad, std::uint64_t step, double loss_sum,
                 std::uint64_t rows, const std::vector<double>& worker_loss,
                 const std::vector<std::uint64_t>& worker_rows, timeline::Lap& lap,
                 std::span<const double* const> parts = {}, LentParams* lent = nullptr);

// The state of a mode whose coordinator holds the parameters and the one optimizer (star,
// tensor): "parameters" and "optimizer" of the last completed step. `at`: when given, the keys
// outside it (ascending) are zero in both (the keys a sparse run has touched: read only those).
void save_coordinator_state(roles::CoordinatorSession& session, const models::Optimizer& optimizer,
                            checkpoint::Checkpoint& out,
                            const std::vector<std::uint32_t>* at = nullptr);
// The optimizer such a mode continues with: the checkpoint's state, or a fresh one (`from` null).
[[nodiscard]] std::unique_ptr<models::Optimizer> coordinator_optimizer(
    roles::CoordinatorSession& session, const checkpoint::Checkpoint* from);

// A mode whose coordinator holds the parameters and the one optimizer (star, tensor): its
// checkpoint half, and the optimizer its coordinate() steps (restored on resume).
class CoordinatorOptimizerMode : public Mode {
 public:
  bool save_state(roles::CoordinatorSession& session, std::uint64_t /*step*/,
                  checkpoint::Checkpoint& out) override {
    if (!optimizer_) return false;
    std::vector<std::uint32_t> at;  // the state of the last completed step
    save_coordinator_state(session, *optimizer_, out, touched_keys(at) ? &at : nullptr);
    return true;
  }
  void restore_state(roles::CoordinatorSession& session,
                     const checkpoint::Checkpoint& from) override {
    optimizer_ = coordinator_optimizer(session, &from);
  }
  void prepare(roles::CoordinatorSession& session) override { (void)optimizer(session); }

 protected:
  // The keys outside which parameters and optimizer state are zero, ascending, into `out`; false
  // when not known (the checkpoint then reads the width).
  [[nodiscard]] virtual bool touched_keys(std::vector<std::uint32_t>& /*out*/) const {
    return false;
  }
  [[nodiscard]] models::Optimizer& optimizer(roles::CoordinatorSession& session) {
    if (!optimizer_) optimizer_ = coordinator_optimizer(session, nullptr);
    return *optimizer_;
  }

 private:
  std::unique_ptr<models::Optimizer> optimizer_;  // coordinator side
};

}  // namespace dt::modes

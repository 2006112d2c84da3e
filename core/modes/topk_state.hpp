#pragma once
// aggregation.compression {topk: {ratio}} on the coordinator's side of gradients star and
// sharded servers: the rank-order sum of the workers' top-k frames (star), and the workers'
// residuals in checkpoints.
//
// A residual is worker state. A worker sends it along with its reply (an array) for each step
// after which a checkpoint is due (residual_due: fault_tolerance.checkpoint_every, which both
// sides read from the config), the coordinator keeps those of the step and writes them into the
// checkpoint as "topk_residual.<rank>"; on --resume it sends each worker its own back
// (kResumeState) before the first step, so a resumed run gives the bytes of the run that never
// stopped. A stop between periodic checkpoints writes none (save). A checkpoint without them
// (written without top-k, or with another worker count) resumes with zero residuals, and says so.

#include "core/config/config.hpp"
#include "core/protocol/compression.hpp"
#include "core/protocol/protocol.hpp"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace dt::roles {
class CoordinatorSession;
}
namespace dt::checkpoint {
struct Checkpoint;
}

namespace dt::modes {

// Does the worker send its residual with its reply for the step that completes `completed`?
[[nodiscard]] bool residual_due(const config::Config& config, std::uint64_t completed);

class TopkState {
 public:
  // grad = the replies' top-k frames (array 0) added in their (rank) order, from 0.
  void sum_in_order(const std::vector<protocol::Envelope>& replies, std::vector<double>& grad,
                    protocol::CompressionTally& tally);
  // The residuals the replies carry (array `index`: 1 in the star, after the gradient; 0 with
  // servers), as the state after step `completed`.
  void keep_residuals(const std::vector<protocol::Envelope>& replies, std::uint64_t completed,
                      std::size_t index);
  // Into a checkpoint of step `step`: the residuals kept for that step. False (top-k runs only)
  // when none were kept for it (the stop of Ctrl-C or SIGTERM between two periodic checkpoints):
  // the mode then writes no checkpoint and the last periodic one stands, so a resume is exact.
  [[nodiscard]] bool save(const config::Config& config, std::uint64_t step,
                          checkpoint::Checkpoint& out) const;
  // Resumed: each worker its residual of the checkpoint (top-k runs only); resumed without
  // top-k from a checkpoint with residuals, a warning that they are dropped.
  static void restore(roles::CoordinatorSession& session, const checkpoint::Checkpoint& from);

 private:
  std::optional<std::uint64_t> kept_step_;
  std::vector<std::pair<int, std::vector<double>>> kept_;  // by rank, ascending
};

}  // namespace dt::modes

#pragma once
// training.clip_norm in `async` mode over several parameter servers: a push is split across the
// servers, which apply it independently (no exchange between them, no round), so the worker
// computes the clip factor of its whole gradient before splitting it and sends the factor with
// every server's part (ServerClient::push's `clip`); each server scales its part, with its L2
// term, by it (param_server.cpp). The gradient whose norm is taken is the server's: the sum over
// the batch times 1/rows, plus l2 * w on regularized keys, here at the parameters the worker
// computed the gradient from, summed in index order (one worker gives the one-server run's
// bits). docs/optimizers.md, "Gradient clipping".

#include "core/models/model.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace dt::modes {

class PushClip {
 public:
  PushClip(const models::Model& model, double clip);
  // Dense: `params` and `grad_sum` over every key. 1 for an empty batch.
  [[nodiscard]] double factor(std::span<const double> params, std::span<const double> grad_sum,
                              std::uint64_t rows) const;
  // Keyed: the values and the gradient sum at `indices` (ascending), the others' being zero.
  [[nodiscard]] double factor_at(std::span<const std::uint64_t> indices,
                                 std::span<const double> values,
                                 std::span<const double> grad_sum, std::uint64_t rows) const;

  struct Run {  // keys [begin, end)
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
  };

 private:
  std::vector<Run> regularized_;  // the L2 term's keys, ascending runs
  double l2_ = 0.0;
  double clip_ = 0.0;
};

}  // namespace dt::modes

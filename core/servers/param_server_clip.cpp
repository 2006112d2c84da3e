// training.clip_norm with several parameter servers, synchronous rounds: each server's slice
// holds part of the round's averaged gradient, so the global norm is exchanged between them
// (NormExchange, owned by the ServerGroup). A server that has summed its round posts the sum of
// the squares of its part (dense: the whole slice; keyed: the touched offsets, the others' being
// zero) and waits for the factor; meanwhile its loop takes in the coordinator's news and beats,
// but reads no message (the workers wait for this round's slice before sending more). The last
// server to post finds the factor at once and steps without a wait.

#include "core/servers/param_server.hpp"

#include "core/servers/norm_exchange.hpp"

namespace dt::roles {

void ParameterServer::exchange_norm(std::chrono::milliseconds wait) {
  std::uint64_t round = 0;
  {
    std::lock_guard lock(mu_);
    round = stats_.version;
  }
  if (!round_.waits) {  // the round just summed: post this slice's part once
    double sum = 0.0;
    if (round_.rows > 0) {
      for (const double g : keyed_ ? sums_ : grad_) sum += g * g;
    }
    options_.norms->post(round, options_.index, sum);
    round_.waits = true;
  }
  const auto factor = options_.norms->factor(round, wait);
  if (!factor) return;
  round_.waits = false;
  finish_round(*factor);
}

}  // namespace dt::roles

#pragma once
// A ring replica's state on the wire (core/modes/ring.cpp): the parameters and the optimizer's
// slots as arrays, its step count as a field. It travels in kResumeState (model.init, a resumed
// run, a member handing its state to a replacement or a joiner) and after a kRingLoss reply's
// losses (the leader's, when a checkpoint is due).

#include "core/models/optim.hpp"
#include "core/protocol/protocol.hpp"

#include <cstddef>
#include <span>

namespace dt::modes::ring {

// Appends [parameters, optimizer slot 0, slot 1, ...] to `e`'s arrays.
void put_state(protocol::Envelope& e, std::span<const double> params,
               const models::OptimizerState& optimizer);

// The optimizer state of `e` (`p` parameters); `first`: the index of the parameters' array
// (kRingLoss has the step losses before it).
[[nodiscard]] models::OptimizerState read_optimizer(const protocol::Envelope& e, std::size_t p,
                                                    std::size_t first = 0);

}  // namespace dt::modes::ring

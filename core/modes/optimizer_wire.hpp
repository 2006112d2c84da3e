#pragma once
// An optimizer state on the wire: its step count and slot count as fields, each slot as an
// array. Shared by the ring's replica state (ring_state.hpp) and parameters mode's clients
// (optimizer_state: keep).

#include "core/models/optim.hpp"
#include "core/protocol/protocol.hpp"

#include <cstddef>

namespace dt::modes {

// Sets the fields and appends one array a slot, after the arrays already in `e`.
void put_optimizer(protocol::Envelope& e, const models::OptimizerState& state);

// The optimizer state of `e`, its slots (`p` values each) from array `first_slot` on.
[[nodiscard]] models::OptimizerState read_optimizer_slots(const protocol::Envelope& e,
                                                          std::size_t first_slot, std::size_t p);

}  // namespace dt::modes

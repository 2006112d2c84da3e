#include "core/modes/optimizer_wire.hpp"

#include "transports/wire.hpp"

#include <span>

namespace dt::modes {

void put_optimizer(protocol::Envelope& e, const models::OptimizerState& state) {
  e.fields["optimizer_steps"] = state.steps;
  // One array a slot whatever the state's layout (ftrl's interleaved records): the same bytes.
  e.fields["optimizer_slots"] = state.slot_count();
  for (std::size_t s = 0; s < state.slot_count(); ++s) {
    if (state.interleaved == 0) {
      e.arrays.push_back(wire::to_bytes(std::span<const double>(state.slots[s])));
    } else {
      e.arrays.push_back(wire::to_bytes(std::span<const double>(models::slot_values(state, s))));
    }
  }
}

models::OptimizerState read_optimizer_slots(const protocol::Envelope& e, std::size_t first_slot,
                                            std::size_t p) {
  models::OptimizerState state;
  state.steps = protocol::count(e, "optimizer_steps");
  const auto slots = protocol::count(e, "optimizer_slots");
  for (std::size_t i = 0; i < slots; ++i) {
    const auto values = protocol::doubles(e, first_slot + i, p);
    state.slots.emplace_back(values.begin(), values.end());
  }
  return state;
}

}  // namespace dt::modes

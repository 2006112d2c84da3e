#include "core/modes/ring_state.hpp"

#include "transports/wire.hpp"

namespace dt::modes::ring {

void put_state(protocol::Envelope& e, std::span<const double> params,
               const models::OptimizerState& optimizer) {
  e.fields["optimizer_steps"] = optimizer.steps;
  e.fields["optimizer_slots"] = optimizer.slots.size();
  e.arrays.push_back(wire::to_bytes(params));
  for (const auto& slot : optimizer.slots) {
    e.arrays.push_back(wire::to_bytes(std::span<const double>(slot)));
  }
}

models::OptimizerState read_optimizer(const protocol::Envelope& e, std::size_t p,
                                      std::size_t first) {
  models::OptimizerState state;
  state.steps = protocol::count(e, "optimizer_steps");
  const auto slots = protocol::count(e, "optimizer_slots");
  for (std::size_t i = 0; i < slots; ++i) {
    const auto values = protocol::doubles(e, first + 1 + i, p);
    state.slots.emplace_back(values.begin(), values.end());
  }
  return state;
}

}  // namespace dt::modes::ring

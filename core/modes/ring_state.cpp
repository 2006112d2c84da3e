#include "core/modes/ring_state.hpp"
#include "core/modes/optimizer_wire.hpp"

#include "transports/wire.hpp"

namespace dt::modes::ring {

void put_state(protocol::Envelope& e, std::span<const double> params,
               const models::OptimizerState& optimizer) {
  e.arrays.push_back(wire::to_bytes(params));
  put_optimizer(e, optimizer);
}

models::OptimizerState read_optimizer(const protocol::Envelope& e, std::size_t p,
                                      std::size_t first) {
  return read_optimizer_slots(e, first + 1, p);
}

}  // namespace dt::modes::ring

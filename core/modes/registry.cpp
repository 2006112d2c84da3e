// The one place that maps aggregation.mode to its implementation.

#include "core/modes/mode.hpp"
#include "core/util/error.hpp"

namespace dt::modes {

std::unique_ptr<Mode> make_mode(const config::AggregationConfig& aggregation) {
  switch (aggregation.mode) {
    case config::AggregationMode::kGradients:
      // K > 1 parameter servers; K = 1 keeps the coordinator as the one server.
      return aggregation.servers > 1 ? make_sharded_gradients_mode() : make_gradients_mode();
  }
  fail<ConfigError>("aggregation.mode '{}' is not available", config::name_of(aggregation.mode));
}

}  // namespace dt::modes

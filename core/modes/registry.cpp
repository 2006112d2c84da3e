// The one place that maps aggregation.mode to its implementation.

#include "core/modes/mode.hpp"
#include "core/util/error.hpp"

namespace dt::modes {

std::unique_ptr<Mode> make_mode(const config::AggregationConfig& aggregation) {
  switch (aggregation.mode) {
    case config::AggregationMode::kGradients: return make_gradients_mode();
  }
  fail<ConfigError>("aggregation.mode '{}' is not available", config::name_of(aggregation.mode));
}

}  // namespace dt::modes

// The one place that maps aggregation.mode to its implementation.

#include "core/modes/mode.hpp"
#include "core/coordinator/plan.hpp"
#include "base/error.hpp"

namespace dt::modes {

std::unique_ptr<Mode> make_mode(const config::Config& config) {
  const auto& aggregation = config.aggregation;
  switch (aggregation.mode) {
    case config::AggregationMode::kGradients:
      if (aggregation.topology == config::Topology::kRing) return make_ring_mode();
      // Tensor parallelism is gradients mode over star with the model split; the config
      // rejects parallelism.tensor > 1 with any other mode, topology or servers > 1.
      if (aggregation.topology == config::Topology::kStar && config.parallelism.tensor > 1 &&
          aggregation.servers == 1) {
        return make_tensor_mode();
      }
      if (aggregation.topology == config::Topology::kStar && config.parallelism.tensor == 1) {
        // K > 1 parameter servers; K = 1 keeps the coordinator as the one server.
        return aggregation.servers > 1 ? make_sharded_gradients_mode() : make_gradients_mode();
      }
      break;
    case config::AggregationMode::kParameters:
      // The config refuses servers > 1, ring and tensor parallelism with this mode.
      return make_parameters_mode();
    case config::AggregationMode::kAsync:
      return make_async_mode();
  }
  fail<ConfigError>("aggregation.mode {} with topology {}, {} servers and parallelism.tensor {} "
                    "is not available yet",
                    config::name_of(aggregation.mode), config::name_of(aggregation.topology),
                    aggregation.servers, config.parallelism.tensor);
}

StepCount count_steps(const config::Config& config, const roles::Plan& plan) {
  const auto epochs = static_cast<std::uint64_t>(config.training.epochs);
  switch (config.aggregation.mode) {
    case config::AggregationMode::kParameters:
      return count_parameters_steps(config, plan);
    case config::AggregationMode::kAsync: {
      StepCount count;
      for (const auto rows : plan.shard_rows) {
        count.per_epoch += roles::local_steps_per_epoch(config.training, rows);
      }
      count.total = count.per_epoch * epochs;
      return count;
    }
    case config::AggregationMode::kGradients:
      break;
  }
  return {.per_epoch = plan.steps_per_epoch, .total = plan.steps_per_epoch * epochs};
}

}  // namespace dt::modes

// A worker's load of its shard, timed (shard_load.hpp).

#include "core/worker/shard_load.hpp"

#include "base/error.hpp"
#include "base/log.hpp"

#include <chrono>

namespace dt::roles {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

ShardLoad load_worker_shard(const config::Config& config, const protocol::Setup& setup,
                            data::LabelKind kind, std::uint32_t rank, bool remote_path) {
  const auto start = Clock::now();
  ShardLoad load;
  try {
    load.shard = data::load_shard(config, setup.source, setup.segments, kind);
  } catch (DataError& e) {
    if (remote_path && !config.data.synthetic) {
      e.add_context("reading the coordinator's data path on this host (put the data on a "
                    "shared filesystem, or give this worker its own copy with --data FILE)");
    }
    throw;
  }
  const data::Shard& shard = load.shard;
  load.loaded = protocol::make_loaded(
      {static_cast<std::uint64_t>(shard.y.size()), data::column_stats(shard),
       kind == data::LabelKind::kCategorical ? data::distinct_labels(shard)
                                             : std::vector<std::string>{}});
  load.loaded.rank = rank;
  load.seconds = seconds_since(start);
  log::info("loaded {} rows of {} feature columns in {:.3f} s", shard.y.size(), shard.x.cols(),
            load.seconds);
  return load;
}

void finish_shard(const protocol::Finalize& finalize, data::LabelKind kind, ShardLoad& load) {
  const auto start = Clock::now();
  data::apply(finalize.normalization, load.shard.x);
  if (kind == data::LabelKind::kCategorical) data::assign_classes(load.shard, finalize.classes);
  load.seconds += seconds_since(start);
}

}  // namespace dt::roles

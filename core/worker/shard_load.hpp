#pragma once
// A worker's shard from the start of its load to the shard ready for step 1 (worker.cpp): the
// rows read and checked and their statistics for the coordinator (kLoaded), then, once the
// coordinator's kFinalize is in, normalized and given their class indices. It times this
// worker's own part of it: summary.json's worker_stats `load_seconds` (docs/outputs.md). The
// wait for the coordinator's kFinalize in between (the slowest worker's load, the merge) is
// not counted, so each worker's figure is its own work whatever the others do.

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"
#include "core/protocol/protocol.hpp"

#include <cstdint>

namespace dt::roles {

struct ShardLoad {
  data::Shard shard;
  protocol::Envelope loaded;  // the kLoaded reply to send: rows, statistics, labels
  double seconds = 0;         // load_seconds so far
};

// Reads the rows of `setup`'s segments and makes the kLoaded reply of `rank`. `remote_path`:
// the data path is the coordinator's (a worker that joined from elsewhere without --data), said
// in a DataError's context.
[[nodiscard]] ShardLoad load_worker_shard(const config::Config& config,
                                          const protocol::Setup& setup, data::LabelKind kind,
                                          std::uint32_t rank, bool remote_path);

// The shard ready for step 1: normalized and labelled as `finalize` says.
void finish_shard(const protocol::Finalize& finalize, data::LabelKind kind, ShardLoad& load);

}  // namespace dt::roles

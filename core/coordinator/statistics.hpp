#pragma once
// The statistics of every training row, which the normalization and the class list are made
// of: the workers' kLoaded replies merged in rank order into the Finalize each worker is sent,
// identical in every process. On a resumed elastic run (resume_membership.hpp) the shards of
// ranks that had left are read by the coordinator itself, so the merge gives the same bits.

#include "core/config/config.hpp"
#include "core/coordinator/plan.hpp"
#include "core/coordinator/result.hpp"
#include "core/coordinator/warm_start.hpp"
#include "core/protocol/protocol.hpp"

#include <string>
#include <vector>

namespace dt::roles {

// Merges the replies (one per rank, in rank order) into the Finalize; sets each worker's rows
// in `result` and warns of constant columns. `init`: a warm start's model, whose statistics win.
[[nodiscard]] protocol::Finalize merge_loaded(const config::Config& config, const Plan& plan,
                                              const std::vector<protocol::Envelope>& replies,
                                              std::vector<std::string> labels, RunResult& result,
                                              const InitialModel* init);

// The kLoaded replies of the ranks started, in rank order, with a reply made here for each
// departed rank (its shard read by the coordinator, as its worker would have). `departed`:
// by rank, or empty.
[[nodiscard]] std::vector<protocol::Envelope> with_departed_shards(
    const config::Config& config, const Plan& plan, const std::vector<bool>& departed,
    std::vector<protocol::Envelope> replies);

}  // namespace dt::roles

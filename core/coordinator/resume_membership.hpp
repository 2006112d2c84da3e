#pragma once
// fault_tolerance.elastic across `run --resume` (docs/elastic.md, "Checkpoints and --resume").
//
// A checkpoint of an elastic run keeps the membership at its step (CoordinatorSession::
// membership_state: the record summary.json shows, the ranks still training, every deal of a
// departed rank's rows so far and the ranks not dealt yet). Resumed with the same worker count,
// the ranks that had left (or were lost under `continue`) are not started again: the
// coordinator reads their shards' statistics itself, so the normalization is the same bits, and
// the deals are sent again to the same ranks with the same shares, so the survivors hold the
// same rows in the same order: the run goes on as the one that never stopped.
//
// Resumed with another worker count (shards.count; elastic gradients over star with one server
// only), the plan is the new count's, made afresh; training goes on from the first step of the
// epoch after the checkpoint's (the rest of the interrupted epoch is skipped, so no row is
// trained twice in an epoch), and membership records a `resize` event.
//
// Threading: the coordinator thread only.

#include "core/config/config.hpp"
#include "core/coordinator/plan.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::roles {

class Checkpointer;

// Why this config cannot resume a checkpoint of another worker count (nullopt: it can).
[[nodiscard]] std::optional<std::string> resize_refusal(const config::Config& config);

// The step a resumed run starts at: the checkpoint's, or after a resize the next epoch's first.
[[nodiscard]] std::uint64_t resize_start_step(std::uint64_t step, std::uint64_t steps_per_epoch);

// By rank: true for a rank that had left the run at the checkpoint `--resume` continues from
// (same worker count, elastic), and is not started again. Empty when none did.
[[nodiscard]] std::vector<bool> departed_at_resume(const Checkpointer* checkpointer,
                                                   const config::Config& config, int ranks);

}  // namespace dt::roles

#pragma once
// fault_tolerance.elastic across `run --resume` (docs/elastic.md, "Checkpoints and --resume").
//
// A checkpoint of an elastic run keeps the membership at its step (CoordinatorSession::
// membership_state: the record summary.json shows, the ranks still training, every deal of a
// departed rank's rows so far and the ranks not dealt yet). Resumed with the same worker count,
// the ranks that had left (or were lost under `continue`) are not started again: the
// coordinator reads their shards' statistics itself, so the normalization is the same bits, and
// the deals are sent again to the same ranks with the same shares, so the survivors hold the
// same rows in the same order: the run goes on as the one that never stopped. A joiner's slot
// alive at the checkpoint is started again by the coordinator, a local worker with no rows, and
// the last re-plan is dealt again, so the slot's worker holds the joiner's rows.
//
// Resumed with another worker count (shards.count; elastic gradients over the star, the ring or
// sharded servers, parameters mode and async), the plan is the new count's, made afresh; training
// goes on from the first step of the epoch after the checkpoint's (the rest of the interrupted
// epoch is skipped, so no row is trained twice in an epoch; parameters mode: from the
// checkpoint's round, each slot from its own next local epoch, parameters_resize.hpp), and
// membership records a `resize` event. Async counts its updates on from the checkpoint's and
// skips to its own next epoch (core/modes/async_resume.hpp), which also re-plans an async run
// resumed after a join.
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

struct ResumePoint;

// Sets point.from_workers and point.start_step (resume.hpp) for a checkpoint of another worker
// count, or of an elastic run left below min_workers (it then resumes with every rank of the
// config: a resize too), and puts the checkpoint's count into `fixed` (the fixed keys of the
// config now) so that the resume checks pass. Returns why this config cannot take another
// worker count when the count differs and it cannot (nullopt otherwise).
[[nodiscard]] std::optional<std::string> plan_resume_membership(ResumePoint& point,
                                                                const config::Config& config,
                                                                const Plan& plan,
                                                                nlohmann::json& fixed);

// The workers training at the checkpoint of `manifest` when this config resumes it as a resize
// (another worker count, or an elastic run left below min_workers); 0 when it is not one.
[[nodiscard]] int resize_from(const nlohmann::json& manifest, const config::Config& config);

// By rank: true for a rank that had left the run at the checkpoint `--resume` continues from
// (same worker count, elastic), and is not started again; false for the others, up to the
// highest join slot alive at the checkpoint (`slots`: the run's ranks with its join slots),
// which is started again like the first `ranks`. Empty when every rank of the config trained
// and no joiner did.
[[nodiscard]] std::vector<bool> departed_at_resume(const Checkpointer* checkpointer,
                                                   const config::Config& config, int ranks,
                                                   int slots);

}  // namespace dt::roles

#pragma once
// fault_tolerance.elastic: the record of a run's membership in summary.json ("membership"):
//   {"min_workers", "max_workers", "workers": at the start,
//    "events": [{"event": "leave", "rank", "pid", "step", "workers": after it,
//                "reassigned": {"from_epoch", "rows", "to": [{"rank", "rows"}]}}],
//    "rows_per_epoch": [training rows in each epoch's steps]}
// `step` is the last step the leaver trained (loss.csv's numbering); the steps after it run
// without it. rows_per_epoch shows the re-plan: from the epoch after a leave every training
// row is in it once. The CoordinatorSession keeps it (session_membership.cpp); null without
// elastic, so other runs' summaries stay as they were.

#include "core/config/config.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace dt::roles {
class CoordinatorSession;

[[nodiscard]] nlohmann::json start_membership(const config::Config& config, int workers);
// Adds `rows` to epoch `epoch`'s count (0-based).
void count_epoch_rows(nlohmann::json& membership, std::uint64_t epoch, std::uint64_t rows);
// Whether `rank` left the run on purpose (null membership: no), and its leave event (or null).
[[nodiscard]] bool has_left(const nlohmann::json& membership, int rank);
// The last step `rank` trained before it left (loss.csv's numbering); none if it did not leave.
[[nodiscard]] std::optional<std::uint64_t> left_after(const nlohmann::json& membership, int rank);
// The rank's latest leave event (a slot a joiner took may have left twice); null if none.
[[nodiscard]] nlohmann::json* leave_event(nlohmann::json& membership, int rank);
// Whether `rank` was dealt rows of another (a taker in a deal of `dealt`, the session's record
// of deals and re-plans): then its rows are more than its plan shard, and passing on only that
// shard would drop the rest.
[[nodiscard]] bool holds_dealt_rows(const nlohmann::json& dealt, int rank);
// The leave of `rank`, its rows dealt from `from_epoch` to `to` ([{"rank", "rows"}]).
void note_rows_dealt(nlohmann::json& membership, int rank, std::uint64_t from_epoch,
                     std::uint64_t rows, const nlohmann::json& to);
// Sends `lost`'s rows to `takers` (kReassign: share k of m, from epoch from_epoch(taker)) and
// gathers their acknowledgements: returns [{"rank", "rows"}], and counts the rows in their
// worker_stats. Shared by `continue` (reassign_lost_rows) and planned leaves.
[[nodiscard]] nlohmann::json deal_rows(CoordinatorSession& session, int lost,
                                       const std::vector<int>& takers,
                                       const std::function<std::uint64_t(int)>& from_epoch);

}  // namespace dt::roles

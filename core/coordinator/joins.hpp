#pragma once
// fault_tolerance.elastic: what the CoordinatorSession keeps about workers joining a running
// job (`disttrain worker --connect ADDR --join`; session_joins.cpp, docs/elastic.md). Owned by
// the session and used from its thread only.

#include "core/config/config.hpp"
#include "core/coordinator/plan.hpp"
#include "core/protocol/protocol.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace dt::roles {

class CoordinatorSession;

// A joiner that said hello and waits for its admission at a step boundary.
struct PendingJoin {
  std::string peer;  // the identity its connection uses
  protocol::Hello hello;
};

struct JoinState {
  protocol::Envelope setup;           // what a joiner is sent first: the config, no rows
  std::deque<PendingJoin> pending;    // in the order they said hello
  std::vector<bool> used;             // per rank slot: a worker held it at some time
  std::vector<bool> taken_over;       // per rank slot: held now by a worker that joined
  bool replan = false;                // a join since the last re-plan: re-deal at the next epoch
  bool replanned = false;             // the rows follow the last re-plan, not the plan's shards
  std::size_t next_admit = 0;         // admit_at_steps: the next entry to honour
  std::string below_min;              // a leave with its step in hand left too few: why (the
                                      // wait for joiners comes once that step is complete)
};

// Every training row of the plan, its shards in rank order: what a re-plan deals.
[[nodiscard]] std::vector<data::Segment> rows_in_plan_order(const Plan& plan);

// A re-plan: every training row dealt among `members` (share k of m to the k-th, from
// from_epoch(its rank)), as deal_shares does; a member not alive now (a replay on --resume) is
// skipped, its share kept.
[[nodiscard]] nlohmann::json deal_every_row(CoordinatorSession& session,
                                            const std::vector<int>& members,
                                            const std::function<std::uint64_t(int)>& from_epoch);

// Deals the rows of `segments` (of `source`) among `members`: member k of m is sent a
// kReassign to keep rows k, k + m, ... of them from epoch from_epoch(its rank) (with `fields`
// added), and their acknowledgements are gathered: [{"rank", "rows"}] in member order. Lost
// and left rows (membership.hpp's deal_rows) and re-plans (replan_rows) are all dealt so.
[[nodiscard]] nlohmann::json deal_shares(CoordinatorSession& session,
                                         const std::vector<int>& members,
                                         const data::SourceInfo& source,
                                         const std::vector<data::Segment>& segments,
                                         const std::function<std::uint64_t(int)>& from_epoch,
                                         const nlohmann::json& fields);

}  // namespace dt::roles

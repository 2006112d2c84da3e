#pragma once
// async mode's joins (fault_tolerance.elastic, docs/elastic.md): a worker started with
// `disttrain worker --connect ADDR --join` says hello to the coordinator, which queues it in
// every wait (the long gather of the workers' kDone included) and admits it at its next drain
// of server 0's log, between two pushes: a free rank slot, the config, the normalization. Then
// every training row is re-dealt among the workers server 0 will send a slice again and the
// joiner (share k of m: rows k, k + m, ... of the plan's shards in rank order): the others'
// shares ride on their next slice (an async worker hears nothing from the coordinator while it
// trains), the joiner's on its kServers message, which names the servers as a starting
// worker's does. Each takes its share as its whole shard from the run's next epoch (by the
// updates applied, the log's epoch axis), or its own next local epoch when it is past that.
// The joiner trains those epochs only, from a fresh step clock on every server.
// Coordinator thread only.

#include "core/coordinator/session.hpp"
#include "core/modes/async_lost.hpp"
#include "core/servers/server_group.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dt::modes {

class AsyncJoins {
 public:
  AsyncJoins(roles::CoordinatorSession& session, roles::ServerGroup& servers, LostWorkers& lost)
      : session_(session), servers_(servers), lost_(lost) {}

  // At each drain, `applied` updates done: admits the joiners waiting (with admit_at_steps,
  // once `applied` has reached the next listed step, waiting for one there) and deals them in.
  void poll(std::uint64_t applied);
  // After training: each member's epoch of each re-plan (its `done` says which it took it
  // from) in the join event's replanned.to.
  void settle(const std::vector<protocol::Envelope>& done);

 private:
  void take(int rank, std::uint64_t applied);

  roles::CoordinatorSession& session_;
  roles::ServerGroup& servers_;
  LostWorkers& lost_;
  std::size_t next_ = 0;  // admit_at_steps: the next entry to honour
};

}  // namespace dt::modes

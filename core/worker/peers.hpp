#pragma once
// Peer links between a run's workers (ring topology, tensor parallelism): when they are opened
// and how the endpoints travel. The collectives themselves live in transports/collectives.
//
//   worker       run_worker opens the peer listener during setup, only when
//                needs_peer_links(config); sends its endpoint in kReady ("peer_endpoint"); the
//                common loop hands kPeers to the session; modes use WorkerSession::group().
//   coordinator  CoordinatorSession::share_peer_endpoints(ready replies) sends every worker the
//                list (kPeers) right after kReady, before any training message.
// Star runs open nothing and send no kPeers: their wire traffic is unchanged.

#include "core/config/config.hpp"
#include "core/worker/worker.hpp"
#include "transports/collectives/peer_links.hpp"

#include <memory>

namespace dt::roles {

class HeartbeatClient;

// This worker's peer links, listening on the worker's transport (ipc: its own socket directory;
// tcp: the worker's host; inproc: the run's shared context). Waits on peers give up when the
// coordinator is lost or the run is cancelled, like every other worker wait. A replacement for a
// lost worker (`generation` > 0, that of its setup) listens under a name of its own: the lost
// worker's peers still hold connections to the old ipc path, which reconnect on their own, and
// one reconnecting to the replacement would take its identity over from the new connection
// (ROUTER handover) and lose what that carries.
[[nodiscard]] std::unique_ptr<collectives::PeerLinks> open_peer_links(
    transport::Transport& transport, const WorkerOptions& options, const HeartbeatClient& heartbeat,
    const config::Config& config, std::uint32_t generation = 0);

}  // namespace dt::roles

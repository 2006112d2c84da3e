#include "core/worker/peers.hpp"

#include "core/protocol/heartbeat.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/resources.hpp"
#include "transports/collectives/ring.hpp"
#include "transports/transport.hpp"

#include <unistd.h>

#include <algorithm>

namespace dt::roles {
namespace {

// A peer's silence is not a liveness signal: it may be computing a large batch, or waiting on
// its own predecessor. The coordinator watches every worker (exit status, heartbeats) and ends
// the run within worker_timeout_ms when one is lost; this bound is the backstop for what it
// cannot see (live workers stuck waiting on each other), long enough for any sane step.
constexpr std::chrono::milliseconds kMinPeerTimeout{30000};
constexpr int kPeerTimeoutFactor = 10;  // times worker_timeout_ms, when that is longer
// How long a member that waits on a peer's chunk keeps looking before it sleeps, when every
// member has a core. Two workers' steps end a few to a few tens of microseconds apart; waking
// a sleeping process costs about as much again (more on a VM), twice per all-reduce. Measured
// on linreg 1M x 100, 2 workers, ring over ipc: 20 us spins gained half what 100 us did; 500 us
// lost time when the coordinator needed a core.
constexpr std::chrono::microseconds kPeerSpin{100};

// Spin only when the members fit the cores: a spinning member would otherwise hold the core
// that the peer it waits for needs.
void set_spin(collectives::PeerLinks& links, std::size_t members) {
  links.spin_before_sleep(members <= static_cast<std::size_t>(resources::usable_cores())
                              ? kPeerSpin
                              : std::chrono::microseconds(0));
}

}  // namespace

bool needs_peer_links(const config::Config& config) {
  return config.aggregation.topology == config::Topology::kRing || config.parallelism.tensor > 1;
}

std::unique_ptr<collectives::PeerLinks> open_peer_links(transport::Transport& transport,
                                                        const WorkerOptions& options,
                                                        const HeartbeatClient& heartbeat,
                                                        const config::Config& config,
                                                        std::uint32_t generation) {
  const std::int64_t timeout_ms = config.fault_tolerance.worker_timeout_ms;
  collectives::PeerOptions peer;
  peer.job_id = options.job_id;
  peer.rank = options.rank;
  peer.timeout = std::max(kMinPeerTimeout, std::chrono::milliseconds(timeout_ms) * kPeerTimeoutFactor);
  peer.on_wait = [&options, &heartbeat, timeout_ms] {
    if (options.cancel != nullptr && options.cancel->load()) {
      fail<InterruptedError>("worker {} stopped by the coordinator", options.rank);
    }
    if (const auto silent = heartbeat.silent_ms(); silent > timeout_ms) {
      fail<TransportError>("lost the coordinator at {}: no answer to heartbeats for {} ms "
                           "(fault_tolerance.worker_timeout_ms = {})",
                           options.endpoint, silent, timeout_ms);
    }
  };
  try {
    // A joiner may take the slot of a worker that left: its own name, so that the leaver's
    // listener, which ZeroMQ unlinks after it closed (asynchronously), cannot take the
    // joiner's ipc socket file with it.
    const auto name = options.join     ? fmt::format("p{}-j{}", options.rank, ::getpid())
                      : generation == 0 ? fmt::format("p{}", options.rank)
                                        : fmt::format("p{}-{}", options.rank, generation);
    auto listener = transport.listen(name);
    auto links = std::make_unique<collectives::PeerLinks>(transport, std::move(listener),
                                                          std::move(peer));
    log::info("peer links listen on {}", links->endpoint());
    return links;
  } catch (Error& e) {
    e.add_context("cannot open this worker's peer listener");
    throw;
  }
}

bool WorkerSession::has_peers() const noexcept { return peers_ != nullptr; }

void WorkerSession::set_peer_links(collectives::PeerLinks* links) {
  peers_ = links;
  // A wait on a peer's chunk warms the next batch's rows meanwhile (warm()).
  if (peers_ != nullptr) peers_->set_idle_work([this] { return warmer_.slice(); });
}

void WorkerSession::add_bytes(std::uint64_t sent, std::uint64_t received) noexcept {
  extra_bytes_sent_ += sent;
  extra_bytes_received_ += received;
}

collectives::PeerLinks& WorkerSession::peers() {
  if (peers_ == nullptr) {
    fail<TrainingError>("worker {}: this run has no peer links (they are opened for "
                        "aggregation.topology: ring and parallelism.tensor > 1)", rank());
  }
  if (!peers_->has_endpoints()) {
    fail<ProtocolError>("worker {}: a training message came before the peer endpoints", rank());
  }
  return *peers_;
}

collectives::Ring& WorkerSession::group(const std::vector<std::uint32_t>& ranks) {
  return peers().ring(ranks);
}

std::uint32_t WorkerSession::world_size() {
  return static_cast<std::uint32_t>(peers().world_size());
}

void WorkerSession::set_peer_endpoints(std::vector<std::string> endpoints) {
  if (peers_ == nullptr) {
    fail<ProtocolError>("worker {}: the coordinator sent peer endpoints, but this run has no "
                        "peer links", rank());
  }
  peers_->set_endpoints(std::move(endpoints));
  set_spin(*peers_, peers_->world_size());
}

void WorkerSession::update_peer_endpoints(std::vector<std::string> endpoints,
                                          const std::vector<std::uint32_t>& replaced) {
  if (peers_ == nullptr) {
    fail<ProtocolError>("worker {}: the coordinator re-formed a peer group, but this run has no "
                        "peer links", rank());
  }
  peers_->update_endpoints(std::move(endpoints), replaced);
  set_spin(*peers_, peers_->world_size());
}

}  // namespace dt::roles

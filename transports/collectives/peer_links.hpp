#pragma once
// Direct worker <-> worker links, written on the transport interface only (no ZeroMQ here), and
// the base that collectives (ring.hpp) are built on.
//
// Every member of a job owns one PeerLinks: one Listener that all its peers send to, and one
// Connection to each peer it sends to (made on first use, then cached). Links are one-way: a
// member sends on its Connection to the peer's Listener and receives everything on its own
// Listener, so one listener serves every group a member belongs to (a tensor-parallel group and
// a data-parallel replica group, say). Messages are sorted by (group, sender, sequence, phase,
// chunk): a message that arrives before it is wanted (a fast peer already in the next
// collective, or in another group) waits in a mailbox; one that is older than the group's
// current collective (a late or stray frame) is dropped, never taken for the current one.
//
// Usage (worker side; WorkerSession does steps 1-3 for you, see core/worker/worker.hpp):
//   1. auto links = PeerLinks(transport, transport.listen("p3"), {.job_id = job, .rank = 3});
//   2. tell the others links.endpoint(); learn theirs, then links.set_endpoints(all);  // by rank
//   3. Ring& ring = links.ring({0, 1, 2, 3});   // any ordered subset of ranks that includes 3
//   4. ring.allreduce_sum(values);              // every member calls it, in the same order
//
// Members of several groups must call their collectives in one order that every member agrees
// with (as with MPI or NCCL communicators): rank 2 waiting in ring A for rank 3 while rank 3
// waits in ring B for rank 2 is a deadlock that ends in the timeout.
//
// Threading: one PeerLinks and its rings are used by one thread. Every wait has a deadline:
// `timeout` per message, and `on_wait` (called every poll slice while waiting) lets the owner
// end a wait early by throwing (its own liveness checks: coordinator lost, run cancelled).
//
// transports/collectives/: worker-to-worker links and the collectives built on them (ring all-
// reduce).
// May use: base/, transports/ (the interface only: never ZeroMQ).

#include "transports/collectives/chunk_frames.hpp"
#include "transports/half_codec.hpp"
#include "transports/transport.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dt::collectives {

class Ring;

inline constexpr std::size_t kDefaultChunkDoubles = std::size_t{64} * 1024;  // 512 KiB per message

struct PeerOptions {
  std::uint64_t job_id = 0;
  std::uint32_t rank = 0;  // this member's rank in the job
  // The longest wait for one message from one peer. The coordinator notices a dead worker much
  // sooner (exit status, heartbeats) and ends the run; this is the backstop for what it cannot
  // see (two live members waiting on each other), so it must outlast a slow peer's computation.
  std::chrono::milliseconds timeout{30000};
  // Doubles per message: a longer vector streams as several messages. Tests use tiny chunks.
  std::size_t chunk_doubles = kDefaultChunkDoubles;
  // Called about every 50 ms while a receive waits; throw from it to end the wait.
  std::function<void()> on_wait;
};

struct PeerStats {
  std::uint64_t bytes_sent = 0;  // header + payload of every peer message, as Counters count
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t messages_dropped = 0;  // stray, stale or malformed
};

class PeerLinks {
 public:
  // `listener` is this member's own (made by `transport`, named uniquely per transport, e.g.
  // "p<rank>"); `transport` must outlive this object.
  PeerLinks(transport::Transport& transport, std::unique_ptr<transport::Listener> listener,
            PeerOptions options);
  ~PeerLinks();
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;

  [[nodiscard]] const std::string& endpoint() const noexcept { return listener_->endpoint(); }
  [[nodiscard]] std::uint32_t rank() const noexcept { return options_.rank; }
  [[nodiscard]] const PeerOptions& options() const noexcept { return options_; }
  // Every member's endpoint, indexed by rank (this member's own included). Once, before the
  // first collective.
  void set_endpoints(std::vector<std::string> endpoints);
  [[nodiscard]] bool has_endpoints() const noexcept { return !endpoints_.empty(); }
  // A group re-formed after members were replaced (ring re-form, core/modes/ring_reform.hpp):
  // sets the endpoints when there are none yet; else, for each rank in `replaced` or whose
  // endpoint changed, takes the new endpoint and drops the cached connection to the old
  // process (what was queued there is lost: it belonged to the abandoned collective; an ipc
  // replacement listens on the same path, a tcp one on a new port). The rank count may only
  // grow (a worker that joined in a new slot).
  void update_endpoints(std::vector<std::string> endpoints,
                        const std::vector<std::uint32_t>& replaced = {});
  [[nodiscard]] std::size_t world_size() const noexcept { return endpoints_.size(); }
  // Receives look for a chunk for up to `spin` before they sleep (Listener::spin_before_sleep):
  // for members that each have a core of their own.
  void spin_before_sleep(std::chrono::microseconds spin) noexcept {
    listener_->spin_before_sleep(spin);
  }

  // The ring over `members` (ranks, in ring order; must include this member's rank, no
  // duplicates), made on first use and cached: every later call with the same list returns the
  // same Ring. TransportError for a bad member list or before set_endpoints.
  [[nodiscard]] Ring& ring(const std::vector<std::uint32_t>& members);
  // The same for incarnation `epoch` of a group (a re-formed ring: epoch = the coordinator's
  // generation). Its group id differs from every other epoch's, so chunks of an abandoned
  // incarnation can never be taken for the new one; epoch 0 is ring(members).
  [[nodiscard]] Ring& ring(const std::vector<std::uint32_t>& members, std::uint64_t epoch);
  // Forgets `ring` (the reference dies): its messages waiting now are discarded, and any that
  // arrive later are dropped as stale. For a collective abandoned midway.
  void retire(const Ring& ring);
  // Called with on_wait while a receive waits, until replaced (empty: none): the group's user
  // ends a collective from here when the group is re-formed (throw from it).
  void set_interrupt(std::function<void()> interrupt) { interrupt_ = std::move(interrupt); }
  // Idle work for the waits (empty: none): while a receive finds no message, it calls `work`
  // (one short slice of the owner's own work; false, at once, when none is left) and looks for
  // arrivals, without waiting, after each slice; so a peer is answered within one slice. The
  // work must end (the wait's timeout and on_wait do not run meanwhile).
  void set_idle_work(std::function<bool()> work) { idle_ = std::move(work); }

  // Building blocks for collectives. send_chunk queues one message to `to` (waits only when
  // the link is full, up to `timeout`); receive_chunk returns the values of the message `key`
  // names, checked against `place`, and copies them to `out` (out.size() == place.count).
  // With a codec the values travel as its frame (transports/half_codec.hpp), and a receive
  // wants that codec's frame. send_chunk returns the bytes of the values' frame.
  std::size_t send_chunk(std::uint32_t to, const ChunkKey& key, const ChunkPlace& place,
                         std::span<const double> values,
                         std::optional<wire::HalfCodec> codec = std::nullopt);
  void receive_chunk(const ChunkKey& key, const ChunkPlace& place, std::span<double> out,
                     const char* what, std::optional<wire::HalfCodec> codec = std::nullopt);
  // The same with `out[i] += value[i]`, in index order (in float64).
  void receive_chunk_add(const ChunkKey& key, const ChunkPlace& place, std::span<double> out,
                         const char* what,
                         std::optional<wire::HalfCodec> codec = std::nullopt);
  // Messages of `group` older than `seq` are stale from now on: dropped on arrival, and any
  // already waiting are discarded.
  void begin(std::uint64_t group, std::uint64_t seq);

  [[nodiscard]] PeerStats stats() const;
  // The transport's name for a peer ("rank 2 (ipc:///tmp/.../p2.sock)"), for messages.
  [[nodiscard]] std::string describe(std::uint32_t rank) const;

 private:
  struct Pending {
    ChunkPlace place;
    wire::Message message;
  };
  [[nodiscard]] transport::Connection& link(std::uint32_t to);
  [[nodiscard]] Pending take(const ChunkKey& key, const ChunkPlace& place, const char* what);
  // A chunk's half frame into (add: added to) `out`; errors name the collective and the peer.
  void decode_chunk(const Pending& pending, const ChunkKey& key, std::span<double> out,
                    const char* what, wire::HalfCodec codec, bool add);
  void file(transport::Incoming incoming);  // stash or drop one arrival
  void drop(const std::string& peer, const std::string& why);

  transport::Transport& transport_;
  std::unique_ptr<transport::Listener> listener_;
  PeerOptions options_;
  std::vector<std::string> endpoints_;
  std::map<std::uint32_t, std::unique_ptr<transport::Connection>> links_;
  std::map<ChunkKey, Pending> mailbox_;
  std::map<std::uint64_t, std::uint64_t> floor_;  // group -> oldest sequence still wanted
  std::map<std::pair<std::uint64_t, std::vector<std::uint32_t>>, std::unique_ptr<Ring>> rings_;
  std::function<void()> interrupt_;
  std::function<bool()> idle_;
  wire::Message outgoing_;  // reused for every send: no allocation per chunk once warm
  std::uint64_t dropped_ = 0;
  bool warned_ = false;
};

}  // namespace dt::collectives

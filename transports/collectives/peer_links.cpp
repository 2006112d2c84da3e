#include "transports/collectives/peer_links.hpp"

#include "base/error.hpp"
#include "base/kill_points.hpp"
#include "base/log.hpp"
#include "transports/collectives/ring.hpp"

#include <algorithm>
#include <cstring>
#include <set>

namespace dt::collectives {
namespace {

using transport::Clock;
using transport::deadline_in;

constexpr std::chrono::milliseconds kPollSlice{50};
// Messages that arrived before they were wanted; more means a peer runs far ahead of what any
// collective allows (or floods us), which is a protocol error, not a reason to grow memory.
constexpr std::size_t kMaxMailbox = 65536;

}  // namespace

PeerLinks::PeerLinks(transport::Transport& transport,
                     std::unique_ptr<transport::Listener> listener, PeerOptions options)
    : transport_(transport), listener_(std::move(listener)), options_(std::move(options)) {
  if (options_.chunk_doubles == 0) fail<TransportError>("peer links: chunk_doubles must be > 0");
  outgoing_.header.type = kPeerChunkType;
  outgoing_.header.job_id = options_.job_id;
  outgoing_.header.rank = options_.rank;
  outgoing_.payload.resize(2);
  outgoing_.payload[0].resize(kChunkControlSize);
}

PeerLinks::~PeerLinks() = default;

void PeerLinks::set_endpoints(std::vector<std::string> endpoints) {
  if (options_.rank >= endpoints.size()) {
    fail<TransportError>("peer links: {} endpoints do not include this member's rank {}",
                         endpoints.size(), options_.rank);
  }
  if (!endpoints_.empty() && endpoints_ != endpoints) {
    fail<TransportError>("peer links: the peer endpoints changed during the run");
  }
  endpoints_ = std::move(endpoints);
}

void PeerLinks::update_endpoints(std::vector<std::string> endpoints,
                                 const std::vector<std::uint32_t>& replaced) {
  if (endpoints_.empty()) return set_endpoints(std::move(endpoints));
  if (endpoints.size() < endpoints_.size()) {
    fail<TransportError>("peer links: {} endpoints for a job of {} ranks", endpoints.size(),
                         endpoints_.size());
  }
  endpoints_.resize(endpoints.size());  // a worker joined in a new slot (elastic)
  for (std::uint32_t r = 0; r < endpoints.size(); ++r) {
    const bool renewed = std::find(replaced.begin(), replaced.end(), r) != replaced.end();
    if (endpoints[r] == endpoints_[r] && !renewed) continue;
    if (r == options_.rank) {
      if (endpoints[r] == endpoints_[r]) continue;  // this member is the replacement
      fail<TransportError>("peer links: rank {} was told another endpoint for itself ({})", r,
                           endpoints[r]);
    }
    endpoints_[r] = std::move(endpoints[r]);
    links_.erase(r);
  }
}

std::string PeerLinks::describe(std::uint32_t rank) const {
  if (rank < endpoints_.size()) return fmt::format("rank {} ({})", rank, endpoints_[rank]);
  return fmt::format("rank {}", rank);
}

Ring& PeerLinks::ring(const std::vector<std::uint32_t>& members) { return ring(members, 0); }

void PeerLinks::retire(const Ring& ring) {
  begin(ring.id(), UINT64_MAX);
  for (auto it = rings_.begin(); it != rings_.end(); ++it) {
    if (it->second.get() == &ring) {
      rings_.erase(it);
      return;
    }
  }
}

Ring& PeerLinks::ring(const std::vector<std::uint32_t>& members, std::uint64_t epoch) {
  auto key = std::make_pair(epoch, members);
  if (auto it = rings_.find(key); it != rings_.end()) return *it->second;
  if (endpoints_.empty()) {
    fail<TransportError>("peer links of rank {}: no peer endpoints yet (the coordinator sends them "
                         "after every worker is ready)", options_.rank);
  }
  if (members.empty()) fail<TransportError>("a ring needs at least one member");
  std::set<std::uint32_t> seen;
  for (const auto m : members) {
    if (m >= endpoints_.size()) {
      fail<TransportError>("ring member {} is not a rank of this job (ranks 0 to {})", m,
                           endpoints_.size() - 1);
    }
    if (!seen.insert(m).second) fail<TransportError>("ring member {} is listed twice", m);
  }
  if (!seen.contains(options_.rank)) {
    fail<TransportError>("rank {} cannot build a ring it is not a member of ({})", options_.rank,
                         fmt::join(members, ", "));
  }
  auto ring = std::make_unique<Ring>(*this, members, epoch);
  for (const auto& [other, r] : rings_) {
    if (r->id() == ring->id()) {
      fail<TransportError>("rings ({}) and ({}) hash to the same group id",
                           fmt::join(other.second, ", "), fmt::join(members, ", "));
    }
  }
  return *rings_.emplace(std::move(key), std::move(ring)).first->second;
}

transport::Connection& PeerLinks::link(std::uint32_t to) {
  if (auto it = links_.find(to); it != links_.end()) return *it->second;
  if (to >= endpoints_.size()) {
    fail<TransportError>("peer links of rank {}: no endpoint for rank {}", options_.rank, to);
  }
  auto connection = transport_.connect(endpoints_[to], peer_identity(options_.rank));
  return *links_.emplace(to, std::move(connection)).first->second;
}

std::size_t PeerLinks::send_chunk(std::uint32_t to, const ChunkKey& key, const ChunkPlace& place,
                                  std::span<const double> values,
                                  std::optional<wire::HalfCodec> codec) {
  kill_points::reach("send", "peer chunk");
  outgoing_.header.step = key.seq;
  encode_chunk_control(outgoing_.payload[0], key, place);
  auto& data = outgoing_.payload[1];
  if (codec) {
    wire::encode_half(values, *codec, data);  // keeps its capacity too
  } else {
    data.resize(values.size_bytes());  // keeps its capacity: no allocation once warm
    if (!values.empty()) std::memcpy(data.data(), values.data(), values.size_bytes());
  }
  const std::size_t frame_bytes = data.size();
  // A send waits only when the link is full (or has no peer yet): in slices, so that the
  // owner's checks (coordinator lost, the collective abandoned) end it as they end a receive.
  const auto deadline = transport::Clock::now() + options_.timeout;
  for (;;) {
    try {
      link(to).send(outgoing_, std::min(deadline, deadline_in(kPollSlice)));
      return frame_bytes;
    } catch (TimeoutError& e) {
      if (transport::Clock::now() >= deadline) {
        e.add_context(fmt::format("send to {}", describe(to)));
        throw;
      }
    } catch (Error& e) {
      e.add_context(fmt::format("send to {}", describe(to)));
      throw;
    }
    if (options_.on_wait) options_.on_wait();
    if (interrupt_) interrupt_();
  }
}

void PeerLinks::begin(std::uint64_t group, std::uint64_t seq) {
  floor_[group] = seq;
  // Anything older still waiting was never wanted (a peer's stray frame): discard it.
  for (auto it = mailbox_.begin(); it != mailbox_.end();) {
    if (it->first.group == group && it->first.seq < seq) {
      drop(peer_identity(it->first.from),
           fmt::format("stale: collective {} of its group, which is at {}", it->first.seq, seq));
      it = mailbox_.erase(it);
    } else {
      ++it;
    }
  }
}

void PeerLinks::drop(const std::string& peer, const std::string& why) {
  ++dropped_;
  if (warned_) {
    log::debug("peer links: dropped a message from '{}': {}", peer, why);
    return;
  }
  warned_ = true;
  log::warn("peer links: dropped a message from '{}': {} (further drops are logged at debug "
            "level)", peer, why);
}

void PeerLinks::file(transport::Incoming in) {
  const auto parsed = parse_chunk(in.message, options_.job_id, in.peer);
  if (!parsed.why.empty()) return drop(in.peer, parsed.why);
  const auto& key = parsed.key;
  const auto& place = parsed.place;
  if (const auto f = floor_.find(key.group); f != floor_.end() && key.seq < f->second) {
    return drop(in.peer, fmt::format("stale: collective {} of its group, which is at {}", key.seq,
                                     f->second));
  }
  if (mailbox_.contains(key)) return drop(in.peer, "duplicate chunk");
  if (mailbox_.size() >= kMaxMailbox) {
    fail<ProtocolError>("peer links of rank {}: more than {} messages arrived before they were "
                        "wanted (last from '{}')", options_.rank, kMaxMailbox, in.peer);
  }
  mailbox_.emplace(key, Pending{place, std::move(in.message)});
}

PeerLinks::Pending PeerLinks::take(const ChunkKey& key, const ChunkPlace& place,
                                   const char* what) {
  const auto start = Clock::now();
  const auto deadline = start + options_.timeout;
  bool idle = static_cast<bool>(idle_);  // set_idle_work: until it has nothing left
  for (;;) {
    if (auto it = mailbox_.find(key); it != mailbox_.end()) {
      Pending pending = std::move(it->second);
      mailbox_.erase(it);
      kill_points::reach("receive", "peer chunk");
      const auto& got = pending.place;
      if (got.length != place.length || got.offset != place.offset || got.count != place.count) {
        fail<ProtocolError>("{}: {} sent values [{}, {}) of a {}-value vector, expected [{}, {}) of "
                            "{} (do all members reduce vectors of the same length?)",
                            what, describe(key.from), got.offset, got.offset + got.count,
                            got.length, place.offset, place.offset + place.count, place.length);
      }
      return pending;
    }
    // A slice of idle work, then a look that does not wait (none when there was no work: a
    // wait without any makes no call more than before).
    if (idle) idle = idle_();
    if (idle) {
      if (auto in = listener_->receive(Clock::now())) file(std::move(*in));
      continue;
    }
    if (options_.on_wait) options_.on_wait();
    if (interrupt_) interrupt_();
    const auto now = Clock::now();
    if (now >= deadline) {
      fail<TimeoutError>("{}: no message from {} within {} ms (collective {}, phase {}, chunk {})",
                         what, describe(key.from), options_.timeout.count(), key.seq, key.phase,
                         key.chunk);
    }
    if (auto in = listener_->receive(std::min(deadline, now + kPollSlice))) file(std::move(*in));
  }
}

void PeerLinks::receive_chunk(const ChunkKey& key, const ChunkPlace& place, std::span<double> out,
                              const char* what, std::optional<wire::HalfCodec> codec) {
  const auto pending = take(key, place, what);
  if (codec) return decode_chunk(pending, key, out, what, *codec, false);
  const auto values = wire::as_doubles(pending.message.payload[1], out.size());
  std::copy(values.begin(), values.end(), out.begin());
}

void PeerLinks::receive_chunk_add(const ChunkKey& key, const ChunkPlace& place,
                                  std::span<double> out, const char* what,
                                  std::optional<wire::HalfCodec> codec) {
  const auto pending = take(key, place, what);
  if (codec) return decode_chunk(pending, key, out, what, *codec, true);
  const auto values = wire::as_doubles(pending.message.payload[1], out.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] += values[i];
}

void PeerLinks::decode_chunk(const Pending& pending, const ChunkKey& key, std::span<double> out,
                             const char* what, wire::HalfCodec codec, bool add) {
  try {
    if (add) {
      wire::add_half(pending.message.payload[1], codec, out);
    } else {
      wire::decode_half(pending.message.payload[1], codec, out);
    }
  } catch (Error& e) {
    e.add_context(fmt::format("{}: chunk from {}", what, describe(key.from)));
    throw;
  }
}

PeerStats PeerLinks::stats() const {
  PeerStats s;
  const auto& in = listener_->counters();
  s.bytes_received = in.bytes_received;
  s.messages_received = in.messages_received;
  s.messages_dropped = in.messages_dropped + dropped_;
  for (const auto& [rank, link] : links_) {
    s.bytes_sent += link->counters().bytes_sent;
    s.messages_sent += link->counters().messages_sent;
  }
  return s;
}

}  // namespace dt::collectives

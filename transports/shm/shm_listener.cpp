// The listener side of the shared-memory fast path (see shm_links.hpp). Used by one thread.

#include "base/log.hpp"
#include "transports/shm/link_common.hpp"
#include "transports/wakeup.hpp"
#include "transports/shm/shm_links.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <deque>
#include <map>
#include <set>
#include <thread>

namespace dt::transport::shm {
namespace {

using namespace detail;
using std::chrono::milliseconds;

constexpr std::size_t kMaxGone = 4096;  // identities remembered as gone (bounded)
// How often a send looks at a peer's pidfd: a peer that exits is noticed by the next wait, or
// by a send at most this long after the last look (a system call per send would cost the step).
constexpr auto kAliveCheck = std::chrono::microseconds(500);
constexpr int kZmqEvery = 64;  // ring messages between two looks at the ZeroMQ socket

struct Peer {
  Peer(Region r, Bell b, std::uint64_t max_payload)
      : region(std::make_shared<Region>(std::move(r))), bell(std::move(b)),
        up(*region, kUp, max_payload, region), down(*region, kDown) {}
  ~Peer() {
    region->header().listener_closed.store(1, std::memory_order_release);
    if (pidfd >= 0) ::close(pidfd);
  }
  // Shared with the leases of messages read in place, which may outlive the peer.
  std::shared_ptr<Region> region;
  Bell bell;  // the connection's
  RingReader up;
  RingWriter down;
  int pidfd = -1;
  Clock::time_point checked{};
  bool switched = false;   // `switch` seen: read the up ring
  bool at_marker = false;  // the next message is the next ZeroMQ one
  bool corrupt = false;
  std::deque<wire::Message> stash;  // ZeroMQ messages waiting for their markers
};

class ShmListener final : public Listener {
 public:
  ShmListener(std::unique_ptr<Listener> inner, const LinkOptions& options, Bell bell)
      : inner_(std::move(inner)), options_(options), bell_(std::move(bell)) {}

  [[nodiscard]] const std::string& endpoint() const noexcept override { return inner_->endpoint(); }
  [[nodiscard]] const Counters& counters() const noexcept override {
    return tally_.combine(inner_->counters());
  }

  void send(const std::string& peer, const wire::Message& message, Deadline deadline) override {
    const auto it = peers_.find(peer);
    if (it == peers_.end()) {
      if (gone_.contains(peer)) fail_gone(peer);
      inner_->send(peer, message, deadline);
      zmq_ready_ = true;
      return;
    }
    Peer& p = *it->second;
    if (is_gone(p, true)) {
      forget_drained(peer, p);
      fail_gone(peer);
    }
    const auto start = Clock::now();
    const std::uint64_t total = checked_payload(message, options_.max_payload, describe(peer));
    wire::Header header = message.header;
    header.payload_size = total;
    const wire::Bytes head = wire::encode_header(header);
    for (;;) {
      switch (p.down.write(head, message, total)) {
        case RingWriter::Result::kWritten:
          p.down.wake(p.bell);
          tally_.own.bytes_sent += head.size() + total;
          ++tally_.own.messages_sent;
          return;
        case RingWriter::Result::kMarked:
          p.down.wake(p.bell);
          inner_->send(peer, message, deadline);
          zmq_ready_ = true;
          return;
        case RingWriter::Result::kCorrupt:
          forget(peer, true);
          fail<TransportError>("send to {}: its shared-memory region is corrupt", describe(peer));
        case RingWriter::Result::kFull:
          break;
      }
      // The peer is a whole ring behind: wait for room like ZeroMQ at its high-water mark.
      if (Clock::now() >= deadline) {
        fail<TimeoutError>("send to {}: timed out after {} ms", describe(peer),
                           std::chrono::ceil<milliseconds>(deadline - start).count());
      }
      if (is_gone(p, true)) {
        forget_drained(peer, p);
        fail_gone(peer);
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(deadline - Clock::now(),
                                                            std::chrono::microseconds(200)));
    }
  }

  [[nodiscard]] std::optional<Incoming> receive(Deadline deadline) override {
    for (;;) {
      if (++served_ % kZmqEvery == 0) zmq_ready_ = true;  // fairness towards ZeroMQ
      if (!zmq_ready_ || peers_.empty()) {
        if (auto incoming = from_rings()) return incoming;
      }
      if (zmq_ready_) {
        const auto dropped = inner_->counters().messages_dropped;
        auto incoming = inner_->receive(Clock::now());
        if (!incoming) {
          // Empty, unless it returned early after dropping a malformed message.
          zmq_ready_ = inner_->counters().messages_dropped != dropped;
        } else if (auto out = from_zmq(std::move(*incoming))) {
          return out;
        }
        if (auto incoming_ring = from_rings()) return incoming_ring;
        continue;
      }
      if (Clock::now() >= deadline || (wakeup_ != nullptr && wakeup_->raised())) {
        return std::nullopt;
      }
      if (sleep(deadline) == WaitResult::kInterrupted) return std::nullopt;
    }
  }
  // The inner socket wakes too: its receive is the one ZeroMQ messages come through.
  void spin_before_sleep(std::chrono::microseconds spin) noexcept override { spin_ = spin; }
  void receive_in_place(std::uint64_t min_frame) noexcept override { in_place_min_ = min_frame; }
  void wake_on(const Wakeup* wakeup) noexcept override {
    wakeup_ = wakeup;
    inner_->wake_on(wakeup);
  }

 private:
  [[nodiscard]] std::string describe(const std::string& peer) const {
    return fmt::format("peer '{}' on {}", zmq_printable(peer), inner_->endpoint());
  }
  static std::string zmq_printable(const std::string& text) {
    std::string out;
    for (const char c : text.substr(0, 64)) {
      out += (c >= 0x20 && c < 0x7F) ? std::string(1, c) : fmt::format("\\x{:02x}", c & 0xFF);
    }
    return out;
  }
  [[noreturn]] void fail_gone(const std::string& peer) const {
    fail<TransportError>("send to {}: peer unknown or disconnected", describe(peer));
  }

  // Closed by its owner, or its process has exited.
  bool is_gone(Peer& p, bool throttled) {
    if (p.region->header().connection_closed.load(std::memory_order_acquire) != 0) return true;
    if (p.pidfd < 0) return false;
    const auto now = Clock::now();
    if (throttled && now - p.checked < kAliveCheck) return false;
    p.checked = now;
    pollfd fd{p.pidfd, POLLIN, 0};
    return ::poll(&fd, 1, 0) > 0;
  }

  // A gone peer whose ring still holds messages (its last words: a worker's leave, its error
  // report) stays until receive has delivered them; sleep() forgets it then.
  void forget_drained(const std::string& peer, const Peer& p) {
    if (!p.switched || p.corrupt || p.at_marker || !p.up.has_data()) forget(peer, true);
  }

  // By value: callers pass the map's own key, which the erase frees.
  void forget(std::string peer, bool gone) {
    peers_.erase(peer);
    if (gone && gone_.size() < kMaxGone) gone_.insert(std::move(peer));
  }

  std::optional<Incoming> from_rings() {
    if (peers_.empty()) return std::nullopt;
    // Round robin from the peer after the last one served.
    auto it = peers_.upper_bound(last_);
    for (std::size_t n = 0; n < peers_.size(); ++n, ++it) {
      if (it == peers_.end()) it = peers_.begin();
      Peer& p = *it->second;
      if (!p.switched || p.corrupt) continue;
      for (;;) {
        if (p.at_marker) {
          if (p.stash.empty()) break;
          p.at_marker = false;
          last_ = it->first;
          Incoming out{it->first, std::move(p.stash.front())};
          p.stash.pop_front();
          return out;
        }
        auto next = p.up.next(in_place_min_);
        if (next.kind == RingReader::Kind::kEmpty) break;
        if (next.kind == RingReader::Kind::kMarker) {
          p.at_marker = true;
          continue;
        }
        if (next.kind == RingReader::Kind::kMessage) {
          tally_.own.bytes_received += next.wire_bytes;
          ++tally_.own.messages_received;
          last_ = it->first;
          return Incoming{it->first, std::move(next.message)};
        }
        ++tally_.own.messages_dropped;
        if (next.kind == RingReader::Kind::kCorrupt) p.corrupt = true;
        warn_once(it->first, next.why);
        if (p.corrupt) break;
      }
    }
    return std::nullopt;
  }

  void warn_once(const std::string& peer, const std::string& why) {
    if (warned_.size() >= kMaxGone || !warned_.insert(peer).second) return;
    log::warn("dropped a malformed message from {} (shared memory): {} (further ones from there "
              "are dropped without a warning)",
              describe(peer), why);
  }

  // A message that came over ZeroMQ: a control message, one waiting for its marker, or one to
  // hand out now.
  std::optional<Incoming> from_zmq(Incoming incoming) {
    const auto type = incoming.message.header.type;
    if (is_control(type)) {
      tally_.control.bytes_received += wire_bytes(incoming.message);
      ++tally_.control.messages_received;
      if (type == kOffer) on_offer(incoming.peer, incoming.message);
      if (type == kSwitch) {
        const auto it = peers_.find(incoming.peer);
        if (it != peers_.end()) it->second->switched = true;
      }
      return std::nullopt;
    }
    const auto it = peers_.find(incoming.peer);
    if (it != peers_.end() && it->second->switched) {
      if (!is_gone(*it->second, false)) {
        it->second->stash.push_back(std::move(incoming.message));
        return std::nullopt;
      }
      // Its region's owner is gone: a newer connection without the fast path took over.
      forget(incoming.peer, false);
    }
    gone_.erase(incoming.peer);
    return incoming;
  }

  void on_offer(const std::string& peer, const wire::Message& offer) {
    forget(peer, false);  // a newer connection takes the identity (and its old region) over
    gone_.erase(peer);
    try {
      if (offer.payload.size() != 2) fail<ProtocolError>("an offer has 2 frames");
      const std::string region_name(wire::as_text(offer.payload[0]));
      const std::string bell_name(wire::as_text(offer.payload[1]));
      Region region = Region::open(region_name);
      if (!valid_file_name(bell_name)) fail<ProtocolError>("bad bell name in an offer");
      auto bell = Bell::open_to_ring(options_.folder / bell_name);
      if (!bell) fail<ProtocolError>("cannot open the peer's bell {}", bell_name);
      auto p = std::make_unique<Peer>(std::move(region), std::move(*bell), options_.max_payload);
      const auto pid = static_cast<pid_t>(p->region->header().connection_pid);
      if (pid != ::getpid()) p->pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
      send_control(peer, control(kAccept, options_.job_id));
      peers_.emplace(peer, std::move(p));
    } catch (const Error& e) {
      // A connection that closed before its offer was read (a short-lived worker's heartbeat
      // link) has removed its region already: nothing is wrong, and it is not told.
      if (!offer.payload.empty() &&
          !Region::exists(std::string(wire::as_text(offer.payload[0])))) {
        log::debug("a shared-memory offer from '{}' came after its connection closed", peer);
        return;
      }
      warn_once(peer, fmt::format("refused its shared-memory offer: {}", e.message()));
      try {
        send_control(peer, control(kRefuse, options_.job_id, {e.message()}));
      } catch (const Error&) {
      }
    }
  }

  void send_control(const std::string& peer, const wire::Message& m) {
    inner_->send(peer, m, deadline_in(milliseconds(1000)));
    zmq_ready_ = true;
    tally_.control.bytes_sent += wire_bytes(m);
    ++tally_.control.messages_sent;
  }

  WaitResult sleep(Deadline deadline) {
    if (spin_.count() > 0 && spun(std::min(deadline, Clock::now() + spin_))) {
      return WaitResult::kWoken;
    }
    bool data = false;
    for (auto& [id, p] : peers_) {
      if (p->switched && !p->corrupt && !p->at_marker && p->up.announce_sleep()) data = true;
    }
    if (data) {
      clear_sleep();
      return WaitResult::kWoken;
    }
    fds_.clear();
    fds_.push_back({options_.zmq_fd, POLLIN, 0});
    fds_.push_back({bell_.fd(), POLLIN, 0});
    if (wakeup_ != nullptr) fds_.push_back({wakeup_->fd(), POLLIN, 0});
    for (auto& [id, p] : peers_) {
      if (p->pidfd >= 0) fds_.push_back({p->pidfd, POLLIN, 0});
    }
    const auto result = wait_fds(fds_, deadline);
    clear_sleep();
    if ((fds_[0].revents & POLLIN) != 0) zmq_ready_ = true;
    if ((fds_[1].revents & POLLIN) != 0) bell_.drain();
    for (auto it = peers_.begin(); it != peers_.end();) {
      auto next = std::next(it);
      // Anything still in its ring is delivered first (from_rings); an exited peer whose ring
      // is drained is gone.
      const Peer& p = *it->second;
      const bool drained = !p.up.has_data() || p.corrupt || p.at_marker || !p.switched;
      if (p.pidfd >= 0 && drained && is_gone(*it->second, false)) {
        forget(it->first, true);
      }
      it = next;
    }
    return result;
  }

  // Looks at the rings until one has a message or `until`; true when one has. ZeroMQ messages
  // (set-up, oversized ones) are not looked for, nor a wake-up raised meanwhile (a system call
  // each): the sleep after finds them.
  bool spun(Deadline until) const {
    if (wakeup_ != nullptr && wakeup_->raised()) return false;
    do {
      for (const auto& [id, p] : peers_) {
        if (p->switched && !p->corrupt && !p->at_marker && p->up.has_data()) return true;
      }
      for (int i = 0; i < 16; ++i) cpu_relax();
    } while (Clock::now() < until);
    return false;
  }

  void clear_sleep() {
    for (auto& [id, p] : peers_) p->up.clear_sleep();
  }

  std::unique_ptr<Listener> inner_;
  LinkOptions options_;
  Bell bell_;  // ours: connections ring it
  std::map<std::string, std::unique_ptr<Peer>> peers_;
  std::set<std::string> gone_;
  std::set<std::string> warned_;
  std::string last_;
  std::vector<pollfd> fds_;
  const Wakeup* wakeup_ = nullptr;  // not owned (wake_on)
  std::chrono::microseconds spin_{0};  // spin_before_sleep
  std::uint64_t in_place_min_ = 0;     // receive_in_place
  bool zmq_ready_ = true;  // the ZeroMQ socket may have something (ZMQ_FD is edge-triggered)
  unsigned served_ = 0;
  mutable Tally tally_;
};

}  // namespace

std::unique_ptr<Listener> wrap_listener(std::unique_ptr<Listener> inner, const LinkOptions& options) {
  try {
    Bell bell = Bell::create(options.folder / (options.name + ".bell"));
    return std::make_unique<ShmListener>(std::move(inner), options, std::move(bell));
  } catch (const TransportError& e) {
    log::warn("{}: shared memory off for this listener", e.message());
    return inner;
  }
}

}  // namespace dt::transport::shm

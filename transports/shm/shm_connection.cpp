// The connection side of the shared-memory fast path (see shm_links.hpp). Used by one thread.

#include "base/log.hpp"
#include "transports/shm/link_common.hpp"
#include "transports/wakeup.hpp"
#include "transports/shm/shm_links.hpp"

#include <deque>
#include <thread>

namespace dt::transport::shm {
namespace {

using namespace detail;
using std::chrono::milliseconds;

class ShmConnection final : public Connection {
 public:
  ShmConnection(std::unique_ptr<Connection> inner, const LinkOptions& options, Region region,
                Bell bell, Bell listener_bell)
      : inner_(std::move(inner)), options_(options),
        region_(std::make_shared<Region>(std::move(region))),
        bell_(std::move(bell)), listener_bell_(std::move(listener_bell)),
        up_(*region_, kUp), down_(*region_, kDown, options.max_payload, region_) {}
  // Sends the offer; the link stays on ZeroMQ when even that fails.
  void offer() {
    try {
      send_control(control(kOffer, options_.job_id,
                           {region_->name(), bell_.path().filename().string()}));
    } catch (const Error&) {
      state_ = State::kZmq;
    }
  }
  ~ShmConnection() override {
    region_->header().connection_closed.store(1, std::memory_order_release);
    region_->unlink();  // now, even while a lease keeps the mapping
  }

  [[nodiscard]] const Counters& counters() const noexcept override {
    return tally_.combine(inner_->counters());
  }
  [[nodiscard]] Refusal refusal() override { return inner_->refusal(); }
  // The inner socket wakes too: its receive is the one ZeroMQ messages come through.
  void wake_on(const Wakeup* wakeup) noexcept override {
    wakeup_ = wakeup;
    inner_->wake_on(wakeup);
  }
  void receive_in_place(std::uint64_t min_frame) noexcept override { in_place_min_ = min_frame; }

  void send(const wire::Message& message, Deadline deadline) override {
    if (state_ == State::kOffered) poll_zmq();
    if (state_ != State::kSwitched) {
      inner_->send(message, deadline);
      zmq_ready_ = true;
      return;
    }
    const auto start = Clock::now();
    const std::uint64_t total = checked_payload(message, options_.max_payload, describe());
    wire::Header header = message.header;
    header.payload_size = total;
    const wire::Bytes head = wire::encode_header(header);
    for (;;) {
      switch (up_.write(head, message, total)) {
        case RingWriter::Result::kWritten:
          up_.wake(listener_bell_);
          tally_.own.bytes_sent += head.size() + total;
          ++tally_.own.messages_sent;
          return;
        case RingWriter::Result::kMarked:
          up_.wake(listener_bell_);
          inner_->send(message, deadline);
          zmq_ready_ = true;
          return;
        case RingWriter::Result::kCorrupt:
          fail<TransportError>("send to {}: the shared-memory region is corrupt", describe());
        case RingWriter::Result::kFull:
          break;
      }
      if (Clock::now() >= deadline) {
        fail<TimeoutError>("send to {}: timed out after {} ms", describe(),
                           std::chrono::ceil<milliseconds>(deadline - start).count());
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(deadline - Clock::now(),
                                                            std::chrono::microseconds(200)));
    }
  }

  [[nodiscard]] std::optional<wire::Message> receive(Deadline deadline) override {
    for (;;) {
      if (!before_.empty()) {
        auto m = std::move(before_.front());
        before_.pop_front();
        return m;
      }
      if (state_ == State::kSwitched) {
        if (auto m = from_ring()) return m;
      }
      if (zmq_ready_) {
        poll_zmq();
        continue;
      }
      if (Clock::now() >= deadline || (wakeup_ != nullptr && wakeup_->raised())) {
        return std::nullopt;
      }
      if (state_ == State::kSwitched && !at_marker_ && !corrupt_ && down_.announce_sleep()) {
        continue;
      }
      fds_.resize(wakeup_ != nullptr ? 3 : 2);
      fds_[0] = {options_.zmq_fd, POLLIN, 0};
      fds_[1] = {bell_.fd(), POLLIN, 0};
      if (wakeup_ != nullptr) fds_[2] = {wakeup_->fd(), POLLIN, 0};
      const auto result = wait_fds(fds_, deadline);
      down_.clear_sleep();
      if ((fds_[0].revents & POLLIN) != 0) zmq_ready_ = true;
      if ((fds_[1].revents & POLLIN) != 0) bell_.drain();
      if (result == WaitResult::kInterrupted) return std::nullopt;
    }
  }

 private:
  enum class State { kZmq, kOffered, kSwitched };

  [[nodiscard]] std::string describe() const {
    return fmt::format("{} (as '{}', shared memory)", options_.folder.string(), options_.name);
  }

  std::optional<wire::Message> from_ring() {
    for (;;) {
      if (at_marker_) {
        if (after_.empty()) return std::nullopt;
        at_marker_ = false;
        auto m = std::move(after_.front());
        after_.pop_front();
        return m;
      }
      if (corrupt_) return std::nullopt;
      auto next = down_.next(in_place_min_);
      switch (next.kind) {
        case RingReader::Kind::kEmpty:
          return std::nullopt;
        case RingReader::Kind::kMarker:
          at_marker_ = true;
          continue;
        case RingReader::Kind::kMessage:
          tally_.own.bytes_received += next.wire_bytes;
          ++tally_.own.messages_received;
          return std::move(next.message);
        case RingReader::Kind::kCorrupt:
          corrupt_ = true;
          [[fallthrough]];
        case RingReader::Kind::kDropped:
          ++tally_.own.messages_dropped;
          if (!warned_) {
            warned_ = true;
            log::warn("dropped a malformed message from {}: {}", describe(), next.why);
          }
          continue;
      }
    }
  }

  // Takes in what ZeroMQ has now, without waiting: control messages act, the rest is queued in
  // order (before the switch: delivered next; after it: at their markers).
  void poll_zmq() {
    for (;;) {
      const auto dropped = inner_->counters().messages_dropped;
      auto m = inner_->receive(Clock::now());
      if (!m) {
        // Empty, unless it returned early after dropping a malformed message.
        if (inner_->counters().messages_dropped != dropped) continue;
        zmq_ready_ = false;
        return;
      }
      const auto type = m->header.type;
      if (!is_control(type)) {
        (state_ == State::kSwitched ? after_ : before_).push_back(std::move(*m));
        continue;
      }
      tally_.control.bytes_received += wire_bytes(*m);
      ++tally_.control.messages_received;
      if (state_ != State::kOffered) continue;
      if (type == kAccept) {
        // The listener has both files open; their names can go.
        region_->unlink();
        bell_.unlink();
        send_control(control(kSwitch, options_.job_id));
        state_ = State::kSwitched;
      } else if (type == kRefuse) {
        region_->unlink();
        bell_.unlink();
        state_ = State::kZmq;
      }
    }
  }

  void send_control(const wire::Message& m) {
    inner_->send(m, deadline_in(milliseconds(1000)));
    zmq_ready_ = true;
    tally_.control.bytes_sent += wire_bytes(m);
    ++tally_.control.messages_sent;
  }

  std::unique_ptr<Connection> inner_;
  LinkOptions options_;
  std::shared_ptr<Region> region_;  // shared with the leases of messages read in place
  Bell bell_;           // ours: the listener rings it
  Bell listener_bell_;  // the listener's
  RingWriter up_;
  RingReader down_;
  State state_ = State::kOffered;
  bool zmq_ready_ = true;
  bool at_marker_ = false;
  bool corrupt_ = false;
  bool warned_ = false;
  std::deque<wire::Message> before_;  // received over ZeroMQ before the switch
  std::deque<wire::Message> after_;   // received over ZeroMQ after it, for the markers
  std::vector<pollfd> fds_ = std::vector<pollfd>(2);
  const Wakeup* wakeup_ = nullptr;  // not owned (wake_on)
  std::uint64_t in_place_min_ = 0;  // receive_in_place
  mutable Tally tally_;
};

}  // namespace

std::unique_ptr<Connection> wrap_connection(std::unique_ptr<Connection> inner,
                                            const LinkOptions& options) {
  // The listener's bell sits next to its socket file; without it (a folder we cannot reach)
  // the link stays on ZeroMQ.
  auto listener_bell = Bell::open_to_ring(options.folder / (options.listener + ".bell"));
  if (!listener_bell) return inner;
  auto region = Region::create(ring_capacity());
  if (!region) return inner;
  Bell bell;
  try {
    bell = Bell::create(options.folder / (region->name() + ".bell"));
  } catch (const Error&) {
    return inner;
  }
  auto connection = std::make_unique<ShmConnection>(std::move(inner), options, std::move(*region),
                                                    std::move(bell), std::move(*listener_bell));
  connection->offer();
  return connection;
}

}  // namespace dt::transport::shm

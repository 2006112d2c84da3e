// The two ends of a ring (transports/shm/region.hpp): RingWriter, RingReader and the hold a
// reader keeps on the ring while a message is read in place.

#include "transports/shm/region.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace dt::transport::shm {
namespace {

constexpr std::uint32_t kData = 1;
constexpr std::uint32_t kMarker = 2;
constexpr std::uint32_t kSkip = 3;
constexpr std::uint64_t kRecordHead = 16;
constexpr std::uint32_t kMaxFrames = 65536;  // as the ZeroMQ side

[[nodiscard]] constexpr std::uint64_t pad8(std::uint64_t n) { return (n + 7) & ~std::uint64_t{7}; }

struct RecordHead {
  std::uint32_t kind;
  std::uint32_t frames;
  std::uint64_t body;
};
static_assert(sizeof(RecordHead) == kRecordHead);

}  // namespace

// ---- RingWriter

RingWriter::RingWriter(const Region& region, int ring)
    : RingWriter(region.header().rings[ring], region.ring_data(ring), region.capacity()) {}

RingWriter::RingWriter(RingControl& control, std::byte* data, std::uint64_t capacity)
    : control_(&control), data_(data), capacity_(capacity),
      write_pos_(control_->write_pos.load(std::memory_order_relaxed)) {}

std::uint64_t RingWriter::put(std::uint64_t pos, const void* data, std::uint64_t size) {
  if (size == 0) return pos;  // an empty frame's buffer may be null, which memcpy may not take
  const auto* bytes = static_cast<const std::byte*>(data);
  const std::uint64_t offset = pos % capacity_;
  const std::uint64_t first = std::min(size, capacity_ - offset);
  std::memcpy(data_ + offset, bytes, first);
  if (first < size) std::memcpy(data_, bytes + first, size - first);
  return pos + size;
}

RingWriter::Result RingWriter::write(const wire::Bytes& header, const wire::Message& message,
                                     std::uint64_t payload_total) {
  std::uint64_t read = control_->read_pos.load(std::memory_order_acquire);
  // A reader not yet past our last skip record still needs it: the skipped stretch counts as
  // used until the reader has jumped (so records after the skip never overwrite it).
  if (read > skip_from_ && read < skip_to_) return Result::kCorrupt;
  if (read > write_pos_ || write_pos_ - read > capacity_) return Result::kCorrupt;
  std::uint64_t pos = write_pos_;
  std::uint64_t used = pos - read;
  const auto frames = static_cast<std::uint32_t>(message.payload.size());
  std::uint64_t padded = 0;  // each frame padded to 8 bytes
  for (std::size_t i = 0; i < frames; ++i) padded += pad8(wire::frame(message, i).size());
  (void)payload_total;  // the caller's sum of the frames, before padding
  const std::uint64_t body = pad8(header.size()) + 8ull * frames + padded;
  // Empty ring: start again at its beginning (see the header comment), if a skip record fits.
  // Until the reader has passed the skip record, only the `offset` bytes before it are free:
  // skip only once past kSkipAfter (or half a small ring), so that a reader that does not read
  // for a while (an async worker busy with its servers) still leaves the writer room for its
  // next messages, while a link of small messages stays within its first few pages.
  const std::uint64_t offset = pos % capacity_;
  // The record must end before the skip record it follows, or it would overwrite it.
  const bool skip = used == 0 && offset >= std::min(kSkipAfter, capacity_ / 2) &&
                    capacity_ - offset >= kRecordHead && kRecordHead + body <= offset;
  std::uint64_t skip_at = pos;
  if (skip) {
    pos += capacity_ - offset;
    used = 0;
  }
  Result result = Result::kWritten;
  const std::uint64_t room = capacity_ - used;
  if (kRecordHead + body > room) {
    if (kRecordHead > capacity_ - (write_pos_ - read)) return Result::kFull;
    pos = write_pos_;  // no skip for a marker alone
    const RecordHead marker{kMarker, 0, 0};
    pos = put(pos, &marker, sizeof marker);
    result = Result::kMarked;
  } else {
    if (skip) {
      const RecordHead jump{kSkip, 0, 0};
      (void)put(skip_at, &jump, sizeof jump);
      skip_from_ = skip_at;
      skip_to_ = pos;
    }
    const RecordHead head{kData, frames, body};
    const std::uint64_t start = pos;
    pos = put(pos, &head, sizeof head);
    pos = put(pos, header.data(), header.size());
    for (std::size_t i = 0; i < frames; ++i) {
      const std::uint64_t size = wire::frame(message, i).size();
      pos = put(pos, &size, sizeof size);
    }
    for (std::size_t i = 0; i < frames; ++i) {  // lent frames (wire::Message::views) copied here
      const auto frame = wire::frame(message, i);
      pos = pad8(put(pos, frame.data(), frame.size()));
    }
    pos = start + kRecordHead + body;
  }
  write_pos_ = pos;
  control_->write_pos.store(pos, std::memory_order_seq_cst);
  return result;
}

void RingWriter::wake(const Bell& bell) const noexcept {
  if (control_->reader_waiting.load(std::memory_order_seq_cst) != 0 &&
      control_->reader_waiting.exchange(0, std::memory_order_seq_cst) != 0) {
    bell.ring();
  }
}

// ---- RingReader

void RingHold::release(std::uint64_t id) noexcept {
  if (lease != id || id == 0) return;  // released already: a later lease may hold it now
  lease = 0;
  control->read_pos.store(release_to, std::memory_order_release);
}

namespace {

// One message's hold on its ring (RingHold), released once: early, or when the last copy goes.
class RingLease final : public wire::Lease {
 public:
  RingLease(std::shared_ptr<RingHold> hold, std::uint64_t id) : hold_(std::move(hold)), id_(id) {}
  ~RingLease() override { hold_->release(id_); }
  RingLease(const RingLease&) = delete;
  RingLease& operator=(const RingLease&) = delete;
  void release() noexcept override { hold_->release(id_); }

 private:
  std::shared_ptr<RingHold> hold_;
  std::uint64_t id_;
};

}  // namespace

RingReader::RingReader(const Region& region, int ring, std::uint64_t max_payload,
                       std::shared_ptr<const void> mapping)
    : RingReader(region.header().rings[ring], region.ring_data(ring), region.capacity(),
                 max_payload, std::move(mapping)) {
  mirrored_ = region.mirrored();
}

RingReader::RingReader(RingControl& control, const std::byte* data, std::uint64_t capacity,
                       std::uint64_t max_payload, std::shared_ptr<const void> mapping)
    : control_(&control), data_(data), capacity_(capacity), max_payload_(max_payload),
      read_pos_(control_->read_pos.load(std::memory_order_relaxed)),
      hold_(std::make_shared<RingHold>(RingHold{&control, std::move(mapping), 0, 0, 0})) {}

void RingReader::publish() noexcept {
  if (hold_->lease != 0) {
    hold_->release_to = read_pos_;
  } else {
    control_->read_pos.store(read_pos_, std::memory_order_release);
  }
}

void RingReader::get(std::uint64_t pos, void* out, std::uint64_t size) const {
  if (size == 0) return;  // an empty frame's buffer may be null, which memcpy may not take
  auto* bytes = static_cast<std::byte*>(out);
  const std::uint64_t offset = pos % capacity_;
  const std::uint64_t first = std::min(size, capacity_ - offset);
  std::memcpy(bytes, data_ + offset, first);
  if (first < size) std::memcpy(bytes + first, data_, size - first);
}

wire::Bytes RingReader::take(std::uint64_t pos, std::uint64_t size) const {
  // Built from the ring's bytes directly: a frame made with Bytes(size) would be zero-filled
  // first, one more pass over every byte of an 8 MB message.
  const std::uint64_t offset = pos % capacity_;
  const std::uint64_t first = std::min(size, capacity_ - offset);
  const std::byte* start = data_ + offset;
  wire::Bytes frame;
  frame.reserve(size);
  frame.insert(frame.end(), start, start + first);
  if (first < size) frame.insert(frame.end(), data_, data_ + (size - first));
  return frame;
}

bool RingReader::has_data() const noexcept {
  return control_->write_pos.load(std::memory_order_acquire) != read_pos_;
}

bool RingReader::announce_sleep() noexcept {
  control_->reader_waiting.store(1, std::memory_order_seq_cst);
  if (control_->write_pos.load(std::memory_order_seq_cst) != read_pos_) {
    control_->reader_waiting.store(0, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void RingReader::clear_sleep() noexcept {
  control_->reader_waiting.store(0, std::memory_order_relaxed);
}

RingReader::Next RingReader::next(std::uint64_t in_place_min) {
  Next out;
  for (;;) {
    const std::uint64_t write = control_->write_pos.load(std::memory_order_acquire);
    if (write == read_pos_) return out;
    const auto corrupt = [&](std::string why) {
      out.kind = Kind::kCorrupt;
      out.why = std::move(why);
      return std::move(out);
    };
    // Up to one skipped stretch (less than a ring) precedes at most a ring of records.
    if (write < read_pos_ || write - read_pos_ > 2 * capacity_ || (write - read_pos_) % 8 != 0) {
      return corrupt(fmt::format("write position out of range ({} {} {})", write, read_pos_, capacity_));
    }
    const std::uint64_t available = write - read_pos_;
    if (available < kRecordHead) return corrupt("record cut short");
    RecordHead head{};
    get(read_pos_, &head, sizeof head);
    if (head.kind == kSkip) {
      const std::uint64_t offset = read_pos_ % capacity_;
      if (offset == 0 || capacity_ - offset > available) return corrupt("bad skip record");
      read_pos_ += capacity_ - offset;
      publish();
      continue;
    }
    if (available > capacity_) return corrupt(fmt::format("write position out of range ({} {} {})", write, read_pos_, capacity_));
    if (head.kind == kMarker) {
      read_pos_ += kRecordHead;
      publish();
      out.kind = Kind::kMarker;
      return out;
    }
    if (head.kind != kData || head.frames > kMaxFrames || head.body % 8 != 0 ||
        head.body > available - kRecordHead ||
        head.body < wire::kHeaderSize + 8ull * head.frames) {
      return corrupt(fmt::format("bad record (kind {}, {} frames, {} bytes)", head.kind,
                                 head.frames, head.body));
    }
    std::uint64_t pos = read_pos_ + kRecordHead;
    std::byte header_bytes[wire::kHeaderSize];
    get(pos, header_bytes, sizeof header_bytes);
    pos += sizeof header_bytes;
    std::vector<std::uint64_t> sizes(head.frames);
    get(pos, sizes.data(), 8ull * head.frames);
    pos += 8ull * head.frames;
    std::uint64_t used = 0;
    const std::uint64_t room = head.body - wire::kHeaderSize - 8ull * head.frames;
    std::uint64_t total = 0;  // the frames' bytes; `used` counts their padding too
    for (const auto size : sizes) {
      if (size > room - used) return corrupt("frame sizes exceed the record");
      total += size;
      used += pad8(size);  // room and used are multiples of 8: no overshoot
    }
    out.wire_bytes = wire::kHeaderSize + total;
    const std::uint64_t next_pos = read_pos_ + kRecordHead + head.body;
    try {
      out.message.header = wire::decode_header(header_bytes, max_payload_);
      wire::check_payload(out.message.header, total, sizes.size());
    } catch (const ProtocolError& e) {
      // The record itself is well-formed: skip the message, keep the ring.
      read_pos_ = next_pos;
      publish();
      out.kind = Kind::kDropped;
      out.why = e.message();
      out.message = {};
      return out;
    }
    out.message.payload.reserve(sizes.size());
    const bool may_view = in_place_min > 0 && hold_->lease == 0;
    for (const auto size : sizes) {
      const std::uint64_t offset = pos % capacity_;
      if (may_view && size >= in_place_min && (mirrored_ || size <= capacity_ - offset)) {
        if (out.message.views.empty()) out.message.views.resize(sizes.size());
        out.message.views[out.message.payload.size()] = {data_ + offset, size};
        out.message.payload.emplace_back();
      } else {
        out.message.payload.push_back(take(pos, size));
      }
      pos += pad8(size);
    }
    if (!out.message.views.empty()) {
      // The writer keeps off this record until the lease is dropped (RingHold::release); the
      // shared read position still stands at the record's start.
      hold_->lease = ++hold_->leases;
      out.message.lease = std::make_shared<RingLease>(hold_, hold_->lease);
    }
    read_pos_ = next_pos;
    publish();
    out.kind = Kind::kMessage;
    return out;
  }
}

}  // namespace dt::transport::shm

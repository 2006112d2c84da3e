#pragma once
// The same-host fast path's building blocks: a shared-memory region holding two single-producer
// single-consumer rings of whole messages (up: connection -> listener, down: listener ->
// connection), and the "bells" (named FIFOs) a sleeping reader is woken through.
//
// Region file: /dev/shm/disttrain-<pid>-<n>-<random> (tmpfs: the ipc folder may sit on a disk,
// where a shared mapping would be written back), 0600, created by the connection and unlinked as
// soon as the listener has it open, so a run leaves nothing behind unless both ends die in that
// window (a 4 KiB sparse file). Bells live in the ipc folder, which its owner removes.
//
// A ring is a byte stream of records aligned to 8 bytes; positions grow without wrapping and are
// taken modulo the capacity. A record is published whole (one release store of write_pos), so
// the reader never sees half of one:
//   u32 kind (data, marker, skip), u32 frame count, u64 body size, then for data:
//   the 40-byte wire header, frame count x u64 frame sizes, the frames, each padded to 8 bytes
//   (so a frame of doubles that does not wrap around the ring's end can be read where it lies).
// A message that does not fit in the ring's free space goes over ZeroMQ and leaves a marker
// record in its place, so order holds and a send never waits for the reader (the ZeroMQ I/O
// thread queues it): two peers that both send big messages before receiving cannot deadlock.
// When the ring is empty and the writer is past its first kSkipAfter bytes, it skips to the
// ring's start, so a link that carries small messages keeps touching the same few pages instead
// of sweeping (and keeping resident) the whole capacity, and the stretch before the skip (all
// the writer may use until the reader passes it) is never smaller than kSkipAfter.
//
// Wake-ups: a reader about to sleep sets reader_waiting (seq_cst) and looks at write_pos again;
// a writer stores write_pos (seq_cst) and then looks at reader_waiting; one of them sees the
// other (Dekker), so no wake-up is lost and a busy exchange makes no system call.
//
// Nothing in a region is trusted: every size read from it is checked against the mapping and
// max_payload before use; a ring that breaks the rules is reported corrupt, never read past.
//
// Reading in place (RingReader::next with in_place_min): large frames come as views into the
// ring instead of copies (a region maps each ring twice in a row, so a frame that wraps around
// the ring's end lies in one piece too), and the ring space from that record on is held back from the writer
// (the shared read position stays at the record's start) until the message's lease is dropped.
// The lease keeps the mapping alive, so a view stays readable after its peer is forgotten or its
// process has died; a writer that breaks the rules could change the bytes under it, never make
// the reader read outside the mapping.

#include "transports/wire.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dt::transport::shm {

// Message types the transport keeps to itself (core/protocol/protocol never uses 0xFFF0 and up). They
// travel over ZeroMQ, as wire messages, during the switch-over:
//   offer  (connection -> listener): payload = region name, bell path
//   accept (listener -> connection): payload = the listener's bell path; the last message the
//          listener sends to that peer over ZeroMQ outside of markers
//   refuse (listener -> connection): payload = why; the connection stays on ZeroMQ
//   switch (connection -> listener): the last message the connection sends over ZeroMQ outside
//          of markers; the listener reads the up ring from then on
inline constexpr std::uint16_t kOffer = 0xFFF0;
inline constexpr std::uint16_t kAccept = 0xFFF1;
inline constexpr std::uint16_t kRefuse = 0xFFF2;
inline constexpr std::uint16_t kSwitch = 0xFFF3;
[[nodiscard]] inline bool is_control(std::uint16_t type) noexcept { return type >= 0xFFF0; }

// DISTTRAIN_SHM=0 turns the fast path off (connections then never offer; listeners still
// accept offers). DISTTRAIN_SHM_RING_MB sets a ring's capacity (default 8 MiB per direction).
[[nodiscard]] bool enabled();
[[nodiscard]] std::uint64_t ring_capacity();

inline constexpr std::uint32_t kRegionMagic = 0x4D535444;  // "DTSM"
inline constexpr std::uint32_t kRegionVersion = 2;  // 2: every frame padded to 8 bytes
inline constexpr std::uint64_t kHeaderBytes = 4096;
inline constexpr std::uint64_t kSkipAfter = 256 << 10;  // see the skip rule above
inline constexpr std::uint64_t kMinCapacity = 4096;
inline constexpr std::uint64_t kMaxCapacity = std::uint64_t{1} << 30;
inline constexpr int kUp = 0;
inline constexpr int kDown = 1;

struct RingControl {
  alignas(64) std::atomic<std::uint64_t> write_pos{0};
  alignas(64) std::atomic<std::uint64_t> read_pos{0};
  alignas(64) std::atomic<std::uint32_t> reader_waiting{0};
};

struct RegionHeader {
  std::uint32_t magic = kRegionMagic;
  std::uint32_t version = kRegionVersion;
  std::uint64_t capacity = 0;  // bytes per ring
  std::uint32_t connection_pid = 0;
  std::atomic<std::uint32_t> connection_closed{0};  // set by the connection's destructor
  std::atomic<std::uint32_t> listener_closed{0};
  RingControl rings[2];
};
static_assert(sizeof(RegionHeader) <= kHeaderBytes);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

// A named FIFO: the waiting side holds it read-write (so it never blocks and never sees EOF),
// the ringing side write-only and non-blocking. Owns its descriptor; unlinks the path it made.
class Bell {
 public:
  Bell() = default;
  Bell(Bell&& other) noexcept;
  Bell& operator=(Bell&& other) noexcept;
  ~Bell();
  // TransportError when the FIFO cannot be made.
  [[nodiscard]] static Bell create(const std::filesystem::path& path);
  // std::nullopt when it cannot be opened.
  [[nodiscard]] static std::optional<Bell> open_to_ring(const std::filesystem::path& path);
  void ring() const noexcept;   // one byte; a full pipe already means "wake up"
  void drain() const noexcept;  // empties the pipe after a wake-up
  void unlink() noexcept;       // the name goes; the descriptor stays
  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  int fd_ = -1;
  std::filesystem::path path_;
  bool owner_ = false;  // unlink the path on destruction
};

// One mapping of a region file.
class Region {
 public:
  Region(Region&& other) noexcept;
  Region& operator=(Region&&) = delete;
  ~Region();
  // A new region in /dev/shm (the connection's side); std::nullopt when none can be made.
  [[nodiscard]] static std::optional<Region> create(std::uint64_t capacity);
  // The region a peer offered (the listener's side). ProtocolError naming what is wrong when
  // the name, the file or its header does not check out.
  [[nodiscard]] static Region open(const std::string& name);
  // Whether the region file of a valid name is still there (a name not of ours: true).
  [[nodiscard]] static bool exists(const std::string& name);
  [[nodiscard]] RegionHeader& header() const noexcept { return *header_; }
  // A ring's bytes; when mirrored(), followed by the same bytes again (see map_region).
  [[nodiscard]] std::byte* ring_data(int ring) const noexcept {
    return base_ + kHeaderBytes + static_cast<std::uint64_t>(ring) * (mirrored_ ? 2 : 1) * capacity_;
  }
  [[nodiscard]] std::uint64_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] bool mirrored() const noexcept { return mirrored_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  void unlink() noexcept;  // removes the file's name (the mapping stays)

 private:
  Region(std::byte* base, std::uint64_t capacity, bool mirrored, std::string name, bool named);
  std::byte* base_ = nullptr;
  std::uint64_t size_ = 0;  // of the mapping
  std::uint64_t capacity_ = 0;
  bool mirrored_ = false;
  RegionHeader* header_ = nullptr;
  std::string name_;
  bool named_ = false;  // the file still has its name in /dev/shm
};

// The producing end of one ring. Used by one thread.
class RingWriter {
 public:
  RingWriter(const Region& region, int ring);
  // Over one ring's control block and `capacity` bytes directly (what the constructor above
  // does with a region's ring; tests write rings in plain memory with it).
  RingWriter(RingControl& control, std::byte* data, std::uint64_t capacity);
  enum class Result { kWritten, kMarked, kFull, kCorrupt };
  // kWritten: the message is in the ring. kMarked: it did not fit, a marker took its place and
  // the caller must send it over ZeroMQ now. kFull: not even a marker fits (the reader is
  // that far behind); nothing was written. kCorrupt: the reader's position is impossible.
  [[nodiscard]] Result write(const wire::Bytes& header, const wire::Message& message,
                             std::uint64_t payload_total);
  // Rings `bell` when the reader said it sleeps.
  void wake(const Bell& bell) const noexcept;

 private:
  [[nodiscard]] std::uint64_t put(std::uint64_t pos, const void* data, std::uint64_t size);
  RingControl* control_;
  std::byte* data_;
  std::uint64_t capacity_;
  std::uint64_t write_pos_;
  std::uint64_t skip_from_ = 0;  // the last skip: from where the record stood to the ring start
  std::uint64_t skip_to_ = 0;
};

// What a reader holds back from the writer while a record is read in place (see above). Shared
// by the reader and the lease it gives out; used on the reader's thread only.
struct RingHold {
  RingControl* control = nullptr;
  std::shared_ptr<const void> mapping;  // keeps the region mapped while a lease lives
  std::uint64_t release_to = 0;         // the reader's position, published at release
  std::uint64_t lease = 0;              // the lease holding the space (0: none), by number
  std::uint64_t leases = 0;             // leases given out so far
  // Publishes release_to as the read position, if lease `id` still holds the space: the writer
  // may reuse it from then on.
  void release(std::uint64_t id) noexcept;
};

// The consuming end of one ring. Used by one thread.
class RingReader {
 public:
  // `mapping`: what keeps the region mapped (a shared_ptr to it), kept by each lease.
  RingReader(const Region& region, int ring, std::uint64_t max_payload,
             std::shared_ptr<const void> mapping = {});
  // Over one ring's control block and `capacity` bytes directly: the seam through which
  // tests/fuzz/fuzz_shm_ring.cpp gives next() the rings a hostile writer could leave.
  RingReader(RingControl& control, const std::byte* data, std::uint64_t capacity,
             std::uint64_t max_payload, std::shared_ptr<const void> mapping = {});
  // kDropped: a well-formed record holding a malformed message (skipped, the ring goes on);
  // kCorrupt: the ring itself breaks the rules (stop reading it).
  enum class Kind { kEmpty, kMessage, kMarker, kDropped, kCorrupt };
  struct Next {
    Kind kind = Kind::kEmpty;
    wire::Message message;       // kMessage
    std::uint64_t wire_bytes = 0;  // header + payload: what Counters count
    std::string why;             // kDropped, kCorrupt
  };
  // in_place_min > 0: frames of at least that many bytes (in a region that is not mirrored,
  // only those that do not wrap around the ring's end) come as views (wire::Message::views) held by message.lease, while no
  // earlier lease of this ring is still held (then they are copied). The lease must be dropped
  // on this reader's thread.
  [[nodiscard]] Next next(std::uint64_t in_place_min = 0);
  [[nodiscard]] bool has_data() const noexcept;
  // Before sleeping: says so, then true when data came meanwhile (then do not sleep).
  [[nodiscard]] bool announce_sleep() noexcept;
  void clear_sleep() noexcept;

 private:
  void get(std::uint64_t pos, void* out, std::uint64_t size) const;
  [[nodiscard]] wire::Bytes take(std::uint64_t pos, std::uint64_t size) const;  // one frame
  void publish() noexcept;  // read_pos_ to the writer, unless a lease holds the space back
  RingControl* control_;
  const std::byte* data_;
  std::uint64_t capacity_;
  std::uint64_t max_payload_;
  std::uint64_t read_pos_;
  std::shared_ptr<RingHold> hold_;
  bool mirrored_ = false;  // data_ is followed by itself again: a wrapping frame can be viewed
};

}  // namespace dt::transport::shm

#include "transports/shm/region.hpp"

#include "base/error.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>

namespace dt::transport::shm {
namespace {

constexpr std::string_view kShmDir = "/dev/shm/";
constexpr std::string_view kNamePrefix = "disttrain-";
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

[[nodiscard]] bool valid_name(const std::string& name) {
  return name.size() > kNamePrefix.size() && name.size() < 80 && name.starts_with(kNamePrefix) &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
         });
}

}  // namespace

bool enabled() {
  const char* value = std::getenv("DISTTRAIN_SHM");
  return value == nullptr || std::string_view(value) != "0";
}

std::uint64_t ring_capacity() {
  std::uint64_t mb = 8;
  if (const char* value = std::getenv("DISTTRAIN_SHM_RING_MB")) {
    std::uint64_t parsed = 0;
    const std::string_view text(value);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec == std::errc{} && end == text.data() + text.size() && parsed >= 1 && parsed <= 1024) {
      mb = parsed;
    }
  }
  return mb << 20;
}

// ---- Bell

Bell::Bell(Bell&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)),
      owner_(std::exchange(other.owner_, false)) {}

Bell& Bell::operator=(Bell&& other) noexcept {
  if (this != &other) {
    this->~Bell();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    owner_ = std::exchange(other.owner_, false);
  }
  return *this;
}

Bell::~Bell() {
  unlink();
  if (fd_ >= 0) ::close(fd_);
}

Bell Bell::create(const std::filesystem::path& path) {
  if (::mkfifo(path.c_str(), 0600) != 0) {
    fail<TransportError>("cannot make the wake-up FIFO {}: {}", path.string(), std::strerror(errno));
  }
  Bell bell;
  bell.path_ = path;
  bell.owner_ = true;
  // Read-write: opening never blocks and the pipe never reports end-of-file.
  bell.fd_ = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (bell.fd_ < 0) {
    fail<TransportError>("cannot open the wake-up FIFO {}: {}", path.string(), std::strerror(errno));
  }
  return bell;
}

std::optional<Bell> Bell::open_to_ring(const std::filesystem::path& path) {
  Bell bell;
  bell.fd_ = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (bell.fd_ < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(bell.fd_, &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != ::geteuid()) {
    return std::nullopt;
  }
  bell.path_ = path;
  return bell;
}

void Bell::ring() const noexcept {
  const char byte = 1;
  // EAGAIN: the pipe is full, so the reader will wake anyway.
  while (::write(fd_, &byte, 1) < 0 && errno == EINTR) {
  }
}

void Bell::drain() const noexcept {
  char buffer[256];
  while (::read(fd_, buffer, sizeof buffer) > 0) {
  }
}

void Bell::unlink() noexcept {
  if (owner_) ::unlink(path_.c_str());
  owner_ = false;
}

// ---- Region

Region::Region(std::byte* base, std::uint64_t size, std::uint64_t capacity, std::string name,
               bool named)
    : base_(base), size_(size), capacity_(capacity),
      header_(reinterpret_cast<RegionHeader*>(base)), name_(std::move(name)), named_(named) {}

Region::Region(Region&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(other.size_), capacity_(other.capacity_),
      header_(other.header_), name_(std::move(other.name_)),
      named_(std::exchange(other.named_, false)) {}

Region::~Region() {
  unlink();
  if (base_ != nullptr) ::munmap(base_, size_);
}

void Region::unlink() noexcept {
  if (named_) ::unlink((std::string(kShmDir) + name_).c_str());
  named_ = false;
}

std::optional<Region> Region::create(std::uint64_t capacity) {
  static std::atomic<std::uint64_t> counter{0};
  std::random_device random;
  const std::string name = fmt::format("{}{}-{}-{:08x}", kNamePrefix, ::getpid(), counter++,
                                       static_cast<std::uint32_t>(random()));
  const std::string path = std::string(kShmDir) + name;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return std::nullopt;
  const std::uint64_t size = kHeaderBytes + 2 * capacity;
  // Sparse: pages are allocated as the rings touch them.
  void* base = ::ftruncate(fd, static_cast<off_t>(size)) == 0
                   ? ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                   : MAP_FAILED;
  ::close(fd);
  if (base == MAP_FAILED) {
    ::unlink(path.c_str());
    return std::nullopt;
  }
  auto* header = new (base) RegionHeader{};
  header->capacity = capacity;
  header->connection_pid = static_cast<std::uint32_t>(::getpid());
  return Region(static_cast<std::byte*>(base), size, capacity, name, true);
}

bool Region::exists(const std::string& name) {
  if (!valid_name(name)) return true;  // not ours: let open() say why
  struct stat st {};
  return ::stat((std::string(kShmDir) + name).c_str(), &st) == 0;
}

Region Region::open(const std::string& name) {
  if (!valid_name(name)) fail<ProtocolError>("offered region name is not one of ours");
  const std::string path = std::string(kShmDir) + name;
  const int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) fail<ProtocolError>("cannot open {}: {}", path, std::strerror(errno));
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  // The name has done its job: whatever happens next, nothing is left in /dev/shm.
  ::unlink(path.c_str());
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (!stat_ok || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0 ||
      size < kHeaderBytes + 2 * kMinCapacity || size > kHeaderBytes + 2 * kMaxCapacity) {
    ::close(fd);
    fail<ProtocolError>("{} is not a private region file of this user", path);
  }
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) fail<ProtocolError>("cannot map {}: {}", path, std::strerror(errno));
  Region region(static_cast<std::byte*>(base), size, 0, name, false);
  const RegionHeader& h = region.header();
  const std::uint64_t capacity = h.capacity;
  if (h.magic != kRegionMagic || h.version != kRegionVersion || capacity < kMinCapacity ||
      capacity % 4096 != 0 || kHeaderBytes + 2 * capacity != size) {
    fail<ProtocolError>("{} has a bad header", path);
  }
  region.capacity_ = capacity;
  return region;
}

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
  const std::uint64_t body = pad8(header.size() + 8ull * frames + payload_total);
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
    for (const auto& frame : message.payload) {
      const std::uint64_t size = frame.size();
      pos = put(pos, &size, sizeof size);
    }
    for (const auto& frame : message.payload) pos = put(pos, frame.data(), frame.size());
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

RingReader::RingReader(const Region& region, int ring, std::uint64_t max_payload)
    : RingReader(region.header().rings[ring], region.ring_data(ring), region.capacity(),
                 max_payload) {}

RingReader::RingReader(RingControl& control, const std::byte* data, std::uint64_t capacity,
                       std::uint64_t max_payload)
    : control_(&control), data_(data), capacity_(capacity), max_payload_(max_payload),
      read_pos_(control_->read_pos.load(std::memory_order_relaxed)) {}

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

RingReader::Next RingReader::next() {
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
      control_->read_pos.store(read_pos_, std::memory_order_release);
      continue;
    }
    if (available > capacity_) return corrupt(fmt::format("write position out of range ({} {} {})", write, read_pos_, capacity_));
    if (head.kind == kMarker) {
      read_pos_ += kRecordHead;
      control_->read_pos.store(read_pos_, std::memory_order_release);
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
    std::uint64_t total = 0;
    const std::uint64_t room = head.body - wire::kHeaderSize - 8ull * head.frames;
    for (const auto size : sizes) {
      if (size > room - total) return corrupt("frame sizes exceed the record");
      total += size;
    }
    out.wire_bytes = wire::kHeaderSize + total;
    const std::uint64_t next_pos = read_pos_ + kRecordHead + head.body;
    try {
      out.message.header = wire::decode_header(header_bytes, max_payload_);
      wire::check_payload(out.message.header, total, sizes.size());
    } catch (const ProtocolError& e) {
      // The record itself is well-formed: skip the message, keep the ring.
      read_pos_ = next_pos;
      control_->read_pos.store(read_pos_, std::memory_order_release);
      out.kind = Kind::kDropped;
      out.why = e.message();
      out.message = {};
      return out;
    }
    out.message.payload.reserve(sizes.size());
    for (const auto size : sizes) {
      out.message.payload.push_back(take(pos, size));
      pos += size;
    }
    read_pos_ = next_pos;
    control_->read_pos.store(read_pos_, std::memory_order_release);
    out.kind = Kind::kMessage;
    return out;
  }
}

}  // namespace dt::transport::shm

// The region file and its mapping, and the bells (transports/shm/region.hpp); the rings' two
// ends are in ring.cpp.

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
[[nodiscard]] bool valid_name(const std::string& name) {
  return name.size() > kNamePrefix.size() && name.size() < 80 && name.starts_with(kNamePrefix) &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
         });
}

// Maps a region file of `capacity` bytes a ring: its header page, then each ring twice in a
// row (the same pages at two adjacent addresses), so that any stretch of a ring up to its
// capacity lies in one piece, where the ring wraps too (read in place). Where that cannot be
// done (a page size above 4 KiB puts the rings off page boundaries), one plain mapping:
// `mirrored` says which. nullptr when neither can be made.
std::byte* map_region(int fd, std::uint64_t capacity, bool& mirrored) {
  const std::uint64_t plain = kHeaderBytes + 2 * capacity;
  const std::uint64_t span = kHeaderBytes + 4 * capacity;
  mirrored = false;
  void* reserved = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                          -1, 0);
  if (reserved != MAP_FAILED) {
    auto* base = static_cast<std::byte*>(reserved);
    const auto at = [&](std::uint64_t address, std::uint64_t size, std::uint64_t offset) {
      return ::mmap(base + address, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                    static_cast<off_t>(offset)) != MAP_FAILED;
    };
    if (at(0, kHeaderBytes + capacity, 0) && at(kHeaderBytes + capacity, capacity, kHeaderBytes) &&
        at(kHeaderBytes + 2 * capacity, capacity, kHeaderBytes + capacity) &&
        at(kHeaderBytes + 3 * capacity, capacity, kHeaderBytes + capacity)) {
      mirrored = true;
      return base;
    }
    ::munmap(reserved, span);
  }
  void* base = ::mmap(nullptr, plain, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return base == MAP_FAILED ? nullptr : static_cast<std::byte*>(base);
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

Region::Region(std::byte* base, std::uint64_t capacity, bool mirrored, std::string name,
               bool named)
    : base_(base), size_(kHeaderBytes + (mirrored ? 4 : 2) * capacity), capacity_(capacity),
      mirrored_(mirrored), header_(reinterpret_cast<RegionHeader*>(base)),
      name_(std::move(name)), named_(named) {}

Region::Region(Region&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(other.size_), capacity_(other.capacity_),
      mirrored_(other.mirrored_), header_(other.header_), name_(std::move(other.name_)),
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
  bool mirrored = false;
  std::byte* base = ::ftruncate(fd, static_cast<off_t>(size)) == 0
                        ? map_region(fd, capacity, mirrored)
                        : nullptr;
  ::close(fd);
  if (base == nullptr) {
    ::unlink(path.c_str());
    return std::nullopt;
  }
  auto* header = new (base) RegionHeader{};
  header->capacity = capacity;
  header->connection_pid = static_cast<std::uint32_t>(::getpid());
  return Region(base, capacity, mirrored, name, true);
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
  // The header first, alone: the capacity it gives decides the mapping of the rings.
  void* head = ::mmap(nullptr, kHeaderBytes, PROT_READ, MAP_SHARED, fd, 0);
  if (head == MAP_FAILED) {
    ::close(fd);
    fail<ProtocolError>("cannot map {}: {}", path, std::strerror(errno));
  }
  const auto* h = static_cast<const RegionHeader*>(head);
  const bool good = h->magic == kRegionMagic && h->version == kRegionVersion;
  const std::uint64_t capacity = h->capacity;
  ::munmap(head, kHeaderBytes);
  if (!good || capacity < kMinCapacity || capacity % 4096 != 0 ||
      kHeaderBytes + 2 * capacity != size) {
    ::close(fd);
    fail<ProtocolError>("{} has a bad header", path);
  }
  bool mirrored = false;
  std::byte* base = map_region(fd, capacity, mirrored);
  ::close(fd);
  if (base == nullptr) fail<ProtocolError>("cannot map {}: {}", path, std::strerror(errno));
  return Region(base, capacity, mirrored, name, false);
}

}  // namespace dt::transport::shm

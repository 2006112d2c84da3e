#include "transports/wire.hpp"

#include "base/error.hpp"

#include <bit>
#include <cstring>

namespace dt::wire {
namespace {

// Payload doubles travel as the host's bytes and as_doubles() maps a frame in place, which is only
// the little-endian wire format on a little-endian host. A big-endian port would byte-swap here.
static_assert(std::endian::native == std::endian::little,
              "the wire format maps payload frames as little-endian doubles");

// Explicit byte packing: the layout never depends on struct padding or host byte order.
template <class T>
void put(Bytes& out, std::size_t offset, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[offset + i] = static_cast<std::byte>((value >> (8 * i)) & 0xFF);
  }
}

template <class T>
[[nodiscard]] T get(std::span<const std::byte> in, std::size_t offset) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    const auto byte = static_cast<T>(std::to_integer<unsigned>(in[offset + i]));
    value = static_cast<T>(value | (byte << (8 * i)));
  }
  return value;
}

constexpr std::size_t kMagicAt = 0;
constexpr std::size_t kVersionAt = 4;
constexpr std::size_t kTypeAt = 6;
constexpr std::size_t kJobAt = 8;
constexpr std::size_t kRankAt = 16;
constexpr std::size_t kGenerationAt = 20;
constexpr std::size_t kStepAt = 24;
constexpr std::size_t kPayloadSizeAt = 32;
static_assert(kPayloadSizeAt + 8 == kHeaderSize);

}  // namespace

Bytes encode_header(const Header& header) {
  Bytes out(kHeaderSize);
  put<std::uint32_t>(out, kMagicAt, kMagic);
  put<std::uint16_t>(out, kVersionAt, header.version);
  put<std::uint16_t>(out, kTypeAt, header.type);
  put<std::uint64_t>(out, kJobAt, header.job_id);
  put<std::uint32_t>(out, kRankAt, header.rank);
  put<std::uint32_t>(out, kGenerationAt, header.generation);
  put<std::uint64_t>(out, kStepAt, header.step);
  put<std::uint64_t>(out, kPayloadSizeAt, header.payload_size);
  return out;
}

std::optional<std::uint16_t> peek_version(std::span<const std::byte> frame) {
  if (frame.size() < kVersionAt + 2 || get<std::uint32_t>(frame, kMagicAt) != kMagic) {
    return std::nullopt;
  }
  return get<std::uint16_t>(frame, kVersionAt);
}

Bytes version_notice() { return encode_header(Header{}); }

Header decode_header(std::span<const std::byte> frame, std::uint64_t max_payload) {
  if (frame.size() != kHeaderSize) {
    fail<ProtocolError>("header frame is {} bytes, expected {}", frame.size(), kHeaderSize);
  }
  const auto magic = get<std::uint32_t>(frame, kMagicAt);
  if (magic != kMagic) fail<ProtocolError>("bad magic 0x{:08x}: not a disttrain peer", magic);
  Header header;
  header.version = get<std::uint16_t>(frame, kVersionAt);
  if (header.version != kProtocolVersion) {
    fail<ProtocolError>("protocol version {}, this build speaks {}", header.version,
                        kProtocolVersion);
  }
  header.type = get<std::uint16_t>(frame, kTypeAt);
  header.job_id = get<std::uint64_t>(frame, kJobAt);
  header.rank = get<std::uint32_t>(frame, kRankAt);
  header.generation = get<std::uint32_t>(frame, kGenerationAt);
  header.step = get<std::uint64_t>(frame, kStepAt);
  header.payload_size = get<std::uint64_t>(frame, kPayloadSizeAt);
  if (header.payload_size > max_payload) {
    fail<ProtocolError>("payload of {} bytes exceeds the limit of {} bytes", header.payload_size,
                        max_payload);
  }
  return header;
}

void check_payload(const Header& header, std::uint64_t frames_total, std::size_t frame_count) {
  if (frames_total != header.payload_size) {
    fail<ProtocolError>("payload frames add up to {} bytes in {} frame(s), the header declares {}",
                        frames_total, frame_count, header.payload_size);
  }
}

std::span<const std::byte> frame(const Message& message, std::size_t i) {
  if (i < message.views.size() && message.views[i].data() != nullptr) return message.views[i];
  return message.payload.at(i);
}

std::uint64_t payload_total(const Message& message) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < message.payload.size(); ++i) total += frame(message, i).size();
  return total;
}

void check_payload(const Message& message) {
  check_payload(message.header, payload_total(message), message.payload.size());
}

// Built from the range (one pass: allocate and copy) rather than sized and then copied into,
// which zero-fills first: a second pass over every byte of a large model's message.
Bytes to_bytes(std::span<const double> values) {
  if (values.empty()) return {};
  const auto* first = reinterpret_cast<const std::byte*>(values.data());
  return Bytes(first, first + values.size_bytes());
}

Bytes to_bytes(std::string_view text) {
  if (text.empty()) return {};
  const auto* first = reinterpret_cast<const std::byte*>(text.data());
  return Bytes(first, first + text.size());
}

std::span<const double> as_doubles(std::span<const std::byte> frame) {
  if (frame.size() % sizeof(double) != 0) {
    fail<ProtocolError>("payload frame is {} bytes, not a whole number of {}-byte doubles",
                        frame.size(), sizeof(double));
  }
  if (frame.empty()) return {};
  // Vector storage comes from operator new, aligned for any fundamental type, and ring frames
  // start 8-aligned (transports/shm/region.hpp); checked anyway because a misaligned read is
  // undefined behaviour, not just slow.
  const auto address = reinterpret_cast<std::uintptr_t>(frame.data());
  if (address % alignof(double) != 0) {
    fail<ProtocolError>("payload frame at 0x{:x} is not aligned for doubles", address);
  }
  return {reinterpret_cast<const double*>(frame.data()), frame.size() / sizeof(double)};
}

std::span<const double> as_doubles(std::span<const std::byte> frame,
                                  std::size_t expected_count) {
  if (frame.size() != expected_count * sizeof(double)) {
    fail<ProtocolError>("payload frame is {} bytes, expected {} ({} doubles)", frame.size(),
                        expected_count * sizeof(double), expected_count);
  }
  return as_doubles(frame);
}

std::string_view as_text(std::span<const std::byte> frame) {
  return {reinterpret_cast<const char*>(frame.data()), frame.size()};
}

}  // namespace dt::wire

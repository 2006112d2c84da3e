#include "core/protocol/key_frames.hpp"

#include "base/error.hpp"

#include <cstring>

namespace dt::protocol {
namespace {

constexpr std::size_t kCountBytes = 4;
constexpr int kMaxVarintBytes = 5;  // 32 bits at 7 a byte

std::size_t varint_size(std::uint32_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

}  // namespace

std::size_t encoded_key_bytes(std::span<const std::uint32_t> keys) noexcept {
  std::size_t n = kCountBytes;
  std::uint32_t previous = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    n += varint_size(i == 0 ? keys[0] : keys[i] - previous);
    previous = keys[i];
  }
  return n;
}

void encode_keys_into(std::span<const std::uint32_t> keys, wire::Bytes& out) {
  if (keys.size() > UINT32_MAX) fail<ProtocolError>("a key list of {} keys is too long", keys.size());
  out.resize(encoded_key_bytes(keys));
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  const auto count = static_cast<std::uint32_t>(keys.size());
  for (std::size_t b = 0; b < kCountBytes; ++b) *p++ = static_cast<unsigned char>(count >> (8 * b));
  std::uint32_t previous = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::uint32_t v = i == 0 ? keys[0] : keys[i] - previous;
    previous = keys[i];
    while (v >= 0x80) {
      *p++ = static_cast<unsigned char>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<unsigned char>(v);
  }
}

wire::Bytes encode_keys(std::span<const std::uint32_t> keys) {
  wire::Bytes out;
  encode_keys_into(keys, out);
  return out;
}

void decode_keys(std::span<const std::byte> frame, std::uint64_t width, std::string_view what,
                 std::vector<std::uint32_t>& out) {
  out.clear();
  if (frame.size() < kCountBytes) {
    fail<ProtocolError>("{}: a key frame of {} bytes is shorter than its 4-byte count", what,
                        frame.size());
  }
  const auto* p = reinterpret_cast<const unsigned char*>(frame.data());
  const auto* const end = p + frame.size();
  std::uint32_t count = 0;
  for (std::size_t b = 0; b < kCountBytes; ++b) count |= static_cast<std::uint32_t>(*p++) << (8 * b);
  // Every key takes at least a byte: a count past the bytes left is a lie, refused before any
  // memory is reserved for it.
  if (count > static_cast<std::size_t>(end - p)) {
    fail<ProtocolError>("{}: the frame promises {} keys in {} bytes", what, count, end - p);
  }
  out.reserve(count);
  std::uint64_t key = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint64_t v = 0;
    int shift = 0;
    for (int b = 0;; ++b) {
      if (p == end) fail<ProtocolError>("{}: the frame ends inside key {} of {}", what, i + 1, count);
      if (b == kMaxVarintBytes) {
        fail<ProtocolError>("{}: key {} of {} is longer than a 32-bit key's encoding", what, i + 1,
                            count);
      }
      const unsigned char byte = *p++;
      v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if ((byte & 0x80) == 0) break;
    }
    if (i > 0 && v == 0) fail<ProtocolError>("{}: key {} repeats the key before it", what, i + 1);
    key = i == 0 ? v : key + v;
    if (key >= width) {
      fail<ProtocolError>("{}: key {} is {}, past the model's width {}", what, i + 1, key, width);
    }
    out.push_back(static_cast<std::uint32_t>(key));
  }
  if (p != end) {
    fail<ProtocolError>("{}: {} bytes follow the {} keys the frame promises", what, end - p, count);
  }
}

}  // namespace dt::protocol

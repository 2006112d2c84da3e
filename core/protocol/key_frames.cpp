#include "core/protocol/key_frames.hpp"

#include "base/error.hpp"

#include <bit>
#include <cstring>

namespace dt::protocol {
namespace {

constexpr std::size_t kCountBytes = 4;
constexpr int kMaxVarintBytes = 5;  // 32 bits at 7 a byte
static_assert(std::endian::native == std::endian::little, "key frames load varints as words");

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

// One varint as a little-endian word: the 7-bit groups of `v` spread one a byte, the high bit set
// on each byte before the last of its `size` bytes. Without a branch on the gap's size: the
// gaps of a batch's keys take one or two bytes at random (about 230 apart at 2^22 buckets), and
// a loop that tests each byte mispredicts about once a key.
std::uint64_t varint_word(std::uint32_t v, std::size_t& size) noexcept {
  const std::uint64_t x = v;
  size = 1 + static_cast<std::size_t>(x >= (1u << 7)) + static_cast<std::size_t>(x >= (1u << 14)) +
         static_cast<std::size_t>(x >= (1u << 21)) + static_cast<std::size_t>(x >= (1u << 28));
  const std::uint64_t spread = (x & 0x7f) | ((x << 1) & 0x7f00) | ((x << 2) & 0x7f0000) |
                               ((x << 3) & 0x7f000000) | ((x << 4) & 0x7f00000000);
  const std::uint64_t more = 0x8080808080ULL & ((std::uint64_t{1} << (8 * (size - 1))) - 1);
  return spread | more;
}

void encode_keys_into(std::span<const std::uint32_t> keys, wire::Bytes& out) {
  if (keys.size() > UINT32_MAX) fail<ProtocolError>("a key list of {} keys is too long", keys.size());
  // Room for the longest varints and a whole word's store past the last one, then cut to size:
  // one pass over the keys.
  out.resize(kCountBytes + keys.size() * kMaxVarintBytes + sizeof(std::uint64_t));
  auto* const first = reinterpret_cast<unsigned char*>(out.data());
  auto* p = first;
  const auto count = static_cast<std::uint32_t>(keys.size());
  for (std::size_t b = 0; b < kCountBytes; ++b) *p++ = static_cast<unsigned char>(count >> (8 * b));
  std::uint32_t previous = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::size_t size = 0;
    const std::uint64_t word = varint_word(i == 0 ? keys[0] : keys[i] - previous, size);
    previous = keys[i];
    std::memcpy(p, &word, sizeof word);  // little-endian: its first `size` bytes are the varint
    p += size;
  }
  out.resize(static_cast<std::size_t>(p - first));
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

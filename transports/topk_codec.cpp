#include "transports/topk_codec.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace dt::wire {
namespace {

// Names unique in the unity build (the other transports/ files share its unit).
constexpr std::uint8_t kTopkFrameVersion = 1;

void put_u32(std::byte* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
}

std::uint32_t get_u32(const std::byte* at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(at[i]) << (8 * i);
  return v;
}

// |v|, NaN as the largest (a total order for the selection).
double topk_magnitude(double v) {
  return std::isnan(v) ? std::numeric_limits<double>::infinity() : std::fabs(v);
}

struct TopkFrame {
  std::size_t count = 0;
  std::span<const std::byte> keys;
  const std::byte* values = nullptr;
};

TopkFrame read_topk(std::span<const std::byte> frame, std::size_t n) {
  if (frame.size() < kTopkFrameHeader) {
    fail<ProtocolError>("top-k frame of {} bytes is shorter than its {}-byte header",
                        frame.size(), kTopkFrameHeader);
  }
  const auto codec = static_cast<std::uint8_t>(frame[0]);
  const auto version = static_cast<std::uint8_t>(frame[1]);
  if (codec != kTopkCodec) {
    fail<ProtocolError>("top-k frame has codec {}, expected {} (topk)", codec, kTopkCodec);
  }
  if (version != kTopkFrameVersion) {
    fail<ProtocolError>("top-k frame has format version {}, this build reads {}", version,
                        kTopkFrameVersion);
  }
  const std::uint32_t length = get_u32(frame.data() + 4);
  const std::uint32_t count = get_u32(frame.data() + 8);
  const std::uint32_t key_bytes = get_u32(frame.data() + 12);
  if (length != n) fail<ProtocolError>("top-k frame is of {} values, expected {}", length, n);
  if (count > length) {
    fail<ProtocolError>("top-k frame has {} entries for {} values", count, length);
  }
  const std::uint64_t want = kTopkFrameHeader + std::uint64_t{key_bytes} + 8ull * count;
  if (frame.size() != want) {
    fail<ProtocolError>("top-k frame of {} entries and {} key bytes is {} bytes, expected {}",
                        count, key_bytes, frame.size(), want);
  }
  return {count, frame.subspan(kTopkFrameHeader, key_bytes),
          frame.data() + kTopkFrameHeader + key_bytes};
}

// Calls visit(entry, key) for every key of the frame, checking the varints and the order.
template <class Visit>
void each_key(const TopkFrame& f, std::size_t n, Visit&& visit) {
  std::size_t at = 0;
  std::uint64_t next = 0;  // the lowest key the next one may be
  for (std::size_t e = 0; e < f.count; ++e) {
    std::uint64_t gap = 0;
    for (int shift = 0;; shift += 7) {
      if (at >= f.keys.size() || shift > 28) {
        fail<ProtocolError>("top-k frame: key {} of {} is cut short or too long", e + 1, f.count);
      }
      const auto byte = static_cast<std::uint8_t>(f.keys[at++]);
      gap |= std::uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80u) == 0) break;
    }
    const std::uint64_t key = next + gap;
    if (key >= n) {
      fail<ProtocolError>("top-k frame: key {} of entry {} is past the {} values", key, e + 1, n);
    }
    visit(e, static_cast<std::size_t>(key));
    next = key + 1;
  }
  if (at != f.keys.size()) {
    fail<ProtocolError>("top-k frame: {} key bytes left over after {} keys",
                        f.keys.size() - at, f.count);
  }
}

}  // namespace

std::size_t topk_count(double ratio, std::size_t n) {
  if (n == 0) return 0;
  const double want = std::ceil(ratio * static_cast<double>(n));
  if (!(want >= 1.0)) return 1;
  return want >= static_cast<double>(n) ? n : static_cast<std::size_t>(want);
}

void select_topk(std::span<const double> values, std::size_t k, std::vector<std::uint32_t>& order,
                 std::vector<std::uint32_t>& out) {
  const std::size_t n = values.size();
  k = std::min(k, n);
  order.resize(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
  // A strict total order (magnitude down, then index up): the set chosen does not depend on
  // how nth_element moves things.
  const auto before = [&](std::uint32_t a, std::uint32_t b) {
    const double ma = topk_magnitude(values[a]);
    const double mb = topk_magnitude(values[b]);
    return ma > mb || (ma == mb && a < b);
  };
  if (k < n) {
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                     before);
  }
  out.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
  std::sort(out.begin(), out.end());
}

void encode_topk(std::span<const std::uint32_t> keys, std::span<const double> values,
                 std::uint32_t base, std::size_t n, Bytes& out) {
  out.resize(kTopkFrameHeader + 5 * keys.size() + 8 * keys.size());
  std::byte* p = out.data();
  p[0] = static_cast<std::byte>(kTopkCodec);
  p[1] = static_cast<std::byte>(kTopkFrameVersion);
  p[2] = p[3] = std::byte{0};
  put_u32(p + 4, static_cast<std::uint32_t>(n));
  put_u32(p + 8, static_cast<std::uint32_t>(keys.size()));
  std::size_t at = kTopkFrameHeader;
  std::uint32_t next = 0;
  for (const std::uint32_t global : keys) {
    const std::uint32_t key = global - base;
    std::uint32_t gap = key - next;
    while (gap >= 0x80u) {
      p[at++] = static_cast<std::byte>((gap & 0x7fu) | 0x80u);
      gap >>= 7;
    }
    p[at++] = static_cast<std::byte>(gap);
    next = key + 1;
  }
  put_u32(p + 12, static_cast<std::uint32_t>(at - kTopkFrameHeader));
  static_assert(std::endian::native == std::endian::little, "the wire is little-endian");
  std::memcpy(p + at, values.data(), values.size_bytes());
  out.resize(at + values.size_bytes());
}

void add_topk(std::span<const std::byte> frame, std::span<double> out) {
  const TopkFrame f = read_topk(frame, out.size());
  each_key(f, out.size(), [&](std::size_t e, std::size_t key) {
    double v = 0;
    std::memcpy(&v, f.values + 8 * e, sizeof v);
    out[key] += v;
  });
}

std::size_t topk_entries(std::span<const std::byte> frame, std::size_t n) {
  const TopkFrame f = read_topk(frame, n);
  each_key(f, n, [](std::size_t, std::size_t) {});
  return f.count;
}

}  // namespace dt::wire

#include "transports/half_codec.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace dt::wire {
namespace {

// Names unique in the unity build (the other transports/ files share its unit).
struct HalfFormat {
  int mantissa;  // stored mantissa bits
  int bias;      // exponent bias, also the largest unbiased exponent of a finite value
};

constexpr HalfFormat half_format(HalfCodec codec) {
  return codec == HalfCodec::kFp16 ? HalfFormat{10, 15} : HalfFormat{7, 127};
}

constexpr std::uint16_t half_inf_bits(HalfFormat f) {
  return static_cast<std::uint16_t>(((1u << (15 - f.mantissa)) - 1u) << f.mantissa);
}

constexpr std::uint8_t kHalfFrameVersion = 1;
constexpr int kMinScale = -1022;  // 2^s and 2^-s stay normal doubles
constexpr int kMaxScale = 1022;

const char* half_name(HalfCodec codec) { return codec == HalfCodec::kFp16 ? "fp16" : "bf16"; }

// The scale exponent that puts the largest finite magnitude of `values` in
// [2^(bias-1), 2^bias) (or one binade lower, below); 0 when there is none (all zero or
// non-finite).
int half_scale(std::span<const double> values, HalfCodec codec) {
  const HalfFormat f = half_format(codec);
  double largest = 0;
  for (const double v : values) {
    const double a = std::fabs(v);
    if (a > largest && a <= std::numeric_limits<double>::max()) largest = a;
  }
  if (largest == 0) return 0;
  int exponent = 0;
  (void)std::frexp(largest, &exponent);  // largest in [2^(exponent-1), 2^exponent)
  const int scale = std::clamp(f.bias - exponent, kMinScale, kMaxScale);
  // When the largest value rounds up into the next binade (to 2^bias), one binade lower: then
  // a decoded frame encodes again to the same bits (its largest value gives the same scale),
  // which the ring's all-gather relies on (every member forwards what it received, re-encoded).
  const auto top = static_cast<std::uint16_t>((f.bias + f.bias) << f.mantissa);  // 2^bias
  if (scale > kMinScale && to_half(largest * std::ldexp(1.0, scale), codec) == top) {
    return scale - 1;
  }
  return scale;
}

struct HalfFrame {
  int scale = 0;
  std::size_t count = 0;
  const std::byte* halves = nullptr;
};

HalfFrame read_half_frame(std::span<const std::byte> frame, HalfCodec codec, std::size_t expected) {
  if (frame.size() < kHalfFrameHeader) {
    fail<ProtocolError>("{} frame is {} bytes, shorter than its {}-byte header", half_name(codec),
                        frame.size(), kHalfFrameHeader);
  }
  const auto got_codec = static_cast<std::uint8_t>(frame[0]);
  if (got_codec != static_cast<std::uint8_t>(codec)) {
    fail<ProtocolError>("compressed frame of codec {}, expected {} ({}): the peers disagree on "
                        "aggregation.compression",
                        got_codec, static_cast<int>(codec), half_name(codec));
  }
  if (static_cast<std::uint8_t>(frame[1]) != kHalfFrameVersion) {
    fail<ProtocolError>("{} frame of format version {}, this build reads {}", half_name(codec),
                        static_cast<int>(frame[1]), kHalfFrameVersion);
  }
  std::int16_t scale = 0;
  std::uint32_t count = 0;
  std::memcpy(&scale, frame.data() + 2, sizeof scale);
  std::memcpy(&count, frame.data() + 4, sizeof count);
  if (scale < kMinScale || scale > kMaxScale) {
    fail<ProtocolError>("{} frame with scale exponent {}, outside [{}, {}]", half_name(codec),
                        scale, kMinScale, kMaxScale);
  }
  if (count != expected || frame.size() != kHalfFrameHeader + 2 * std::size_t{count}) {
    fail<ProtocolError>("{} frame is {} bytes holding {} values, expected {} values ({} bytes)",
                        half_name(codec), frame.size(), count, expected,
                        kHalfFrameHeader + 2 * expected);
  }
  return {scale, count, frame.data() + kHalfFrameHeader};
}

std::uint16_t half_at(const std::byte* halves, std::size_t i) {
  return static_cast<std::uint16_t>(static_cast<unsigned>(halves[2 * i]) |
                                    (static_cast<unsigned>(halves[2 * i + 1]) << 8));
}

}  // namespace

std::uint16_t to_half(double value, HalfCodec codec) {
  const HalfFormat f = half_format(codec);
  const auto bits = std::bit_cast<std::uint64_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 48) & 0x8000u);
  const int biased = static_cast<int>((bits >> 52) & 0x7ffu);
  const std::uint64_t mantissa = bits & ((std::uint64_t{1} << 52) - 1);
  const std::uint16_t inf = half_inf_bits(f);
  const int drop_normal = 52 - f.mantissa;
  const std::uint64_t magnitude = bits & ~(std::uint64_t{1} << 63);
  const std::uint64_t smallest_normal = static_cast<std::uint64_t>(1023 + 1 - f.bias) << 52;
  if (magnitude >= smallest_normal && biased != 0x7ff) {
    // The common case, a normal half (or an overflow): round the double's exponent and
    // mantissa bits together, so the carry moves into the exponent by itself. Adding
    // halfway - 1, plus the kept part's lowest bit, rounds up above the halfway point and, at
    // it, only an odd kept part: ties to even.
    const std::uint64_t rounded =
        magnitude + ((std::uint64_t{1} << (drop_normal - 1)) - 1) + ((magnitude >> drop_normal) & 1);
    const std::uint64_t half = (rounded >> drop_normal) -
                               (static_cast<std::uint64_t>(1023 - f.bias) << f.mantissa);
    return static_cast<std::uint16_t>(sign | (half >= inf ? inf : half));
  }
  if (biased == 0x7ff) {  // infinity, or NaN (kept quiet)
    return static_cast<std::uint16_t>(sign | inf |
                                      (mantissa != 0 ? (1u << (f.mantissa - 1)) : 0u));
  }
  if (biased == 0) return sign;  // zero or a double subnormal: far below the smallest half
  const int exponent = biased - 1023;
  const int min_exponent = 1 - f.bias;
  std::uint64_t significand = mantissa;
  int drop = 52 - f.mantissa;  // low bits of the significand rounded away
  std::uint64_t base = 0;      // the exponent field, in place
  if (exponent >= min_exponent) {
    base = static_cast<std::uint64_t>(exponent + f.bias) << f.mantissa;
  } else {  // a half subnormal: the implicit bit joins the significand, shifted further
    significand |= std::uint64_t{1} << 52;
    drop += min_exponent - exponent;
    if (drop > 54) return sign;  // below half the smallest subnormal
  }
  std::uint64_t kept = significand >> drop;
  const std::uint64_t rest = significand & ((std::uint64_t{1} << drop) - 1);
  const std::uint64_t halfway = std::uint64_t{1} << (drop - 1);
  if (rest > halfway || (rest == halfway && (kept & 1u) != 0)) ++kept;
  // A carry out of the mantissa moves into the exponent field: the next binade, or from the
  // largest subnormal to the smallest normal, or past the largest finite value to infinity.
  const std::uint64_t result = base + kept;
  if (result >= inf) return static_cast<std::uint16_t>(sign | inf);
  return static_cast<std::uint16_t>(sign | result);
}

double from_half(std::uint16_t half, HalfCodec codec) {
  const HalfFormat f = half_format(codec);
  const std::uint64_t sign = static_cast<std::uint64_t>(half & 0x8000u) << 48;
  const std::uint64_t magnitude = half & 0x7fffu;
  const std::uint64_t inf = half_inf_bits(f);
  if (magnitude >= (std::uint64_t{1} << f.mantissa) && magnitude < inf) {
    // A normal half: its exponent and mantissa bits move up into the double's, rebiased.
    return std::bit_cast<double>(sign | ((magnitude << (52 - f.mantissa)) +
                                         (static_cast<std::uint64_t>(1023 - f.bias) << 52)));
  }
  double v = 0;
  if (magnitude >= inf) {
    v = magnitude > inf ? std::numeric_limits<double>::quiet_NaN()
                        : std::numeric_limits<double>::infinity();
  } else {  // a subnormal or zero: exact, a small integer times a power of two
    v = static_cast<double>(magnitude) * (codec == HalfCodec::kFp16 ? 0x1p-24 : 0x1p-133);
  }
  return sign != 0 ? -v : v;
}

Bytes encode_half(std::span<const double> values, HalfCodec codec) {
  Bytes out;
  encode_half(values, codec, out);
  return out;
}

void encode_half(std::span<const double> values, HalfCodec codec, Bytes& out) {
  if (values.size() > std::numeric_limits<std::uint32_t>::max()) {
    fail<ProtocolError>("{} frame of {} values: at most 2^32 - 1 fit", half_name(codec),
                        values.size());
  }
  const int scale = half_scale(values, codec);
  const double factor = std::ldexp(1.0, scale);
  out.resize(half_frame_size(values.size()));
  out[0] = static_cast<std::byte>(codec);
  out[1] = static_cast<std::byte>(kHalfFrameVersion);
  const auto s16 = static_cast<std::int16_t>(scale);
  const auto count = static_cast<std::uint32_t>(values.size());
  std::memcpy(out.data() + 2, &s16, sizeof s16);
  std::memcpy(out.data() + 4, &count, sizeof count);
  std::byte* halves = out.data() + kHalfFrameHeader;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t h = to_half(values[i] * factor, codec);
    halves[2 * i] = static_cast<std::byte>(h & 0xffu);
    halves[2 * i + 1] = static_cast<std::byte>(h >> 8);
  }
}

void round_half(std::span<double> values, HalfCodec codec) {
  const int scale = half_scale(values, codec);
  const double up = std::ldexp(1.0, scale);
  const double down = std::ldexp(1.0, -scale);
  for (double& v : values) v = from_half(to_half(v * up, codec), codec) * down;
}

void decode_half(std::span<const std::byte> frame, HalfCodec codec, std::span<double> out) {
  const HalfFrame h = read_half_frame(frame, codec, out.size());
  const double factor = std::ldexp(1.0, -h.scale);
  for (std::size_t i = 0; i < h.count; ++i) out[i] = from_half(half_at(h.halves, i), codec) * factor;
}

void add_half(std::span<const std::byte> frame, HalfCodec codec, std::span<double> out) {
  const HalfFrame h = read_half_frame(frame, codec, out.size());
  const double factor = std::ldexp(1.0, -h.scale);
  for (std::size_t i = 0; i < h.count; ++i) out[i] += from_half(half_at(h.halves, i), codec) * factor;
}

}  // namespace dt::wire

#pragma once
// Compressed float64 vectors on the wire (aggregation.compression fp16 / bf16): each value as a
// 16-bit IEEE half (fp16: 5 exponent bits, 10 mantissa bits) or bfloat16 (8 and 7), rounded to
// nearest with ties to even, straight from the double's bits (never through float, whose double
// rounding would break ties). The sender's sum and the receiver's optimizer stay in float64:
// only the transfer is 16 bits a value.
//
// A frame carries one power-of-two scale chosen from its largest finite magnitude, so that
// value scaled lands in [2^(emax-1), 2^emax) (fp16: [16384, 32768)): scaling by a power of two
// is exact, the largest value cannot round past the largest finite half, so a gradient never
// overflows to infinity on the wire, and small values keep the format's full relative range
// below the largest one (what mixed-precision training's loss scaling does by hand). Values that
// were already infinite or NaN stay so (the step's loss check names the divergence).
//
//   offset size field
//   0      1    codec (1 fp16, 2 bf16)
//   1      1    format version (1)
//   2      2    scale exponent s (int16): a value is the half times 2^-s
//   4      4    count n
//   8      2n   the halves, little-endian
//
// Decoding checks the codec, the version, the count and the frame size, and never reads past
// the frame (ProtocolError otherwise).

#include "transports/wire.hpp"

#include <cstdint>
#include <span>

namespace dt::wire {

enum class HalfCodec : std::uint8_t { kFp16 = 1, kBf16 = 2 };

inline constexpr std::size_t kHalfFrameHeader = 8;

// One value, rounded to nearest even; a magnitude past the largest finite half becomes infinity
// (the frame encoder's scale keeps that from happening on the wire); NaN stays a quiet NaN.
[[nodiscard]] std::uint16_t to_half(double value, HalfCodec codec);
[[nodiscard]] double from_half(std::uint16_t half, HalfCodec codec);

// The frame of `values` (header and 2 bytes a value); the second form writes into `out`
// (resized; no allocation once its capacity suffices).
[[nodiscard]] Bytes encode_half(std::span<const double> values, HalfCodec codec);
void encode_half(std::span<const double> values, HalfCodec codec, Bytes& out);
// The bytes of the frame of `count` values.
[[nodiscard]] constexpr std::size_t half_frame_size(std::size_t count) {
  return kHalfFrameHeader + 2 * count;
}
// `values` replaced by what their frame decodes to (decode(encode(values))): a sender that must
// keep the very bits its receivers get. Stable: rounding them again changes nothing.
void round_half(std::span<double> values, HalfCodec codec);
// The frame's values into `out` (out.size() must be the frame's count).
void decode_half(std::span<const std::byte> frame, HalfCodec codec, std::span<double> out);
// out[i] += the frame's value i, in index order (a receiver summing frames one after another).
void add_half(std::span<const std::byte> frame, HalfCodec codec, std::span<double> out);

}  // namespace dt::wire

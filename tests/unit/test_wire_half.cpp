// The fp16 / bf16 wire codec (transports/half_codec.hpp): rounding to nearest even straight from
// the double (ties, subnormals, the carry into the next binade, overflow), infinities and NaN,
// and the frame's power-of-two scale that keeps a large gradient finite.

#include "base/error.hpp"
#include "transports/half_codec.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

namespace {

using dt::wire::from_half;
using dt::wire::HalfCodec;
using dt::wire::to_half;

constexpr HalfCodec kF16 = HalfCodec::kFp16;
constexpr HalfCodec kB16 = HalfCodec::kBf16;
constexpr double kInf = std::numeric_limits<double>::infinity();

double p2(int e) { return std::ldexp(1.0, e); }

}  // namespace

TEST_CASE("half codec: fp16 rounds to nearest, ties to even, from the double's bits") {
  CHECK(to_half(1.0, kF16) == 0x3C00);
  CHECK(to_half(-2.0, kF16) == 0xC000);
  CHECK(to_half(0.0, kF16) == 0x0000);
  CHECK(to_half(-0.0, kF16) == 0x8000);
  // 1 + 2^-11 is halfway between 1 (even) and 1 + 2^-10: stays 1; 1 + 3 * 2^-11 is halfway
  // between mantissa 1 (odd) and 2: goes up to 2.
  CHECK(to_half(1.0 + p2(-11), kF16) == 0x3C00);
  CHECK(to_half(1.0 + 3 * p2(-11), kF16) == 0x3C02);
  CHECK(to_half(1.0 + p2(-11) + p2(-40), kF16) == 0x3C01);  // just above the tie
  CHECK(to_half(1.0 + p2(-11) - p2(-40), kF16) == 0x3C00);  // just below
  // Through float this would round twice (float drops 2^-25, then the tie goes to even = 1.0).
  CHECK(to_half(1.0 + p2(-11) + p2(-25), kF16) == 0x3C01);
  // The carry out of the mantissa moves to the next binade: 2 - 2^-12 rounds up to 2.
  CHECK(to_half(2.0 - p2(-12), kF16) == 0x4000);
}

TEST_CASE("half codec: fp16 subnormals, the largest finite value and overflow") {
  CHECK(to_half(p2(-24), kF16) == 0x0001);            // the smallest subnormal
  CHECK(to_half(p2(-25), kF16) == 0x0000);            // a tie between 0 (even) and it
  CHECK(to_half(p2(-25) + p2(-40), kF16) == 0x0001);  // above the tie
  CHECK(to_half(3 * p2(-25), kF16) == 0x0002);        // tie between 1 (odd) and 2
  CHECK(to_half(1023 * p2(-24), kF16) == 0x03FF);     // the largest subnormal
  CHECK(to_half(1023.5 * p2(-24), kF16) == 0x0400);   // rounds up into the smallest normal
  CHECK(from_half(0x0400, kF16) == p2(-14));
  CHECK(from_half(0x0001, kF16) == p2(-24));
  CHECK(to_half(1e-300, kF16) == 0x0000);
  CHECK(to_half(std::numeric_limits<double>::denorm_min(), kF16) == 0x0000);
  CHECK(to_half(65504.0, kF16) == 0x7BFF);
  CHECK(to_half(65519.0, kF16) == 0x7BFF);  // below the tie with 65536
  CHECK(to_half(65520.0, kF16) == 0x7C00);  // the tie rounds to the even 65536: infinity
  CHECK(to_half(1e6, kF16) == 0x7C00);
  CHECK(to_half(-1e6, kF16) == 0xFC00);
}

TEST_CASE("half codec: infinities and NaN") {
  for (const HalfCodec c : {kF16, kB16}) {
    CHECK(std::isinf(from_half(to_half(kInf, c), c)));
    CHECK(from_half(to_half(-kInf, c), c) == -kInf);
    CHECK(std::isnan(from_half(to_half(std::numeric_limits<double>::quiet_NaN(), c), c)));
    // A NaN whose payload sits only in the low bits must not become infinity.
    const double low_nan = std::bit_cast<double>(std::uint64_t{0x7FF0000000000001});
    CHECK(std::isnan(from_half(to_half(low_nan, c), c)));
  }
  CHECK(to_half(kInf, kB16) == 0x7F80);
}

TEST_CASE("half codec: bf16 keeps float's range with 8 significant bits") {
  CHECK(to_half(1.0, kB16) == 0x3F80);
  CHECK(to_half(1.0 + p2(-8), kB16) == 0x3F80);      // tie to even
  CHECK(to_half(1.0 + 3 * p2(-8), kB16) == 0x3F82);  // tie to even, upwards
  CHECK(to_half(p2(-133), kB16) == 0x0001);          // the smallest subnormal
  CHECK(to_half(1e30, kB16) != 0x7F80);              // finite where fp16 overflows
  const double largest = (2.0 - p2(-7)) * p2(127);
  CHECK(to_half(largest, kB16) == 0x7F7F);
  CHECK(to_half(static_cast<double>(std::numeric_limits<float>::max()), kB16) == 0x7F80);
}

TEST_CASE("half codec: every finite half decodes and encodes back to itself") {
  for (const HalfCodec c : {kF16, kB16}) {
    int mismatches = 0;
    for (unsigned h = 0; h <= 0xFFFF; ++h) {
      const double v = from_half(static_cast<std::uint16_t>(h), c);
      if (std::isnan(v)) continue;
      if (to_half(v, c) != h) ++mismatches;
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("half frames: the scale keeps large values finite and exact powers of two exact") {
  // 1e5 is past fp16's largest finite value (65504): the frame's scale (2^-2 here) brings it
  // in range; 1e-3 stays a normal half after scaling, 2^-20 a subnormal one, exactly.
  const std::vector<double> values{1e5, -3.0, 0.5, 0.0, -kInf, 1e-3, p2(-20)};
  for (const HalfCodec c : {kF16, kB16}) {
    const auto frame = dt::wire::encode_half(values, c);
    CHECK(frame.size() == dt::wire::kHalfFrameHeader + 2 * values.size());
    std::vector<double> back(values.size());
    dt::wire::decode_half(frame, c, back);
    const double tolerance = c == kF16 ? p2(-11) : p2(-8);  // half an ulp, relative
    CHECK(std::fabs(back[0] - 1e5) <= 1e5 * tolerance);
    CHECK(back[1] == -3.0);
    CHECK(back[2] == 0.5);
    CHECK(back[3] == 0.0);
    CHECK(back[4] == -kInf);
    CHECK(std::fabs(back[5] - 1e-3) <= 1e-3 * tolerance);
    CHECK(back[6] == p2(-20));  // a power of two above the smallest subnormal: exact
    // add_half adds the same values in place.
    std::vector<double> sum(values.size(), 1.0);
    dt::wire::add_half(frame, c, sum);
    CHECK(sum[1] == -2.0);
    CHECK(sum[4] == -kInf);
  }
  // The range is relative to the frame's largest value: fp16 rounds to zero what is below
  // about 2^-39 times it (2^-25 after the scale 2^-5 that 1e6 takes: a tie, to even 0).
  std::vector<double> two(2);
  dt::wire::decode_half(dt::wire::encode_half(std::vector<double>{1e6, p2(-20)}, kF16), kF16, two);
  CHECK(two[1] == 0.0);
  dt::wire::decode_half(dt::wire::encode_half(std::vector<double>{1e6, p2(-20)}, kB16), kB16, two);
  CHECK(two[1] == p2(-20));
  // An all-zero frame decodes to zeros (scale 0).
  std::vector<double> zeros(3, 7.0);
  dt::wire::decode_half(dt::wire::encode_half(std::vector<double>(3, 0.0), kF16), kF16, zeros);
  CHECK(zeros == std::vector<double>(3, 0.0));
}

TEST_CASE("half frames: a frame of another codec, size or count is refused, not misread") {
  const std::vector<double> values{1.0, 2.0, 3.0};
  auto frame = dt::wire::encode_half(values, kF16);
  std::vector<double> out(3);
  CHECK_THROWS_WITH_AS(dt::wire::decode_half(frame, kB16, out),
                       "compressed frame of codec 1, expected 2 (bf16): the peers disagree on "
                       "aggregation.compression",
                       dt::ProtocolError);
  std::vector<double> four(4);
  CHECK_THROWS_WITH_AS(dt::wire::decode_half(frame, kF16, four),
                       "fp16 frame is 14 bytes holding 3 values, expected 4 values (16 bytes)",
                       dt::ProtocolError);
  frame.pop_back();
  CHECK_THROWS_AS(dt::wire::decode_half(frame, kF16, out), dt::ProtocolError);
  CHECK_THROWS_WITH_AS(dt::wire::decode_half(std::span(frame).first(3), kF16, out),
                       "fp16 frame is 3 bytes, shorter than its 8-byte header",
                       dt::ProtocolError);
}

TEST_CASE("half frames: a decoded frame encodes again to the same bytes (the ring forwards it)") {
  for (const HalfCodec c : {kF16, kB16}) {
    // The largest value rounds up into the next binade (65535.9 -> 2^16 at fp16's 11 bits):
    // the frame takes the binade below, so that decoding and encoding again is stable; a
    // subnormal-range value next to it would lose its last bit otherwise.
    const double big = c == kF16 ? 65535.9 : (256.0 - 1e-9);
    for (const std::vector<double>& values :
         {std::vector<double>{big, 3 * p2(-30), -1.5, 0.1},
          std::vector<double>{0.3, -0.7, 1e-4, 123.456, -9.87e-6},
          std::vector<double>{-big, 1.0, 1.0 + p2(-11), 7e-12}}) {
      const auto once = dt::wire::encode_half(values, c);
      std::vector<double> decoded(values.size());
      dt::wire::decode_half(once, c, decoded);
      CHECK(dt::wire::encode_half(decoded, c) == once);
    }
  }
}

TEST_CASE("half frames: round_half keeps what a receiver decodes, and is stable") {
  for (const HalfCodec c : {kF16, kB16}) {
    std::vector<double> values{65535.9, 0.1, -2.5e-3, 1.0 + p2(-11), 3e-9, 0.0};
    std::vector<double> decoded(values.size());
    dt::wire::decode_half(dt::wire::encode_half(values, c), c, decoded);
    dt::wire::round_half(values, c);
    CHECK(values == decoded);
    dt::wire::round_half(values, c);
    CHECK(values == decoded);
  }
}

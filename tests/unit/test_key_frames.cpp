// Key frames (core/protocol/key_frames.hpp): the sorted key lists of sparse exchanges as
// delta-encoded varints, and every way a peer's frame can be wrong.

#include "core/protocol/key_frames.hpp"
#include "base/error.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using Keys = std::vector<std::uint32_t>;
namespace protocol = dt::protocol;

dt::wire::Bytes frame_of(std::initializer_list<int> bytes) {
  dt::wire::Bytes out;
  for (const int b : bytes) out.push_back(static_cast<std::byte>(b));
  return out;
}

std::string refusal(const dt::wire::Bytes& frame, std::uint64_t width) {
  Keys out;
  try {
    protocol::decode_keys(frame, width, "push from w1: keys", out);
  } catch (const dt::ProtocolError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("key frames: sorted keys round-trip, gaps cost what their varints need") {
  std::mt19937_64 rng(7);
  for (const std::uint64_t width : {std::uint64_t{1} << 10, std::uint64_t{1} << 22,
                                    std::uint64_t{1} << 32}) {
    Keys keys;
    for (std::uint64_t k = rng() % 5; k < width; k += 1 + rng() % (width / 200 + 1)) {
      keys.push_back(static_cast<std::uint32_t>(k));
    }
    keys.push_back(static_cast<std::uint32_t>(width - 1));  // the last key the width allows
    const auto frame = protocol::encode_keys(keys);
    CHECK(frame.size() == protocol::encoded_key_bytes(keys));
    Keys back{99};  // cleared by decode
    protocol::decode_keys(frame, width, "keys", back);
    CHECK(back == keys);
  }
  // 4 bytes of count, then: 0 (1 byte), gaps of 100 (1 byte each), a gap of 16384 (3 bytes).
  const Keys keys{0, 100, 200, 300, 16684};
  const auto frame = protocol::encode_keys(keys);
  CHECK(frame.size() == 4 + 1 + 3 + 3);
  CHECK(frame == frame_of({5, 0, 0, 0, 0, 100, 100, 100, 0x80, 0x80, 0x01}));
  // No keys: the count alone.
  CHECK(protocol::encode_keys(Keys{}) == frame_of({0, 0, 0, 0}));
  Keys none{1, 2};
  protocol::decode_keys(frame_of({0, 0, 0, 0}), 10, "keys", none);
  CHECK(none.empty());
}

TEST_CASE("key frames: a bad frame is refused naming the frame and what is wrong") {
  CHECK(refusal(frame_of({1, 0, 0}), 10) ==
        "push from w1: keys: a key frame of 3 bytes is shorter than its 4-byte count");
  CHECK(refusal(frame_of({2, 0, 0, 0, 3, 0}), 10) ==
        "push from w1: keys: key 2 repeats the key before it");
  CHECK(refusal(frame_of({2, 0, 0, 0, 3, 7}), 10) ==
        "push from w1: keys: key 2 is 10, past the model's width 10");
  CHECK(refusal(frame_of({2, 0, 0, 0, 3, 0x80}), 1000) ==
        "push from w1: keys: the frame ends inside key 2 of 2");
  CHECK(refusal(frame_of({1, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), 1000) ==
        "push from w1: keys: key 1 of 1 is longer than a 32-bit key's encoding");
  CHECK(refusal(frame_of({0xff, 0xff, 0xff, 0xff, 1}), 1000) ==
        "push from w1: keys: the frame promises 4294967295 keys in 1 bytes");
  CHECK(refusal(frame_of({1, 0, 0, 0, 3, 4}), 1000) ==
        "push from w1: keys: 1 bytes follow the 1 keys the frame promises");
  // A sum of gaps past 32 bits is past any width.
  CHECK(refusal(frame_of({2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1}), std::uint64_t{1} << 32) ==
        "push from w1: keys: key 2 is 4294967296, past the model's width 4294967296");
}

namespace {

// The format spelled out byte by byte (the loop the word-at-a-time encoder replaced).
dt::wire::Bytes reference_frame(const Keys& keys) {
  dt::wire::Bytes out;
  const auto count = static_cast<std::uint32_t>(keys.size());
  for (int b = 0; b < 4; ++b) out.push_back(static_cast<std::byte>((count >> (8 * b)) & 0xff));
  std::uint32_t previous = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::uint32_t v = i == 0 ? keys[0] : keys[i] - previous;
    previous = keys[i];
    for (; v >= 0x80; v >>= 7) out.push_back(static_cast<std::byte>((v & 0x7f) | 0x80));
    out.push_back(static_cast<std::byte>(v));
  }
  return out;
}

}  // namespace

TEST_CASE("key frames: every varint size, at every distance from the frame's end") {
  // Gaps of 1 to 5 bytes (up to the largest 32-bit key), mixed at random, in lists of 0 to 40
  // keys: the last varints of a frame have fewer than 8 bytes after them (the decoder's
  // byte-wise path), the others a word (its word path). Both ends must give the byte-wise
  // format's bytes and keys.
  std::mt19937_64 rng(11);
  const std::uint32_t limits[] = {1u << 7, 1u << 14, 1u << 21, 1u << 28, 0xffffffffu};
  for (int trial = 0; trial < 2000; ++trial) {
    Keys keys;
    std::uint64_t key = rng() % 3 == 0 ? 0 : rng() % limits[rng() % 5];
    const auto n = static_cast<std::size_t>(rng() % 41);
    while (keys.size() < n && key <= 0xffffffffu) {
      keys.push_back(static_cast<std::uint32_t>(key));
      const std::uint32_t limit = limits[rng() % 5];
      key += 1 + rng() % (rng() % 2 == 0 ? limit - 1 : (limit >> 7) + 1);
    }
    const auto frame = protocol::encode_keys(keys);
    REQUIRE(frame == reference_frame(keys));
    CHECK(frame.size() == protocol::encoded_key_bytes(keys));
    Keys back;
    protocol::decode_keys(frame, std::uint64_t{1} << 32, "keys", back);
    REQUIRE(back == keys);
    // A frame cut short anywhere, or a byte added, is refused (never read past the frame).
    if (frame.size() > 4) {
      const auto cut = 4 + rng() % (frame.size() - 4);
      const dt::wire::Bytes shorter(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(cut));
      CHECK_THROWS_AS(protocol::decode_keys(shorter, std::uint64_t{1} << 32, "keys", back),
                      dt::ProtocolError);
    }
  }
  // A varint of five bytes all marked "more" is refused on the word path too (8 bytes follow).
  CHECK(refusal(frame_of({2, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0}), 1000) ==
        "push from w1: keys: key 1 of 2 is longer than a 32-bit key's encoding");
}

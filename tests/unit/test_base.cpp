// base/: text helpers, counter-based random draws.

#include "base/random.hpp"
#include "base/text.hpp"

#include <doctest/doctest.h>

#include <cstring>

TEST_CASE("text: valid_utf8 accepts UTF-8 and refuses everything else") {
  using dt::text::valid_utf8;
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("plain ascii"));
  CHECK(valid_utf8("caf\xc3\xa9"));               // é
  CHECK(valid_utf8("\xe2\x82\xac"));              // €
  CHECK(valid_utf8("\xf0\x9f\x98\x80"));          // an emoji, 4 bytes
  CHECK_FALSE(valid_utf8("caf\xe9"));             // Latin-1 é
  CHECK_FALSE(valid_utf8("\xc3"));                // truncated
  CHECK_FALSE(valid_utf8("\xe2\x82"));            // truncated
  CHECK_FALSE(valid_utf8("\xc0\xaf"));            // overlong '/'
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));        // a surrogate
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));    // past U+10FFFF
  CHECK_FALSE(valid_utf8("\xff"));
}

TEST_CASE("text: did_you_mean finds close words only") {
  CHECK(dt::text::did_you_mean("traning", {"training", "model"}) == "training");
  CHECK(dt::text::did_you_mean("zzz", {"training", "model"}).empty());
  CHECK(dt::text::join_or({"a", "b", "c"}) == "a, b or c");
}

TEST_CASE("random: a DrawRow gives the draws of hash and normal, bit for bit") {
  for (const std::uint64_t seed : {0ULL, 7ULL, 0xFFFFFFFFFFFFFFFFULL}) {
    for (const std::uint64_t a : {0ULL, 1ULL, 123456789ULL, ~0ULL}) {
      const dt::random::DrawRow row(seed, 3, a);
      for (const std::uint64_t b : {0ULL, 1ULL, 99ULL, 1ULL << 62}) {
        CHECK(row.hash(b) == dt::random::hash(seed, 3, a, b));
        // Same bits, not merely close: synthetic data must not change with the generator's speed.
        const double fast = row.normal(b);
        const double slow = dt::random::normal(seed, 3, a, b);
        CHECK(std::memcmp(&fast, &slow, sizeof fast) == 0);
      }
    }
  }
}

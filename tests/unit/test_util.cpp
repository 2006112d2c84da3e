// core/util: text helpers.

#include "core/util/text.hpp"

#include <doctest/doctest.h>

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

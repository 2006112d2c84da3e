// The wire format: header layout, every rejection with its exact message, payload helpers.

#include "base/error.hpp"
#include "transports/wire.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace {

using dt::ProtocolError;
using namespace dt::wire;

Header sample_header() {
  Header h;
  h.type = 0xBEEF;
  h.job_id = 0x0123456789ABCDEFull;
  h.rank = 7;
  h.generation = 0x0203;
  h.step = 0xFEDCBA9876543210ull;
  h.payload_size = 24;
  return h;
}

std::byte b(unsigned v) { return static_cast<std::byte>(v); }

}  // namespace

TEST_CASE("wire: header round trip keeps every field") {
  const Header in = sample_header();
  const Bytes frame = encode_header(in);
  REQUIRE(frame.size() == kHeaderSize);
  const Header out = decode_header(frame);
  CHECK(out.type == in.type);
  CHECK(out.job_id == in.job_id);
  CHECK(out.rank == in.rank);
  CHECK(out.step == in.step);
  CHECK(out.generation == in.generation);
  CHECK(out.payload_size == in.payload_size);
  CHECK(out.version == kProtocolVersion);

  Header coordinator;
  coordinator.rank = kCoordinatorRank;
  CHECK(decode_header(encode_header(coordinator)).rank == kCoordinatorRank);
}

TEST_CASE("wire: header bytes follow the documented little-endian layout") {
  const Bytes f = encode_header(sample_header());
  // magic "DTRN"
  CHECK(f[0] == b('D'));
  CHECK(f[1] == b('T'));
  CHECK(f[2] == b('R'));
  CHECK(f[3] == b('N'));
  // version 3, type 0xBEEF
  CHECK(f[4] == b(3));
  CHECK(f[5] == b(0));
  CHECK(f[6] == b(0xEF));
  CHECK(f[7] == b(0xBE));
  // job id, least significant byte first
  CHECK(f[8] == b(0xEF));
  CHECK(f[15] == b(0x01));
  // rank 7, generation 0x0203
  CHECK(f[16] == b(7));
  CHECK(f[19] == b(0));
  CHECK(f[20] == b(0x03));
  CHECK(f[21] == b(0x02));
  for (std::size_t i = 22; i < 24; ++i) CHECK(f[i] == b(0));
  // step
  CHECK(f[24] == b(0x10));
  CHECK(f[31] == b(0xFE));
  // payload size 24
  CHECK(f[32] == b(24));
  for (std::size_t i = 33; i < 40; ++i) CHECK(f[i] == b(0));
}

TEST_CASE("wire: decode rejects a truncated or overlong header frame") {
  const Bytes f = encode_header(sample_header());
  CHECK_THROWS_WITH_AS((void)decode_header(std::span(f).first(39)),
                       "header frame is 39 bytes, expected 40", ProtocolError);
  CHECK_THROWS_WITH_AS((void)decode_header({}), "header frame is 0 bytes, expected 40",
                       ProtocolError);
  Bytes longer = f;
  longer.push_back(b(0));
  CHECK_THROWS_WITH_AS((void)decode_header(longer), "header frame is 41 bytes, expected 40",
                       ProtocolError);
}

TEST_CASE("wire: decode rejects a wrong magic") {
  Bytes f = encode_header(sample_header());
  const char http[] = "GET ";
  std::memcpy(f.data(), http, 4);
  CHECK_THROWS_WITH_AS((void)decode_header(f), "bad magic 0x20544547: not a disttrain peer",
                       ProtocolError);
}

TEST_CASE("wire: decode rejects another protocol version with both versions named") {
  Header h = sample_header();
  h.version = 7;
  CHECK_THROWS_WITH_AS((void)decode_header(encode_header(h)),
                       "protocol version 7, this build speaks 3", ProtocolError);
}

TEST_CASE("wire: decode rejects a declared payload over the limit before anything is allocated") {
  Header h = sample_header();
  h.payload_size = 9999999999ull;
  CHECK_THROWS_WITH_AS((void)decode_header(encode_header(h)),
                       "payload of 9999999999 bytes exceeds the limit of 4294967296 bytes",
                       ProtocolError);
  h.payload_size = 1025;
  CHECK_THROWS_WITH_AS((void)decode_header(encode_header(h), 1024),
                       "payload of 1025 bytes exceeds the limit of 1024 bytes", ProtocolError);
  h.payload_size = 1024;
  CHECK(decode_header(encode_header(h), 1024).payload_size == 1024);
}

TEST_CASE("wire: check_payload compares the frames with the declared size") {
  Message m;
  m.header.payload_size = 24;
  m.payload = {Bytes(8), Bytes(16)};
  CHECK_NOTHROW(check_payload(m));
  m.payload.pop_back();
  CHECK_THROWS_WITH_AS(check_payload(m),
                       "payload frames add up to 8 bytes in 1 frame(s), the header declares 24",
                       ProtocolError);
  m.payload.clear();
  m.header.payload_size = 0;
  CHECK_NOTHROW(check_payload(m));
}

TEST_CASE("wire: doubles and text survive the payload helpers") {
  const std::array<double, 4> values{1.5, -0.0, 1e-300, 6.02214076e23};
  const Bytes frame = to_bytes(values);
  REQUIRE(frame.size() == 32);
  const auto back = as_doubles(frame, 4);
  REQUIRE(back.size() == 4);
  for (std::size_t i = 0; i < values.size(); ++i) {
    CHECK(std::memcmp(&back[i], &values[i], sizeof(double)) == 0);
  }
  CHECK(as_doubles(frame).size() == 4);
  // 1.5 is 0x3FF8000000000000: little-endian puts the sign/exponent byte last.
  CHECK(frame[7] == b(0x3F));
  CHECK(frame[6] == b(0xF8));

  CHECK(as_doubles(Bytes{}).empty());
  CHECK(as_doubles(Bytes{}, 0).empty());

  CHECK(as_text(to_bytes(std::string_view("hello"))) == "hello");
  CHECK(as_text(Bytes{}).empty());
}

TEST_CASE("wire: as_doubles rejects frames of the wrong size") {
  const Bytes thirteen(13);
  CHECK_THROWS_WITH_AS((void)as_doubles(thirteen),
                       "payload frame is 13 bytes, not a whole number of 8-byte doubles",
                       ProtocolError);
  const Bytes sixteen(16);
  CHECK_THROWS_WITH_AS((void)as_doubles(sixteen, 3),
                       "payload frame is 16 bytes, expected 24 (3 doubles)", ProtocolError);
  CHECK_THROWS_WITH_AS((void)as_doubles(thirteen, 2),
                       "payload frame is 13 bytes, expected 16 (2 doubles)", ProtocolError);
}

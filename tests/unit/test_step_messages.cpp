// The readers of a peer's step-path messages (core/protocol/step_messages.hpp) and of a peer
// chunk's frames (transports/collectives/chunk_frames.hpp), on what a hostile or broken peer
// sends: a ProtocolError naming the message and the field, or a dropped chunk, never another
// exception or a value cast out of range.

#include "core/protocol/step_messages.hpp"
#include "transports/collectives/chunk_frames.hpp"
#include "base/error.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

namespace protocol = dt::protocol;
namespace collectives = dt::collectives;
using protocol::Type;

std::string step_message_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const dt::ProtocolError& e) {
    return e.what();
  }
  return "(no ProtocolError)";
}

// As a receiver sees it: through the wire (JSON text parsed again, so that a count is a
// JSON unsigned integer, as every message from a peer has it).
protocol::Envelope received(protocol::Envelope e) {
  return protocol::decode(protocol::encode(std::move(e), 1), 1);
}

dt::wire::Message chunk_message(const collectives::ChunkPlace& place, std::size_t doubles) {
  dt::wire::Message m;
  m.header = {.type = collectives::kPeerChunkType, .job_id = 9, .rank = 2, .step = 1};
  m.payload.resize(2);
  m.payload[0].resize(collectives::kChunkControlSize);
  collectives::encode_chunk_control(m.payload[0], {.group = 5, .phase = 1, .chunk = 2}, place);
  m.payload[1].resize(doubles * sizeof(double));
  return m;
}

}  // namespace

TEST_CASE("step messages: a re-formed ring is read whole, with each list checked") {
  const auto good = received({.type = Type::kRingReform, .rank = 7,
                              .fields = {{"members", {0, 2}}, {"fresh", {2}},
                                         {"endpoints", {"tcp://a:1", "tcp://b:2", "tcp://c:3"}}}});
  const auto r = protocol::read_reform(good);
  CHECK(r.members == std::vector<std::uint32_t>{0, 2});
  CHECK(r.fresh == std::vector<std::uint32_t>{2});
  CHECK(r.endpoints.size() == 3);
  // These were nlohmann::json exceptions (or a double cast to an integer out of range): the
  // worker ended with "internal error" instead of naming the field.
  auto bad = good;
  bad.fields["fresh"] = {-1};
  CHECK(step_message_error([&] { (void)protocol::read_reform(bad); }) ==
        "ring reform message from rank 7: element 0 of field 'fresh' is not a rank (a "
        "non-negative integer below 2^32)");
  bad.fields["fresh"] = {1e300};
  CHECK(step_message_error([&] { (void)protocol::read_reform(bad); }).find("element 0 of field 'fresh'") != std::string::npos);
  bad.fields["fresh"] = {std::uint64_t{1} << 32};
  CHECK(step_message_error([&] { (void)protocol::read_reform(bad); }).find("below 2^32") != std::string::npos);
  bad = good;
  bad.fields["endpoints"] = 3;
  CHECK(step_message_error([&] { (void)protocol::read_reform(bad); }) ==
        "ring reform message from rank 7: field 'endpoints' is not a list");
  bad.fields["endpoints"] = {"tcp://a:1", 5};
  CHECK(step_message_error([&] { (void)protocol::read_reform(bad); }) ==
        "ring reform message from rank 7: element 1 of field 'endpoints' is not a string");
  bad = good;
  bad.fields.erase("members");
  CHECK(step_message_error([&] { (void)protocol::read_reform(bad); }) ==
        "ring reform message from rank 7 lacks field 'members'");
}

TEST_CASE("step messages: flags, the servers, a moved server and the rows taken over") {
  protocol::Envelope e{.type = Type::kResumeState, .rank = 0, .fields = {{"available", "yes"}}};
  CHECK(step_message_error([&] { (void)protocol::flag(e, "available"); }) ==
        "resume state message from rank 0: field 'available' is not true or false");
  CHECK_FALSE(protocol::flag(e, "absent"));
  CHECK(protocol::flag(e, "absent", true));
  e.fields["available"] = true;
  CHECK(protocol::flag(e, "available"));

  const auto servers = received({.type = Type::kServers,
                                 .fields = {{"endpoints", {"tcp://a:1"}}, {"parameters", 4}}});
  CHECK(protocol::read_servers(servers).parameters == 4);
  auto bad = servers;
  bad.fields["endpoints"] = "tcp://a:1";
  CHECK(step_message_error([&] { (void)protocol::read_servers(bad); }).find("field 'endpoints' is not a list") != std::string::npos);

  const auto moved = received({.type = Type::kServerMoved,
                               .fields = {{"server", 1}, {"endpoint", 42}, {"version", 3}}});
  CHECK(step_message_error([&] { (void)protocol::read_server_moved(moved); }).find("field 'endpoint' is not a string") != std::string::npos);

  protocol::Envelope done{.type = Type::kDone, .rank = 3};
  CHECK(protocol::read_took(done).empty());
  done.fields["took"] = {{{"lost_rank", 1}, {"rows", 20}, {"from_epoch", 2}}};
  const auto took = protocol::read_took(received(done));
  REQUIRE(took.size() == 1);
  CHECK((took[0].lost_rank == 1 && took[0].rows == 20 && took[0].from_epoch == 2));
  done.fields["took"] = {7};
  CHECK(step_message_error([&] { (void)protocol::read_took(done); }) ==
        "done message from rank 3: element 0 of field 'took' is not an object");
  done.fields["took"] = {{{"lost_rank", 1}, {"rows", -20}, {"from_epoch", 2}}};
  CHECK(step_message_error([&] { (void)protocol::read_took(received(done)); }) ==
        "done message from rank 3: element 0 of field 'took' has no non-negative integer 'rows'");
  CHECK(protocol::count_or(done, "steps", 5) == 5);
}

TEST_CASE("peer chunks: the control frame round-trips, and a chunk a member cannot place is dropped") {
  const auto good = chunk_message({.length = 8, .offset = 4, .count = 2}, 2);
  const auto parsed = collectives::parse_chunk(good, 9, "p2");
  REQUIRE(parsed.why.empty());
  CHECK((parsed.key.group == 5 && parsed.key.from == 2 && parsed.key.seq == 1 &&
         parsed.key.phase == 1 && parsed.key.chunk == 2));
  CHECK((parsed.place.length == 8 && parsed.place.offset == 4 && parsed.place.count == 2));
  CHECK(collectives::parse_chunk(good, 9, "p3").why == "it claims to come from rank 2");
  CHECK(collectives::parse_chunk(good, 8, "p2").why.find("it belongs to job") == 0);
  // A count of 2^61 doubles is 2^64 bytes, which wrapped to 0 and passed for an empty frame.
  CHECK(collectives::parse_chunk(chunk_message({.length = 8, .offset = 0, .count = std::uint64_t{1} << 61}, 0), 9, "p2").why ==
        "chunk size disagrees with its count");
  CHECK(collectives::parse_chunk(chunk_message({.length = 8, .offset = 7, .count = 2}, 2), 9, "p2").why ==
        "its 2 values at offset 7 lie outside its 8-value vector");
  CHECK(collectives::parse_chunk(chunk_message({.length = 8, .offset = UINT64_MAX, .count = 2}, 2), 9, "p2").why.find("outside") != std::string::npos);
  auto short_control = good;
  short_control.payload[0].resize(39);
  CHECK(collectives::parse_chunk(short_control, 9, "p2").why == "malformed chunk frames");
}

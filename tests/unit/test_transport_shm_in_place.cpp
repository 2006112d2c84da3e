// Reading the shared-memory rings in place (transports/shm/region.hpp, Listener::receive_in_place):
// large frames come as views that hold the ring space back from the writer until their lease is
// dropped, lie 8-aligned (readable as doubles) behind a frame of any size, and stay readable
// after the peer and the listener are gone. Real shared memory.

#include "tests/unit/harness.hpp"
#include "transports/shm/region.hpp"
#include "transports/transport.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using dt::test::Ipc;
using dt::test::kPatience;
using dt::transport::deadline_in;
using dt::transport::shm::Region;
using dt::transport::shm::RingReader;
using dt::transport::shm::RingWriter;
using dt::wire::Bytes;
using dt::wire::Message;

constexpr std::uint64_t kInPlaceJob = 0x5EED;
constexpr std::uint64_t kInPlaceMin = 64 << 10;

// Frame 0: `text` (any length, so that frame 1 would start unaligned without the padding);
// frame 1: `count` doubles k + step.
Message with_doubles(std::uint64_t step, const std::string& text, std::size_t count) {
  Message m;
  m.header.type = 7;
  m.header.job_id = kInPlaceJob;
  m.header.step = step;
  m.payload.push_back(dt::wire::to_bytes(std::string_view(text)));
  std::vector<double> values(count);
  for (std::size_t k = 0; k < count; ++k) values[k] = static_cast<double>(k + step);
  m.payload.push_back(dt::wire::to_bytes(std::span<const double>(values)));
  return m;
}

bool holds_doubles(const Message& m, std::uint64_t step, std::size_t count) {
  const auto values = dt::wire::as_doubles(dt::wire::frame(m, 1), count);  // throws if unaligned
  for (std::size_t k = 0; k < count; ++k) {
    if (values[k] != static_cast<double>(k + step)) return false;
  }
  return true;
}

RingWriter::Result write_record(RingWriter& writer, const Message& m) {
  std::uint64_t total = 0;
  for (const auto& f : m.payload) total += f.size();
  dt::wire::Header h = m.header;
  h.payload_size = total;
  return writer.write(dt::wire::encode_header(h), m, total);
}

}  // namespace

TEST_CASE("shm in place: a viewed frame holds its ring space back until the lease is dropped") {
  auto region = Region::create(1 << 20);
  REQUIRE(region);
  auto& control = region->header().rings[dt::transport::shm::kUp];
  RingWriter writer(*region, dt::transport::shm::kUp);
  RingReader reader(*region, dt::transport::shm::kUp, 1 << 30);
  constexpr std::size_t kCount = 80'000;  // 640 KB: two do not fit a 1 MiB ring
  REQUIRE(write_record(writer, with_doubles(1, "{\"rows\":1}", kCount)) == RingWriter::Result::kWritten);

  auto next = reader.next(kInPlaceMin);
  REQUIRE(next.kind == RingReader::Kind::kMessage);
  REQUIRE(next.message.views.size() == 2);
  CHECK(next.message.views[0].empty());  // small: copied
  CHECK(next.message.payload[0].size() == 10);
  CHECK(next.message.payload[1].empty());  // large: viewed
  CHECK(next.message.lease != nullptr);
  CHECK(holds_doubles(next.message, 1, kCount));
  // The writer still sees the record as unread: a second one does not fit beside it and goes
  // over ZeroMQ (a marker), so the viewed bytes are never overwritten.
  CHECK(control.read_pos.load() == 0);
  CHECK(write_record(writer, with_doubles(2, "{}", kCount)) == RingWriter::Result::kMarked);
  CHECK(holds_doubles(next.message, 1, kCount));
  // Read on while the lease is held: later records come as copies.
  auto marker = reader.next(kInPlaceMin);
  CHECK(marker.kind == RingReader::Kind::kMarker);
  CHECK(control.read_pos.load() == 0);

  next.message = {};  // the lease goes: the writer gets everything read so far back
  CHECK(control.read_pos.load() == control.write_pos.load());
  REQUIRE(write_record(writer, with_doubles(3, "{\"rows\":123}", kCount)) ==
          RingWriter::Result::kWritten);
  auto third = reader.next(kInPlaceMin);
  REQUIRE(third.kind == RingReader::Kind::kMessage);
  CHECK_FALSE(third.message.views.empty());
  CHECK(holds_doubles(third.message, 3, kCount));

  // An early release gives the space back at once; the lease's end later does not touch a
  // newer lease's hold.
  const auto early = third.message.lease;
  early->release();
  CHECK(control.read_pos.load() == control.write_pos.load());
  third.message = {};
  REQUIRE(write_record(writer, with_doubles(5, "{}", kCount)) == RingWriter::Result::kWritten);
  auto fifth = reader.next(kInPlaceMin);
  REQUIRE(fifth.kind == RingReader::Kind::kMessage);
  CHECK_FALSE(fifth.message.views.empty());
  const auto fifth_start = control.read_pos.load();
  CHECK(fifth_start != control.write_pos.load());
  early->release();
  CHECK(control.read_pos.load() == fifth_start);  // still held by the fifth's lease
  fifth.message = {};
  CHECK(control.read_pos.load() == control.write_pos.load());

  // Without in_place_min, and for frames below it, nothing is viewed or held.
  REQUIRE(write_record(writer, with_doubles(4, "x", kCount)) == RingWriter::Result::kWritten);
  auto copied = reader.next();
  REQUIRE(copied.kind == RingReader::Kind::kMessage);
  CHECK(copied.message.views.empty());
  CHECK(copied.message.lease == nullptr);
  CHECK(holds_doubles(copied.message, 4, kCount));
  CHECK(control.read_pos.load() == control.write_pos.load());
}

TEST_CASE("shm in place: a frame of doubles lies 8-aligned behind a frame of any length") {
  auto region = Region::create(1 << 20);
  REQUIRE(region);
  RingWriter writer(*region, dt::transport::shm::kUp);
  RingReader reader(*region, dt::transport::shm::kUp, 1 << 30);
  for (std::uint64_t n = 0; n < 9; ++n) {
    REQUIRE(write_record(writer, with_doubles(n, std::string(n, 'a'), 10'000)) ==
            RingWriter::Result::kWritten);
    auto next = reader.next(1);
    REQUIRE(next.kind == RingReader::Kind::kMessage);
    CHECK(next.wire_bytes == dt::wire::kHeaderSize + n + 80'000);  // padding is not counted
    CHECK(holds_doubles(next.message, n, 10'000));
  }
}

TEST_CASE("shm in place: a listener's views stay readable after the peer and the listener go") {
  auto transport = dt::test::make_transport<Ipc>(kInPlaceJob);
  auto listener = transport->listen("coord");
  auto connection = transport->connect(listener->endpoint(), "w0");
  // The switch-over: a round trip, so that the connection has taken the listener's answer to
  // its offer (sent before the reply) and sends the next message over its ring, not ZeroMQ.
  connection->send(with_doubles(1, "{}", 10), deadline_in(kPatience));
  REQUIRE(listener->receive(deadline_in(kPatience)));
  listener->send("w0", with_doubles(1, "{}", 10), deadline_in(kPatience));
  REQUIRE(connection->receive(deadline_in(kPatience)));
  listener->receive_in_place(kInPlaceMin);
  constexpr std::size_t kCount = 200'000;
  connection->send(with_doubles(2, "{\"a\":1}", kCount), deadline_in(kPatience));
  auto in = listener->receive(deadline_in(kPatience));
  REQUIRE(in);
  REQUIRE(in->message.views.size() == 2);
  CHECK(in->message.views[1].size() == kCount * sizeof(double));
  // The next big message while the lease is held: copied (one lease a peer at a time).
  connection->send(with_doubles(3, "{}", kCount), deadline_in(kPatience));
  auto again = listener->receive(deadline_in(kPatience));
  REQUIRE(again);
  CHECK(again->message.views.empty());
  CHECK(holds_doubles(again->message, 3, kCount));
  connection.reset();
  listener.reset();
  transport.reset();
  CHECK(holds_doubles(in->message, 2, kCount));  // the lease keeps the region mapped
}

TEST_CASE("shm in place: a frame that wraps around the ring's end is viewed in one piece") {
  auto region = Region::create(1 << 20);
  REQUIRE(region);
  if (::sysconf(_SC_PAGESIZE) != 4096) {  // rings off page boundaries: mapped once, copied
    CHECK_FALSE(region->mirrored());
    return;
  }
  REQUIRE(region->mirrored());
  RingWriter writer(*region, dt::transport::shm::kUp);
  RingReader reader(*region, dt::transport::shm::kUp, 1 << 30);
  // 500 KB in and read: the next record, larger than that, cannot skip back to the ring's start
  // (it would run over the skip record) and wraps around the ring's end.
  REQUIRE(write_record(writer, with_doubles(1, "{}", 62'500)) == RingWriter::Result::kWritten);
  REQUIRE(reader.next().kind == RingReader::Kind::kMessage);
  constexpr std::size_t kCount = 80'000;
  REQUIRE(write_record(writer, with_doubles(2, "{\"rows\":1}", kCount)) ==
          RingWriter::Result::kWritten);
  auto next = reader.next(kInPlaceMin);
  REQUIRE(next.kind == RingReader::Kind::kMessage);
  REQUIRE(next.message.views.size() == 2);
  const auto* ring = region->ring_data(dt::transport::shm::kUp);
  const auto* view = next.message.views[1].data();
  CHECK(view + next.message.views[1].size() > ring + region->capacity());  // it wraps
  CHECK(holds_doubles(next.message, 2, kCount));
}

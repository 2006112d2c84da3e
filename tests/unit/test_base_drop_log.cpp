// The drop log (base/drop_log.hpp) names the first few peers and counts the rest, in at most one
// summary line per interval: a flood of connections, each a new peer, is logged in bounded space.
// The clock is passed in, so nothing here sleeps.

#include "base/drop_log.hpp"
#include "tests/unit/stderr_capture.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <utility>

namespace {

using namespace std::chrono_literals;
using dt::log::DropLog;
using dt::test::count;
using dt::test::StderrCapture;

const auto t0 = DropLog::Clock::now();

}  // namespace

TEST_CASE("drop log: a flood of fresh peers is named for the first few, then summarized per interval") {
  StderrCapture capture;
  std::size_t named = 0;
  {
    DropLog drops("dropped", "malformed message");
    drops.set_where(" on tcp://127.0.0.1:9");
    // 600 peers, one every 50 ms: the first 8 named; the others counted from t = 400 ms, in
    // windows closed by the first drop 10 s or more after they began (t = 10.4 s, 20.4 s).
    for (int i = 0; i < 600; ++i) {
      if (drops.count(fmt::format("peer {}", i), t0 + i * 50ms)) ++named;
    }
    CHECK(drops.dropped() == 600);
    drops.flush(t0 + 30s);  // the last window: 192 drops over 9.6 s
  }  // nothing left for the destructor
  const std::string log = capture.finish();
  CHECK(named == DropLog::kNamedPeers);
  const std::string tail = " (each peer is named once, and only the first 8)\n";
  CHECK(count(log, "warning: dropped 200 more malformed messages from 200 peers on "
                   "tcp://127.0.0.1:9 in the last 10 s" + tail) == 2);
  CHECK(count(log, "warning: dropped 192 more malformed messages from 192 peers on "
                   "tcp://127.0.0.1:9 in the last 10 s" + tail) == 1);
  CHECK(count(log, "\n") == 3);
}

TEST_CASE("drop log: a named peer's further drops are counted, not named again") {
  StderrCapture capture;
  DropLog drops("dropped", "message");
  CHECK(drops.count("a", t0));
  CHECK_FALSE(drops.count("a", t0 + 1s));
  drops.tick(t0 + 5s);  // not due: the window began at 1 s
  CHECK(capture.finish().empty());
  StderrCapture again;
  drops.tick(t0 + 11s);
  drops.tick(t0 + 12s);  // nothing left
  CHECK_FALSE(drops.count("a", t0 + 13s));
  CHECK_FALSE(drops.count("a", t0 + 14s));
  drops.flush(t0 + 14500ms);
  const std::string log = again.finish();
  CHECK(count(log, "dropped 1 more message from 1 peer in the last 10 s") == 1);
  CHECK(count(log, "dropped 2 more messages from 1 peer in the last 2 s") == 1);
  CHECK(count(log, "\n") == 2);
  CHECK(drops.dropped() == 4);
}

TEST_CASE("drop log: the destructor writes what is left, a moved-from log nothing") {
  StderrCapture capture;
  {
    DropLog first("refused", "connection");
    for (int i = 0; i < 10; ++i) (void)first.count(std::to_string(i));
    DropLog second(std::move(first));
  }
  CHECK(count(capture.finish(), "refused 2 more connections from 2 peers in the last 1 s") == 1);
}

TEST_CASE("drop log: distinct peers are counted up to a bound") {
  StderrCapture capture;
  DropLog drops("dropped", "message");
  for (int i = 0; i < 10100; ++i) (void)drops.count(std::to_string(i), t0);
  drops.flush(t0 + 1s);
  CHECK(count(capture.finish(), "dropped 10092 more messages from at least 10000 peers") == 1);
}

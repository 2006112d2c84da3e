// The timeline recorder (base/timeline.hpp): the rolling window keeps exactly the last N steps
// (its ring buffer grows while the window fills and then no more), a thread without a recorder
// records nothing, the hooks that take the caller's clock reads (span_between, seconds_since,
// Lap) time what they are given, and spans survive their wire encoding.
#include "base/timeline.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tl = dt::timeline;

TEST_CASE("timeline recorder keeps the last N steps") {
  tl::Recorder r(3);
  for (std::uint64_t step = 1; step <= 10; ++step) {
    r.add({step, 10, 20, tl::Phase::kWait, 0});
    r.add({step, 20, 30, tl::Phase::kCompute, 0});
  }
  const auto spans = r.spans();
  CHECK(spans.size() == 6);  // steps 8, 9, 10, two spans each
  std::set<std::uint64_t> steps;
  for (const auto& s : spans) steps.insert(s.step);
  CHECK(steps == std::set<std::uint64_t>{8, 9, 10});
  // A late span of a step already out of the window is not kept in the output.
  r.add({2, 40, 50, tl::Phase::kSend, 0});
  CHECK(r.spans().size() == 6);
  // One of a step still in it is, after the others (the order they were recorded in).
  r.add({9, 60, 70, tl::Phase::kSend, 0});
  REQUIRE(r.spans().size() == 7);
  CHECK(r.spans().back().phase == tl::Phase::kSend);
}

TEST_CASE("timeline recorder: a long run keeps its window in order, through wraps and growth") {
  // 1 to 7 spans a step (uneven, so the buffer wraps at every offset), 300 steps, window 40.
  constexpr std::uint64_t kWindow = 40;
  tl::Recorder r(kWindow);
  std::vector<tl::Span> all;
  for (std::uint64_t step = 1; step <= 300; ++step) {
    for (std::uint64_t k = 0; k <= step % 7; ++k) {
      const auto t = static_cast<std::int64_t>(all.size());
      all.push_back({step, t, t + 1, tl::Phase::kCompute, static_cast<std::uint32_t>(k)});
      r.add(all.back());
    }
    if (step % 37 == 0 || step == 300) {  // the window so far: exactly the spans of its steps
      std::vector<tl::Span> want;
      for (const auto& s : all) {
        if (s.step + kWindow > step) want.push_back(s);
      }
      const auto got = r.spans();
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].step == want[i].step);
        CHECK(got[i].start_ns == want[i].start_ns);
        CHECK(got[i].detail == want[i].detail);
      }
    }
  }
}

TEST_CASE("timeline records only on a thread with a recorder") {
  tl::Recorder r(10);
  tl::span(tl::Phase::kCompute, tl::start());  // no recorder installed yet: nothing
  CHECK(tl::start() == 0);
  {
    const tl::Scope scope(&r);
    tl::set_step(4);
    const auto t0 = tl::start();
    CHECK(t0 > 0);
    tl::span(tl::Phase::kCompute, t0);
    tl::span_at(tl::Phase::kApply, 7, t0);
    // Another thread has no recorder of its own: it records nothing into this one.
    std::thread([] { tl::span(tl::Phase::kSend, tl::now_ns()); }).join();
  }
  tl::span(tl::Phase::kSend, tl::now_ns());  // the scope ended
  const auto spans = r.spans();
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].step == 4);
  CHECK(spans[0].phase == tl::Phase::kCompute);
  CHECK(spans[0].end_ns >= spans[0].start_ns);
  CHECK(spans[1].step == 7);
  CHECK(spans[1].phase == tl::Phase::kApply);
}

TEST_CASE("timeline hooks over the caller's clock reads") {
  tl::Recorder r(10);
  const auto t0 = tl::Clock::now();
  const auto t1 = t0 + std::chrono::microseconds(5);
  tl::span_between(tl::Phase::kSend, t0, t1);  // no recorder: nothing, no clock read
  tl::Lap idle;
  idle.mark(tl::Phase::kPull);
  {
    const tl::Scope scope(&r);
    tl::set_step(3);
    tl::span_between(tl::Phase::kSend, t0, t1);
    // seconds_since: the seconds it returns are the span it records.
    const double seconds = tl::seconds_since(tl::Phase::kCompute, t0);
    // A lap: each mark ends a span where the next starts; one from the caller's read.
    tl::Lap lap(t1);
    lap.mark(tl::Phase::kPull);
    lap.mark(tl::Phase::kPush, tl::Clock::now(), 7);
    lap.mark(tl::Phase::kCompute);
    tl::span_at(tl::Phase::kApplyPush, 9, tl::ns_of(t0), 4, 2);
    const auto spans = r.spans();
    REQUIRE(spans.size() == 6);
    CHECK(spans[0].phase == tl::Phase::kSend);
    CHECK(spans[0].step == 3);
    CHECK(spans[0].start_ns == tl::ns_of(t0));
    CHECK(spans[0].end_ns - spans[0].start_ns == 5000);
    CHECK(spans[1].phase == tl::Phase::kCompute);
    CHECK(spans[1].start_ns == tl::ns_of(t0));
    CHECK(static_cast<double>(spans[1].end_ns - spans[1].start_ns) ==
          doctest::Approx(seconds * 1e9).epsilon(1e-6));
    CHECK(spans[2].phase == tl::Phase::kPull);
    CHECK(spans[2].start_ns == tl::ns_of(t1));
    CHECK(spans[3].phase == tl::Phase::kPush);
    CHECK(spans[3].start_ns == spans[2].end_ns);
    CHECK(spans[3].detail == 7);
    CHECK(spans[4].start_ns == spans[3].end_ns);
    CHECK(spans[5].step == 9);
    CHECK(spans[5].detail == 4);
    CHECK(spans[5].peer == 2);
  }
  // A lap begun on a thread that did not record yet starts at its first mark.
  {
    const tl::Scope scope(&r);
    idle.mark(tl::Phase::kPull);
    CHECK(r.spans().size() == 6);
    idle.mark(tl::Phase::kPush);
    REQUIRE(r.spans().size() == 7);
    CHECK(r.spans().back().phase == tl::Phase::kPush);
  }
}

TEST_CASE("timeline spans round-trip through their encoding") {
  const std::vector<tl::Span> spans{{1, -5, 7, tl::Phase::kReduceScatter, 2},
                                    {99, 1'000'000'000'000, 1'000'000'000'123,
                                     tl::Phase::kEvaluation, 0},
                                    {5, 1, 2, tl::Phase::kApplyPush, 3, 65535}};
  const auto bytes = tl::encode(spans);
  CHECK(bytes.size() == 96);
  const auto back = tl::decode(bytes);
  REQUIRE(back.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(back[i].step == spans[i].step);
    CHECK(back[i].start_ns == spans[i].start_ns);
    CHECK(back[i].end_ns == spans[i].end_ns);
    CHECK(back[i].phase == spans[i].phase);
    CHECK(back[i].detail == spans[i].detail);
    CHECK(back[i].peer == spans[i].peer);
  }
  CHECK_THROWS_AS((void)tl::decode(std::span(bytes).first(33)), std::invalid_argument);
  auto bad = bytes;
  bad[24] = std::byte{200};  // the phase field of the first span
  CHECK_THROWS_AS((void)tl::decode(bad), std::invalid_argument);
}

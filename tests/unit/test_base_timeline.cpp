// The timeline recorder (base/timeline.hpp): the rolling window keeps exactly the last N steps,
// a thread without a recorder records nothing, and spans survive their wire encoding.
#include "base/timeline.hpp"

#include <doctest/doctest.h>

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

TEST_CASE("timeline spans round-trip through their encoding") {
  const std::vector<tl::Span> spans{{1, -5, 7, tl::Phase::kReduceScatter, 2},
                                    {99, 1'000'000'000'000, 1'000'000'000'123,
                                     tl::Phase::kEvaluation, 0}};
  const auto bytes = tl::encode(spans);
  CHECK(bytes.size() == 64);
  const auto back = tl::decode(bytes);
  REQUIRE(back.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(back[i].step == spans[i].step);
    CHECK(back[i].start_ns == spans[i].start_ns);
    CHECK(back[i].end_ns == spans[i].end_ns);
    CHECK(back[i].phase == spans[i].phase);
    CHECK(back[i].detail == spans[i].detail);
  }
  CHECK_THROWS_AS((void)tl::decode(std::span(bytes).first(33)), std::invalid_argument);
  auto bad = bytes;
  bad[24] = std::byte{200};  // the phase field of the first span
  CHECK_THROWS_AS((void)tl::decode(bad), std::invalid_argument);
}

// timeline.json from a run's result: the coordinator's and each worker's tracks, a remote
// worker's clock brought onto the coordinator's by its report's clock, and the Chrome trace
// layout (metadata naming every process and thread, "X" events in microseconds from the
// earliest span, ordered within a track).
#include "core/coordinator/timeline_recording.hpp"
#include "core/outputs/timeline_file.hpp"
#include "core/config/config.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tl = dt::timeline;

namespace {

std::string local_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

dt::roles::WorkerStats worker(int rank, std::string host, std::vector<tl::Span> spans,
                              std::int64_t clock_ns) {
  dt::roles::WorkerStats w;
  w.rank = rank;
  w.host = std::move(host);
  w.report.timeline = tl::encode(spans);
  w.report.clock_ns = clock_ns;
  return w;
}

}  // namespace

TEST_CASE("timeline: tracks of the coordinator, a local and a remote worker, as Chrome JSON") {
  const auto config = dt::config::parse(
      "version: 1\ndata: {path: a.csv}\nshards: {count: 2}\noutput: {timeline: {steps: 5}}\n",
      "t.yaml", "/tmp");
  dt::roles::RunResult result;
  const std::int64_t base = tl::now_ns();
  // Worker 1 is on another host whose clock reads 1 s behind ours at the report (its clock
  // when it sent the report: about now - 1 s).
  constexpr std::int64_t kBehind = 1'000'000'000;
  result.workers.push_back(worker(0, local_host(),
                                  {{1, base + 2000, base + 5000, tl::Phase::kWait, 0},
                                   {1, base + 1000, base + 1500, tl::Phase::kCompute, 0}},
                                  0));
  result.workers.push_back(worker(1, "elsewhere", {{1, base - kBehind, base - kBehind + 700,
                                                    tl::Phase::kCompute, 0}},
                                  tl::now_ns() - kBehind));
  {
    dt::roles::TimelineRecording recording(config, result);
    CHECK(tl::current() != nullptr);  // the coordinator's thread records while it lives
    tl::span_at(tl::Phase::kEvaluation, 1, base + 1000);
    recording.finish();
    CHECK(tl::current() == nullptr);
  }
  REQUIRE(result.timeline.size() == 3);
  CHECK(result.timeline[0].offset_ns == 0);  // same host: one CLOCK_MONOTONIC
  // The remote worker's offset is its lag, to within the time this test took.
  CHECK(result.timeline[1].offset_ns >= kBehind);
  CHECK(result.timeline[1].offset_ns < kBehind + 1'000'000'000);
  CHECK(result.timeline[2].pid == 2);  // the coordinator, after the 2 workers
  CHECK(result.timeline[2].process == "coordinator");

  const auto j = nlohmann::json::parse(dt::output::timeline_json(result));
  CHECK(j["displayTimeUnit"] == "ms");
  std::map<std::pair<int, int>, std::string> threads;
  std::map<int, std::string> processes;
  std::vector<nlohmann::json> worker0;
  double earliest = 1e300;
  for (const auto& e : j["traceEvents"]) {
    const int pid = e["pid"].get<int>();
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      threads[{pid, e["tid"].get<int>()}] = e["args"]["name"].get<std::string>();
    }
    if (e["ph"] == "M" && e["name"] == "process_name") {
      processes[pid] = e["args"]["name"].get<std::string>();
    }
    if (e["ph"] != "X") continue;
    earliest = std::min(earliest, e["ts"].get<double>());
    if (pid == 0) worker0.push_back(e);
  }
  CHECK(processes ==
        std::map<int, std::string>{{0, "worker 0"}, {1, "worker 1"}, {2, "coordinator"}});
  CHECK(threads.at({2, 0}) == "coordinator");
  CHECK(earliest == 0.0);  // microseconds from the earliest span
  // Worker 0's events in time order, whatever order they were recorded in; 1 µs apart.
  REQUIRE(worker0.size() == 2);
  CHECK(worker0[0]["name"] == "compute");
  CHECK(worker0[0]["dur"].get<double>() == doctest::Approx(0.5));
  CHECK(worker0[1]["name"] == "wait for parameters");
  CHECK(worker0[1]["ts"].get<double>() - worker0[0]["ts"].get<double>() == doctest::Approx(1.0));
  CHECK(worker0[1]["dur"].get<double>() == doctest::Approx(3.0));
  CHECK(worker0[1]["args"]["step"] == 1);
}

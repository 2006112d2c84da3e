#include "core/outputs/timeline_file.hpp"

#include "base/files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace dt::output {
namespace {

// Microseconds with nanosecond digits: Chrome's ts and dur are in microseconds and take
// fractions.
std::string micros(std::int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

// Process and thread names are ours ("worker 3", "server 1"), never user text: no escaping.
void metadata(std::string& out, const char* what, int pid, int tid, const std::string& arg) {
  out += fmt::format(R"({{"name":"{}","ph":"M","pid":{},"tid":{},"args":{}}},)", what, pid, tid,
                     arg);
  out += '\n';
}

// What a phase counts, after its step: a ring half's segments, an async push's worker and
// staleness, a tensor exchange's values.
std::string more_args(const timeline::Span& s) {
  switch (s.phase) {
    case timeline::Phase::kReduceScatter:
    case timeline::Phase::kAllGather: return fmt::format(R"(,"segments":{})", s.detail);
    case timeline::Phase::kApplyPush:
      return fmt::format(R"(,"worker":{},"staleness":{})", s.peer, s.detail);
    case timeline::Phase::kTensorExchange: return fmt::format(R"(,"values":{})", s.detail);
    default: return {};
  }
}

}  // namespace

std::string timeline_json(const roles::RunResult& result) {
  std::int64_t origin = std::numeric_limits<std::int64_t>::max();
  for (const auto& track : result.timeline) {
    for (const auto& s : track.spans) origin = std::min(origin, s.start_ns + track.offset_ns);
  }
  if (origin == std::numeric_limits<std::int64_t>::max()) origin = 0;

  std::string out = "{\"traceEvents\":[\n";
  int last_pid = std::numeric_limits<int>::min();
  for (const auto& track : result.timeline) {
    if (track.pid != last_pid) {
      metadata(out, "process_name", track.pid, track.tid,
               fmt::format(R"({{"name":"{}"}})", track.process));
      metadata(out, "process_sort_index", track.pid, track.tid,
               fmt::format(R"({{"sort_index":{}}})", track.pid));
      last_pid = track.pid;
    }
    metadata(out, "thread_name", track.pid, track.tid,
             fmt::format(R"({{"name":"{}"}})", track.thread));
    auto spans = track.spans;
    std::stable_sort(spans.begin(), spans.end(),
                     [](const timeline::Span& a, const timeline::Span& b) {
                       return a.start_ns < b.start_ns;
                     });
    for (const auto& s : spans) {
      out += fmt::format(
          R"({{"name":"{}","cat":"step","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{{"step":{}{}}}}},)",
          timeline::name_of(s.phase), micros(s.start_ns + track.offset_ns - origin),
          micros(std::max<std::int64_t>(0, s.end_ns - s.start_ns)), track.pid, track.tid, s.step,
          more_args(s));
      out += '\n';
    }
  }
  if (out.ends_with(",\n")) out.erase(out.size() - 2, 1);
  out += "],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

void write_timeline(const std::filesystem::path& dir, const roles::RunResult& result) {
  files::write_atomic(dir / "timeline.json", timeline_json(result));
}

}  // namespace dt::output

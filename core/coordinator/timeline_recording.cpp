#include "core/coordinator/timeline_recording.hpp"

#include "base/net.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace dt::roles {

int coordinator_timeline_pid(const config::Config& config) { return config::worker_count(config); }

TimelineRecording::TimelineRecording(const config::Config& config, RunResult& result)
    : config_(config), result_(result) {
  if (config.output.timeline_steps == 0) return;
  recorder_ = std::make_unique<timeline::Recorder>(config.output.timeline_steps);
  scope_.emplace(recorder_.get());
}

void TimelineRecording::finish() {
  if (!recorder_) return;
  const std::int64_t now = timeline::now_ns();
  const std::string host = net::this_host();
  std::vector<timeline::Track> tracks;
  for (const auto& w : result_.workers) {
    if (w.report.timeline.empty()) continue;  // lost, or it recorded nothing
    timeline::Track track{w.rank, fmt::format("worker {}", w.rank), 0, "main", 0, {}};
    try {
      track.spans = timeline::decode(w.report.timeline);
    } catch (const std::invalid_argument&) {
      continue;  // a malformed report's spans are left out; the run itself is fine
    }
    if (!w.host.empty() && w.host != host) track.offset_ns = now - w.report.clock_ns;
    tracks.push_back(std::move(track));
  }
  const int pid = coordinator_timeline_pid(config_);
  tracks.push_back({pid, "coordinator", 0, "coordinator", 0, recorder_->spans()});
  // Servers' tracks (pushed while their group ended) go after the coordinator's, in one process.
  tracks.insert(tracks.end(), std::make_move_iterator(result_.timeline.begin()),
                std::make_move_iterator(result_.timeline.end()));
  result_.timeline = std::move(tracks);
  scope_.reset();
}

}  // namespace dt::roles

#include "core/coordinator/stragglers.hpp"

#include "core/coordinator/result.hpp"
#include "base/log.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <utility>

namespace dt::roles {

namespace {

// Heartbeats come every heartbeat_ms (>= 10): looking more often finds nothing new.
constexpr std::int64_t kCheckEveryMs = 10;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

nlohmann::json Straggler::to_json() const {
  return {{"rank", rank},
          {"step_seconds_p50", step_seconds_p50},
          {"median_of_others", median_of_others},
          {"factor", factor},
          {"first_seen_step", first_seen_step}};
}

std::string Straggler::describe(double straggler_factor) const {
  return fmt::format("worker {} is a straggler: its steps take {:.3g} ms of compute (median over "
                     "its last {}+ steps), {:.{}f} times the {:.3g} ms of the other workers' "
                     "median, since its step {} (fault_tolerance.straggler_factor = {})",
                     rank, step_seconds_p50 * 1e3, StragglerMonitor::kWindowSteps, factor,
                     factor < 10 ? 1 : 0, median_of_others * 1e3, first_seen_step,
                     text::format_double(straggler_factor));
}

StragglerMonitor::StragglerMonitor(double factor, std::size_t ranks)
    : factor_(factor), ranks_(ranks) {}

void StragglerMonitor::observe(int rank, const WorkerProgress& progress) {
  auto& r = ranks_.at(static_cast<std::size_t>(rank));
  if (!r.history.empty() && progress.steps < r.history.back().steps) {
    // A replacement worker counts from 0 again: its predecessor's pace says nothing of it.
    r.history.clear();
    r.suspect_since.reset();
  }
  if (!r.history.empty() && progress.steps == r.history.back().steps) return;
  r.history.push_back({progress.steps, progress.compute_seconds});
  if (r.suspect_since) ++r.samples_since_suspect;
  // Keep the shortest suffix that still covers the window.
  while (r.history.size() > kMinSamples + 1 &&
         r.history.back().steps - r.history[1].steps >= kWindowSteps) {
    r.history.pop_front();
  }
}

std::optional<double> StragglerMonitor::pace(int rank) const {
  const auto& h = ranks_.at(static_cast<std::size_t>(rank)).history;
  if (h.size() < kMinSamples + 1 || h.back().steps - h.front().steps < kWindowSteps) {
    return std::nullopt;
  }
  // Weighted median of the intervals' per-step times, each weighted by its steps.
  std::vector<std::pair<double, std::uint64_t>> intervals;
  for (std::size_t i = 1; i < h.size(); ++i) {
    const auto steps = h[i].steps - h[i - 1].steps;
    intervals.emplace_back((h[i].seconds - h[i - 1].seconds) / static_cast<double>(steps), steps);
  }
  std::sort(intervals.begin(), intervals.end());
  const std::uint64_t total = h.back().steps - h.front().steps;
  std::uint64_t seen = 0;
  for (const auto& [per_step, steps] : intervals) {
    seen += steps;
    if (2 * seen >= total) return per_step;
  }
  return intervals.back().first;
}

std::vector<Straggler> StragglerMonitor::evaluate() {
  std::vector<Straggler> found;
  if (factor_ <= 0) return found;
  std::vector<std::optional<double>> paces;
  for (std::size_t r = 0; r < ranks_.size(); ++r) paces.push_back(pace(static_cast<int>(r)));
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    auto& rank = ranks_[r];
    if (!paces[r]) continue;
    std::vector<double> others;
    for (std::size_t o = 0; o < ranks_.size(); ++o) {
      if (o != r && paces[o]) others.push_back(*paces[o]);
    }
    if (others.empty()) continue;
    const double mine = *paces[r];
    const double m = median(std::move(others));
    const bool slow = m > 0 && mine > factor_ * m && mine - m >= kMinExcessSeconds;
    if (!slow) {
      rank.suspect_since.reset();
      continue;
    }
    if (!rank.suspect_since) {
      rank.suspect_since = rank.history.back();
      rank.samples_since_suspect = 0;
      continue;
    }
    if (rank.reported || rank.history.back().steps - rank.suspect_since->steps < kWindowSteps ||
        rank.samples_since_suspect < kMinSamples) {
      continue;
    }
    rank.reported = true;
    found.push_back({static_cast<int>(r), mine, m, mine / m, rank.suspect_since->steps});
  }
  return found;
}

void StragglerMonitor::check(const HeartbeatServer& heartbeat, RunResult& result) {
  if (factor_ <= 0) return;
  const auto now = steady_ms();
  if (last_check_ms_ >= 0 && now - last_check_ms_ < kCheckEveryMs) return;
  last_check_ms_ = now;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    observe(static_cast<int>(r), heartbeat.progress(static_cast<int>(r)));
  }
  for (const auto& s : evaluate()) {
    result.warnings.push_back(s.describe(factor_));
    log::warn("{}", result.warnings.back());
    result.stragglers.push_back(s.to_json());
  }
}

}  // namespace dt::roles

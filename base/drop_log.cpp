#include "base/drop_log.hpp"

#include "base/log.hpp"

#include <functional>
#include <utility>

namespace dt::log {

DropLog::DropLog(std::string verb, std::string noun, Clock::duration interval)
    : verb_(std::move(verb)), noun_(std::move(noun)), interval_(interval) {}

DropLog::~DropLog() { flush(); }

DropLog::DropLog(DropLog&& other) noexcept
    : verb_(std::move(other.verb_)),
      noun_(std::move(other.noun_)),
      where_(std::move(other.where_)),
      interval_(other.interval_),
      named_(std::move(other.named_)),
      window_peers_(std::move(other.window_peers_)),
      pending_(std::exchange(other.pending_, 0)),
      window_start_(other.window_start_),
      dropped_(other.dropped_) {}

bool DropLog::count(std::string_view peer, Clock::time_point now) {
  ++dropped_;
  if (named_.size() < kNamedPeers && !named_.contains(peer)) {
    named_.emplace(peer);
    return true;
  }
  tick(now);  // the summary of the window before this drop, if it is over
  if (pending_ == 0) window_start_ = now;
  ++pending_;
  if (window_peers_.size() < kMaxCountedPeers) {
    window_peers_.insert(std::hash<std::string_view>{}(peer));
  }
  return false;
}

void DropLog::flush(Clock::time_point now) noexcept {
  if (pending_ == 0) return;
  const auto n = std::exchange(pending_, 0);
  const std::size_t peers = window_peers_.size();
  window_peers_.clear();
  // Whole seconds, rounded up: "in the last 0 s" would read as nothing.
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - window_start_);
  const auto seconds = std::max<std::int64_t>(1, (ms.count() + 999) / 1000);
  try {
    warn("{} {} more {}{} from {}{} peer{}{} in the last {} s (each peer is named once, and only "
         "the first {})",
         verb_, n, noun_, n == 1 ? "" : "s", peers >= kMaxCountedPeers ? "at least " : "", peers,
         peers == 1 ? "" : "s", where_, seconds, kNamedPeers);
  } catch (...) {  // out of memory for the line: the counts are lost, nothing else is
  }
}

}  // namespace dt::log

#pragma once
// The log of what a process refuses from peers it cannot trust (malformed messages, another job's,
// a connection with an unknown key), in bounded space: a stranger may open thousands of
// connections, each a new peer, and a line per peer would fill the log and, with a stderr that
// nobody reads, once stopped the process. The first kNamedPeers peers are named, once each, by the
// caller (with the reason); every other drop is counted, and the counts are written as one
// summary line at most every `interval`:
//
//   dropped 1492 more malformed messages from 1490 peers on tcp://127.0.0.1:41000 in the last 10 s
//   (only the first 8 peers are named)
//
// The summary is written on the first drop after the interval, by tick() when one is due (the
// owner calls it from a loop that runs anyway), and by the destructor for what is left.
// Used by one thread (the one that receives); the clock is a parameter so tests need no sleep.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>

namespace dt::log {

class DropLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kNamedPeers = 8;
  static constexpr std::chrono::seconds kInterval{10};

  // The summary reads "{verb} N more {noun}s from M peers{where} in the last S s": verb
  // "dropped", noun "malformed message", where " on tcp://..." (set_where: a listener learns
  // its endpoint after it is made) or empty.
  DropLog(std::string verb, std::string noun, Clock::duration interval = kInterval);
  ~DropLog();
  DropLog(DropLog&& other) noexcept;  // the moved-from log has nothing left to write
  DropLog& operator=(DropLog&&) = delete;
  DropLog(const DropLog&) = delete;
  DropLog& operator=(const DropLog&) = delete;

  void set_where(std::string where) { where_ = std::move(where); }
  // Counts one drop from `peer`. True when the caller should log this one itself, naming the
  // peer and the reason: the first drop of each of the first kNamedPeers peers.
  [[nodiscard]] bool count(std::string_view peer, Clock::time_point now = Clock::now());
  // Writes the summary if one is due. Costs nothing while there is nothing to summarize.
  void tick(Clock::time_point now = Clock::now()) {
    if (pending_ > 0 && now - window_start_ >= interval_) flush(now);
  }
  // Writes the summary of the drops not yet reported (if any), due or not.
  void flush(Clock::time_point now = Clock::now()) noexcept;

  [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_; }

 private:
  // Distinct peers are counted up to this many per summary ("at least"): bounds the memory a
  // flood of fresh identities can take.
  static constexpr std::size_t kMaxCountedPeers = 10000;

  std::string verb_;
  std::string noun_;
  std::string where_;
  Clock::duration interval_;
  std::set<std::string, std::less<>> named_;        // at most kNamedPeers
  std::unordered_set<std::size_t> window_peers_;    // hashes of the peers summarized next
  std::uint64_t pending_ = 0;                       // drops summarized next
  Clock::time_point window_start_{};
  std::uint64_t dropped_ = 0;                       // all drops, named or counted
};

}  // namespace dt::log

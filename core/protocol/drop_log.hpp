#pragma once
// Messages a process drops (another job's, malformed, a peer claiming another's rank) are
// logged once per peer, then at debug level: a stranger sending garbage to a port cannot flood
// the log, and the first drop of each peer is still seen. Used by one thread.

#include <cstddef>
#include <set>
#include <string>

namespace dt::roles {

class DropLog {
 public:
  // Logs "dropped a message from 'peer': why" (a warning the first time for this peer).
  void drop(const std::string& peer, const std::string& why);
  [[nodiscard]] std::size_t dropped() const noexcept { return dropped_; }

 private:
  // Bounded: past this many distinct peers (a stranger reconnecting under fresh identities),
  // one last warning says that further ones are logged at debug level.
  static constexpr std::size_t kMaxPeers = 256;
  std::set<std::string> warned_;
  bool full_ = false;
  std::size_t dropped_ = 0;
};

}  // namespace dt::roles

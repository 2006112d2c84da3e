#pragma once
// Messages a role drops (another job's, malformed, a peer claiming another's rank): the first
// drop of each of the first few peers is logged with its reason, every other one is counted
// and summarized at most once per 10 s (base/drop_log.hpp). A stranger opening connection after
// connection under fresh identities cannot flood the log, and the first drops are still seen.
// Used by one thread.

#include "base/drop_log.hpp"

#include <cstddef>
#include <string>

namespace dt::roles {

class DropLog {
 public:
  // Logs "dropped a message from 'peer': why" for the first few peers, counts the rest.
  void drop(const std::string& peer, const std::string& why);
  // Writes the counts when they are due: call it from a loop that runs anyway.
  void tick() { log_.tick(); }
  [[nodiscard]] std::size_t dropped() const noexcept { return log_.dropped(); }

 private:
  log::DropLog log_{"dropped", "message"};
};

}  // namespace dt::roles

#pragma once
// A mode whose parameters and optimizer state live on parameter servers (sharded gradients,
// async): the servers are kept past coordinate() so that a stop checkpoint can still read them,
// and a resumed run's checkpoint is handed to the servers it starts.

#include "core/modes/mode.hpp"
#include "core/roles/server_group.hpp"

#include <memory>

namespace dt::modes {

class ServerGroupMode : public Mode {
 public:
  bool save_state(roles::CoordinatorSession& /*session*/, std::uint64_t step,
                  checkpoint::Checkpoint& out) override {
    return servers_ && servers_->save_state(step, out);
  }
  void restore_state(roles::CoordinatorSession& /*session*/,
                     const checkpoint::Checkpoint& from) override {
    from_ = &from;
  }

 protected:
  std::unique_ptr<roles::ServerGroup> servers_;
  const checkpoint::Checkpoint* from_ = nullptr;  // a resumed run's (owned by the Checkpointer)
};

}  // namespace dt::modes

#pragma once
// A mode whose parameters and optimizer state live on parameter servers (sharded gradients,
// async): the servers are kept past coordinate() so that a stop checkpoint can still read them,
// and a resumed run's checkpoint is handed to the servers it starts.

#include "core/modes/mode.hpp"
#include "core/coordinator/session.hpp"
#include "core/servers/server_group.hpp"

#include <memory>

namespace dt::modes {

// Sets the session's loss handler for the life of this object: the handler refers to the
// mode's locals, so it must not outlive coordinate() (a checkpoint written after a failure, the
// final evaluation: the session's own re-send serves those).
class LossHandlerScope {
 public:
  LossHandlerScope(roles::CoordinatorSession& session, roles::CoordinatorSession::LossHandler h)
      : session_(session) {
    session_.set_loss_handler(std::move(h));
  }
  ~LossHandlerScope() { session_.set_loss_handler({}); }
  LossHandlerScope(const LossHandlerScope&) = delete;
  LossHandlerScope& operator=(const LossHandlerScope&) = delete;

 private:
  roles::CoordinatorSession& session_;
};

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

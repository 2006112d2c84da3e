#pragma once
// The star coordinator's parameters sent without a copy. Each step's request lends the
// parameters' own buffer (wire::Message::views: the transport copies it into the worker's ring
// or ZeroMQ message during the send) instead of copying it into a frame of its own first
// (wire::to_bytes: 8 MB a step for 1M parameters). The optimizer then steps out of place into a
// second buffer, which becomes the parameters (the two swap, as a ring replica's do), so the
// request's bytes stay as they were sent.
//
// Ownership: a request may be sent again while it lives (a resend when a reply is overdue, a
// restarted worker given its rank's last request), so the bytes it lends must not change while
// any message holds its lease. A buffer is stepped into again only when no message holds it any
// more; when one still does (the last request of a worker lost under `continue`), the buffer is
// given to that lease and a fresh one is taken. finish() does the same for the parameters' own
// buffer (a copy stays the session's), for what writes the parameters after the training loop
// (training.early_stopping restores its best ones).
// Threading: the coordinator's thread only.

#include "core/protocol/protocol.hpp"

#include <memory>
#include <span>
#include <vector>

namespace dt::modes {

class LentParams {
 public:
  // `params`: the session's parameters; their vector object stays the same, its buffer swaps.
  explicit LentParams(std::vector<double>& params);
  ~LentParams();
  LentParams(const LentParams&) = delete;
  LentParams& operator=(const LentParams&) = delete;

  // Appends the parameters to `request` as its next array, lent.
  void lend(protocol::Envelope& request);
  // The buffer to step into out of place: the parameters' size, lent to no live message.
  [[nodiscard]] std::span<double> target();
  // After a step into target(): it becomes the parameters' buffer, the old one the spare.
  void swap() noexcept;
  // Leaves the parameters to be written in place: their buffer, if still lent, stays with the
  // messages that hold it, and the parameters get a copy (one, at the end of training).
  void finish();

  // How many buffers were handed over to messages that still held them (for the tests).
  [[nodiscard]] std::size_t handed_over() const noexcept { return handed_over_; }

 private:
  struct Pin;

  std::vector<double>& params_;
  std::vector<double> spare_;
  std::shared_ptr<Pin> params_pin_;  // what messages lending params_' buffer hold
  std::shared_ptr<Pin> spare_pin_;   // the same for spare_'s buffer
  std::size_t handed_over_ = 0;
};

}  // namespace dt::modes

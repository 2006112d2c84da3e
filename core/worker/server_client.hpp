#pragma once
// The worker's end of the parameter servers (aggregation.servers, async mode): ServerClient
// connects to every server the coordinator announced, splits a gradient into the servers' key
// ranges, assembles the slices they send back, and follows a failed server to its replacement
// (on_moved). The servers themselves: core/servers/.

#include "core/protocol/protocol.hpp"
#include "core/protocol/topk_feedback.hpp"
#include "core/servers/server_state.hpp"
#include "transports/wire.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dt::transport {
class Connection;
}

namespace dt::roles {

class WorkerSession;

class ServerClient {
 public:
  // Connects to the servers a `servers` message names, and takes the coordinator's
  // kServerMoved notices (on_moved) until destroyed.
  ServerClient(WorkerSession& session, const protocol::Envelope& servers);
  ~ServerClient();
  ServerClient(const ServerClient&) = delete;
  ServerClient& operator=(const ServerClient&) = delete;

  [[nodiscard]] const std::vector<KeyRange>& ranges() const noexcept { return ranges_; }
  // Asks every server for its slice (`steps`: this worker's planned steps, async mode).
  void pull(std::uint64_t steps);
  // Sends every server its keys of `grad_sum` with the batch's rows and loss sum, and the
  // version of that server's slice the gradient was computed from.
  // `planned` (async, when not 0): this worker's planned steps in all, which grow when it takes
  // over rows of a lost worker.
  // `clip` (async, clip_norm over several servers): the factor of the whole gradient
  // (core/modes/push_clip.hpp), sent to every server.
  void push(std::span<const double> grad_sum, std::uint64_t step, std::uint64_t rows,
            double loss_sum, std::uint64_t planned = 0, std::optional<double> clip = {});
  // aggregation.compression {topk} (sync): push() then sends each server the entries `feedback`
  // chose in its range (its last select) instead of grad_sum. Not owned; null: dense pushes.
  void set_topk(const protocol::TopkFeedback* feedback) noexcept { topk_ = feedback; }
  // Waits for one slice from every server and writes it into params; supervised by
  // WorkerSession::check_alive (a wait the stale-synchronous bound holds is not a failure).
  // Slices older than `min_version` are skipped: a replacement for a lost worker (restart) may
  // be sent a round's slice twice (once as the lost worker's, once for its own push).
  void receive(std::span<double> params, std::uint64_t min_version = 0);
  // The keyed exchange of sparse rows (sync and async; core/servers/param_server_keyed.cpp).
  // `indices`: a batch's parameter indices, ascending (its local vector's order); each server
  // gets its part. pull_keyed asks for their values (async: it starts training, as pull does,
  // with `steps`), push_keyed sends the gradient at them and, when `next` is not empty, asks for
  // the values of the next step's (async: every push but the last; `planned` as for push);
  // receive_keyed waits for the values asked for and writes them into `local` (the order of the
  // indices asked for).
  void pull_keyed(std::span<const std::uint64_t> indices, std::uint64_t steps = 0);
  void push_keyed(std::span<const std::uint64_t> indices, std::span<const double> grad,
                  std::span<const std::uint64_t> next, std::uint64_t step, std::uint64_t rows,
                  double loss_sum, std::uint64_t planned = 0, std::optional<double> clip = {});
  void receive_keyed(std::span<double> local, std::uint64_t min_version);

  // Async, training.early_stopping: a server answered with kEnd instead of a slice (the
  // receive still waited for every server's answer): push no more.
  [[nodiscard]] bool ended() const noexcept { return ended_; }

  // A share of a lost worker's rows a server sent along with a slice (async continue): the
  // kReassign message to act on, once.
  [[nodiscard]] std::optional<protocol::Envelope> take_notice() { return std::exchange(notice_, {}); }

 private:
  void account();
  void take_reassign(protocol::Envelope& slice);  // a notice riding on a slice (async continue)
  // Waits until no server owes a slice (at least min_version), handing each to `take`.
  using SliceTaker = std::function<void(std::size_t, protocol::Envelope&)>;
  void await_owed(std::uint64_t min_version, const SliceTaker& take);
  // kServerMoved (a notice from the coordinator, server_recovery.cpp): connects to the
  // replacement and sends it what it lacks (sync: this worker's push of the round it redoes;
  // async: how many steps this worker has pushed, and whether it waits for a slice).
  void on_moved(const protocol::Envelope& moved);

  WorkerSession& session_;
  std::vector<KeyRange> ranges_;
  std::vector<std::string> endpoints_;
  std::vector<std::unique_ptr<transport::Connection>> connections_;
  std::vector<std::uint64_t> versions_;
  std::uint64_t sent_ = 0;
  std::uint64_t received_ = 0;
  // For a replaced server: the last message sent to each server (as encoded, kept instead of
  // a temporary, so at no extra cost) and its step; whether a slice is owed by it; the lowest
  // version a slice of it may carry (sync: a replacement's repeat of a round is dropped).
  bool asynchronous_ = false;
  std::uint64_t steps_ = 0;   // async: this worker's planned steps
  std::uint64_t pushes_ = 0;  // pushes sent to every server
  std::vector<std::optional<wire::Message>> last_sent_;
  std::vector<std::uint64_t> last_push_step_;
  std::vector<bool> pushed_;
  std::vector<bool> awaiting_;
  std::vector<std::uint64_t> min_version_;
  // Keyed: where each server's part of the indices asked for lies, and the offsets' scratch.
  [[nodiscard]] std::span<const std::uint64_t> part(std::span<const std::uint64_t> indices,
                                                    std::size_t k) const;
  wire::Bytes offsets_frame(std::span<const std::uint64_t> part, std::size_t k);
  wire::Bytes ask(std::span<const std::uint64_t> part, std::size_t k);  // offsets asked for
  std::vector<std::size_t> asked_at_;
  std::vector<std::size_t> asked_count_;
  std::vector<std::uint32_t> offsets_;
  // Async keyed: each server's part of the indices last asked for, as sent (a replacement
  // server is asked for them again: on_moved).
  std::vector<wire::Bytes> asked_frames_;
  bool keyed_ = false;
  std::uint64_t retired_sent_ = 0;      // bytes of connections closed for a replacement
  std::uint64_t retired_received_ = 0;
  std::optional<protocol::Envelope> notice_;
  bool ended_ = false;
  const protocol::TopkFeedback* topk_ = nullptr;
};

}  // namespace dt::roles

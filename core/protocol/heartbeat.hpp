#pragma once
// Liveness on its own sockets and threads, apart from the data path, so that a long computation
// (a big batch, the coordinator's validation pass) never looks like a dead peer and a dead peer
// is noticed while the other side is busy.
//
//   HeartbeatServer (coordinator): a thread with its own Listener; records when each rank last
//                                  pinged and answers every ping with a pong.
//   HeartbeatClient (worker):      a thread with its own Connection; pings every heartbeat_ms and
//                                  records when the coordinator last answered.
//
// Each ping also carries the worker's progress (steps done, their compute seconds), so the
// coordinator sees every worker's pace live in every mode (core/coordinator/stragglers.hpp), even
// where training messages do not pass through it (async, ring).
//
// Both threads stop and join in the destructor, at once: the stop raises a Wakeup that ends the
// thread's socket wait (it does not wait out a poll slice). The `last seen` reads are lock-free.

#include "transports/transport.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dt::roles {

using Milliseconds = std::chrono::milliseconds;

// How long a heartbeat thread's socket wait lasts at most before it looks at its stop flag
// again (a stop also wakes it at once). Tests make it huge to show that the stop does not wait
// for it.
inline constexpr Milliseconds kHeartbeatPollSlice{50};

// A worker's progress as its last ping told it.
struct WorkerProgress {
  std::uint64_t steps = 0;
  double compute_seconds = 0;  // over those steps
};

class HeartbeatServer {
 public:
  HeartbeatServer(transport::Transport& transport, std::uint64_t job_id, int ranks,
                  Milliseconds poll_slice = kHeartbeatPollSlice);
  ~HeartbeatServer();
  HeartbeatServer(const HeartbeatServer&) = delete;
  HeartbeatServer& operator=(const HeartbeatServer&) = delete;

  [[nodiscard]] const std::string& endpoint() const noexcept { return endpoint_; }
  // How long since `rank` last pinged; nullopt-like -1 before its first ping.
  [[nodiscard]] std::int64_t silent_ms(int rank) const noexcept;
  // What `rank`'s last ping said of its progress (zeros before it reported any).
  [[nodiscard]] WorkerProgress progress(int rank) const;
  // A replacement worker takes `rank` over: it has not pinged yet.
  void forget(int rank) noexcept { last_seen_ms_[static_cast<std::size_t>(rank)].store(-1); }

 private:
  void loop(std::unique_ptr<transport::Listener> listener);

  std::uint64_t job_id_;
  std::string endpoint_;
  std::vector<std::atomic<std::int64_t>> last_seen_ms_;  // steady-clock ms; -1 = never
  mutable std::mutex progress_mutex_;
  std::vector<WorkerProgress> progress_;  // by rank, under progress_mutex_
  Milliseconds poll_slice_;
  std::atomic<bool> stop_{false};
  transport::Wakeup wakeup_;  // raised with stop_; outlives the thread's socket
  std::thread thread_;
};

class HeartbeatClient {
 public:
  HeartbeatClient(transport::Transport& transport, const std::string& endpoint,
                  std::uint64_t job_id, std::uint32_t rank, Milliseconds interval,
                  Milliseconds poll_slice = kHeartbeatPollSlice);
  ~HeartbeatClient();
  HeartbeatClient(const HeartbeatClient&) = delete;
  HeartbeatClient& operator=(const HeartbeatClient&) = delete;

  // How long since the coordinator last answered (since start, before the first answer).
  [[nodiscard]] std::int64_t silent_ms() const noexcept;
  // The worker's progress, sent with the next pings (thread-safe).
  void set_progress(std::uint64_t steps, double compute_seconds);

 private:
  void loop(std::unique_ptr<transport::Connection> connection);

  std::uint64_t job_id_;
  std::uint32_t rank_;
  Milliseconds interval_;
  std::atomic<std::int64_t> last_seen_ms_;
  std::mutex progress_mutex_;
  WorkerProgress progress_;  // under progress_mutex_
  Milliseconds poll_slice_;
  std::atomic<bool> stop_{false};
  transport::Wakeup wakeup_;  // raised with stop_; outlives the thread's socket
  std::thread thread_;
};

[[nodiscard]] std::int64_t steady_ms() noexcept;

}  // namespace dt::roles

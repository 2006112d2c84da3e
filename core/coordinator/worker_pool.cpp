#include "core/coordinator/worker_pool.hpp"

#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace dt::roles {
namespace {

class ProcessPool final : public WorkerPool {
 public:
  explicit ProcessPool(ProcessPoolOptions options) : options_(std::move(options)) {}

  void start(int rank, const std::string& endpoint) override {
    const std::vector<std::string> args = {
        "worker", "--connect", endpoint, "--rank", std::to_string(rank),
        "--job", fmt::format("{:016x}", options_.job_id), "--log-level",
        // A worker's log is its own file, not the terminal: it always says what it did.
        std::to_string(std::max(options_.log_level, static_cast<int>(log::Level::kInfo)))};
    const int n = starts_[rank]++;
    launcher_.spawn(rank, options_.program, args,
                    options_.log_dir /
                        (n == 0 ? fmt::format("{}.log", rank) : fmt::format("{}.restart{}.log", rank, n)),
                    options_.environment);
  }
  void kill(int rank) override { launcher_.kill(rank); }
  std::vector<ChildExit> poll() override { return launcher_.poll(); }
  std::int64_t pid_of(int rank) const override { return launcher_.pid_of(rank).value_or(0); }
  std::string last_words(int rank) const override {
    const auto log = launcher_.log_of(rank);
    return log ? tail_of(*log, 3) : std::string();
  }
  bool wait_all(std::chrono::milliseconds timeout) override { return launcher_.wait_all(timeout); }
  bool await_end(int rank, std::chrono::milliseconds timeout) override {
    return launcher_.await_child(rank, timeout);
  }
  void stop_all() override { launcher_.stop_all(std::chrono::milliseconds(1000)); }

 private:
  ProcessPoolOptions options_;
  std::map<int, int> starts_;  // per rank
  Launcher launcher_;
};

// Workers as threads sharing the coordinator's Transport (inproc endpoints need one context).
// A thread cannot be killed: stop_all raises the cancel flag that every worker wait checks.
class ThreadPool final : public WorkerPool {
 public:
  ThreadPool(transport::Transport& transport, std::uint64_t job_id)
      : transport_(transport), job_id_(job_id) {}
  ~ThreadPool() override { stop_all(); }

  void start(int rank, const std::string& endpoint) override {
    auto slot = std::make_unique<Slot>();
    slot->options = {endpoint, static_cast<std::uint32_t>(rank), job_id_, &cancel_};
    slot->rank = rank;
    Slot* s = slot.get();
    slot->thread = std::thread([this, s] {
      const int code = run_worker(transport_, s->options);
      s->exit_code.store(code);
      {
        const std::lock_guard lock(done_mutex_);  // so that wait_all cannot miss the notify
        s->done.store(true);
      }
      done_.notify_all();
    });
    slots_.push_back(std::move(slot));
  }

  // A worker thread ends only by itself (an error): there is nothing to kill.
  void kill(int rank) override {
    for (auto& s : slots_) {
      if (s->rank == rank && s->done.load()) s->reported = true;
    }
  }

  std::vector<ChildExit> poll() override {
    std::vector<ChildExit> exits;
    for (auto& s : slots_) {
      if (s->done.load() && !s->reported) {
        s->reported = true;
        exits.push_back({s->rank, ::getpid(), ExitStatus{s->exit_code.load(), 0}});
      }
    }
    return exits;
  }
  std::int64_t pid_of(int) const override { return ::getpid(); }
  std::string last_words(int) const override { return {}; }
  bool wait_all(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(done_mutex_);
    const bool all = done_.wait_for(lock, timeout, [this] {
      return std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->done.load(); });
    });
    lock.unlock();
    if (all) join();
    return all;
  }
  void stop_all() override {
    cancel_.store(true);
    join();
  }

 private:
  struct Slot {
    WorkerOptions options;
    int rank = 0;
    std::thread thread;
    std::atomic<int> exit_code{0};
    std::atomic<bool> done{false};
    bool reported = false;
  };
  void join() {
    for (auto& s : slots_) {
      if (s->thread.joinable()) s->thread.join();
    }
  }

  transport::Transport& transport_;
  std::uint64_t job_id_;
  std::atomic<bool> cancel_{false};
  std::vector<std::unique_ptr<Slot>> slots_;  // changed by the coordinator's thread only
  std::mutex done_mutex_;  // with done_: a worker thread's end wakes wait_all
  std::condition_variable done_;
};

}  // namespace

std::unique_ptr<WorkerPool> make_process_pool(const ProcessPoolOptions& options) {
  return std::make_unique<ProcessPool>(options);
}

std::unique_ptr<WorkerPool> make_thread_pool(transport::Transport& transport,
                                             std::uint64_t job_id) {
  return std::make_unique<ThreadPool>(transport, job_id);
}

}  // namespace dt::roles

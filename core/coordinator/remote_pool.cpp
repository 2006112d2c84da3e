// Workers started by someone else: the pool part of joining ranks (worker_pool.hpp).

#include "core/coordinator/worker_pool.hpp"

#include <map>
#include <set>

namespace dt::roles {
namespace {

class RemotePool final : public WorkerPool {
 public:
  RemotePool(std::unique_ptr<WorkerPool> local, int first_remote, int end_remote)
      : local_(std::move(local)), first_remote_(first_remote), end_remote_(end_remote) {}

  void start(int rank, const std::string& endpoint) override {
    if (local(rank)) local_->start(rank, endpoint);
    // A joining rank: its launcher starts it (again, for a replacement); the coordinator waits.
  }
  void kill(int rank) override {
    if (local(rank)) local_->kill(rank);
  }
  std::vector<ChildExit> poll() override { return local_->poll(); }
  std::int64_t pid_of(int rank) const override {
    if (local(rank)) return local_->pid_of(rank);
    const auto it = pids_.find(rank);
    return it == pids_.end() ? 0 : it->second;
  }
  std::string last_words(int rank) const override {
    return local(rank) ? local_->last_words(rank) : std::string();
  }
  bool wait_all(std::chrono::milliseconds timeout) override { return local_->wait_all(timeout); }
  bool await_end(int rank, std::chrono::milliseconds timeout) override {
    return local(rank) && local_->await_end(rank, timeout);
  }
  void stop_all() override { local_->stop_all(); }
  void taken_over(int rank, std::int64_t pid) override {
    taken_.insert(rank);
    pids_[rank] = pid;
  }
  void joined(int rank, std::int64_t pid) override {
    if (local(rank)) {
      local_->joined(rank, pid);
    } else {
      pids_[rank] = pid;
    }
  }

 private:
  [[nodiscard]] bool local(int rank) const noexcept {
    return (rank < first_remote_ || rank >= end_remote_) && !taken_.contains(rank);
  }

  std::unique_ptr<WorkerPool> local_;
  int first_remote_;
  int end_remote_;  // join slots (elastic) from here: local when started again on --resume
  std::map<int, std::int64_t> pids_;
  std::set<int> taken_;  // local slots a joiner holds now (elastic)
};

}  // namespace

std::unique_ptr<WorkerPool> with_remote_ranks(std::unique_ptr<WorkerPool> local, int first_remote,
                                              int end_remote) {
  return std::make_unique<RemotePool>(std::move(local), first_remote, end_remote);
}

}  // namespace dt::roles

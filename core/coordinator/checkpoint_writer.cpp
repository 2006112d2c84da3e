#include "core/coordinator/checkpoint_writer.hpp"

#include "base/error.hpp"

#include <utility>

namespace dt::roles {

CheckpointWriter::CheckpointWriter(std::filesystem::path dir)
    : dir_(std::move(dir)), thread_([this] { run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CheckpointWriter::submit(checkpoint::Checkpoint checkpoint) {
  {
    std::lock_guard lock(mutex_);
    if (waiting_) {
      outcomes_.push_back(
          {waiting_->step(), {}, "a newer checkpoint came before it was written", true});
    }
    waiting_ = std::move(checkpoint);
  }
  changed_.notify_all();
}

std::vector<CheckpointWriter::Outcome> CheckpointWriter::take_outcomes(bool wait) {
  std::unique_lock lock(mutex_);
  if (wait) changed_.wait(lock, [this] { return !waiting_ && !writing_; });
  return std::exchange(outcomes_, {});
}

void CheckpointWriter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stop_ || waiting_; });
    if (!waiting_) return;  // stopped with nothing left to write
    checkpoint::Checkpoint next = std::move(*waiting_);
    waiting_.reset();
    writing_ = true;
    lock.unlock();
    Outcome outcome{next.step(), {}, {}};
    try {
      outcome.path = checkpoint::write(dir_, next);
    } catch (const std::exception& e) {
      outcome.error = e.what();
    }
    lock.lock();
    writing_ = false;
    outcomes_.push_back(std::move(outcome));
    changed_.notify_all();
  }
}

}  // namespace dt::roles

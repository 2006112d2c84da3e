// DecodeThread (decode_thread.hpp): a ring of a few large blocks between the reading thread and
// its owner.

#include "core/data/decode_thread.hpp"

#include "base/error.hpp"
#include "base/signals.hpp"

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <vector>

namespace dt::data::detail {

// The bytes on their way from the reading thread to the owner: a few large buffers that go
// round (free, filled, used, free again), so memory stays at kBlocks x kBlock whatever the
// data's size and each write(2) or parse is of a large block. One producer, one consumer.
class BlockRing {
 public:
  static constexpr std::size_t kBlock = std::size_t{1} << 20;
  static constexpr std::size_t kBlocks = 4;
  struct Block {
    std::vector<char> bytes;
    std::size_t size = 0;  // 0: the end of the data
  };

  BlockRing() {
    for (auto& b : blocks_) {
      b.bytes.resize(kBlock);
      free_.push_back(&b);
    }
  }
  // The producer's next empty block; nullptr once the consumer has stopped.
  [[nodiscard]] Block* take_free() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return stopped_ || !free_.empty(); });
    if (stopped_) return nullptr;
    Block* b = free_.front();
    free_.pop_front();
    return b;
  }
  // A filled block (size 0 at the end), or nullptr for the producer's error.
  void push_filled(Block* block) { put(filled_, block); }
  // The consumer's next block, in order; nullptr when the producer failed. Waits in short
  // slices so that Ctrl-C is seen (a condition variable's wait is not interrupted by it).
  [[nodiscard]] Block* next_filled(const std::filesystem::path& name) {
    std::unique_lock lock(mutex_);
    while (!changed_.wait_for(lock, std::chrono::milliseconds(100),
                              [this] { return !filled_.empty(); })) {
      if (signals::interrupted()) {
        fail<InterruptedError>("interrupted while decompressing {}", name.string());
      }
    }
    Block* b = filled_.front();
    filled_.pop_front();
    return b;
  }
  void give_back(Block* block) { put(free_, block); }
  void stop() {
    {
      const std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    changed_.notify_all();
  }

 private:
  void put(std::deque<Block*>& queue, Block* block) {
    {
      const std::lock_guard lock(mutex_);
      queue.push_back(block);
    }
    changed_.notify_all();
  }

  std::array<Block, kBlocks> blocks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Block*> free_, filled_;
  bool stopped_ = false;
};

DecodeThread::DecodeThread(std::unique_ptr<ByteSource> in, std::filesystem::path name)
    : in_(std::move(in)), name_(std::move(name)), ring_(std::make_unique<BlockRing>()) {
  thread_ = std::jthread([this] {
    try {
      for (;;) {
        BlockRing::Block* block = ring_->take_free();
        if (block == nullptr) return;  // the owner gave up
        if (signals::interrupted()) {
          fail<InterruptedError>("interrupted while decompressing {}", name_.string());
        }
        std::size_t n = 0;
        for (std::size_t k; n < block->bytes.size() &&
                            (k = in_->read(block->bytes.data() + n, block->bytes.size() - n)) > 0;) {
          n += k;
        }
        block->size = n;
        ring_->push_filled(block);
        if (n == 0) return;  // the end, sent as an empty block
      }
    } catch (...) {
      failure_ = std::current_exception();
      ring_->push_filled(nullptr);
    }
  });
}

DecodeThread::~DecodeThread() { stop(); }

void DecodeThread::stop() noexcept {
  ring_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string_view DecodeThread::next() {
  if (held_ != nullptr) {
    ring_->give_back(static_cast<BlockRing::Block*>(held_));
    held_ = nullptr;
  }
  if (ended_) return {};
  BlockRing::Block* block = ring_->next_filled(name_);
  if (block == nullptr) {
    ended_ = true;
    stop();
    std::rethrow_exception(failure_);
  }
  held_ = block;
  if (block->size == 0) ended_ = true;
  return {block->bytes.data(), block->size};
}

std::size_t DecodeThread::read(char* out, std::size_t n) {
  if (left_.empty()) left_ = next();
  const std::size_t k = std::min(n, left_.size());
  std::memcpy(out, left_.data(), k);
  left_.remove_prefix(k);
  return k;
}

}  // namespace dt::data::detail

namespace dt::data {

std::unique_ptr<ByteSource> read_ahead(std::unique_ptr<ByteSource> in,
                                       const std::filesystem::path& name) {
  return std::make_unique<detail::DecodeThread>(std::move(in), name);
}

}  // namespace dt::data

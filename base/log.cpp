#include "base/log.hpp"

#include "base/files.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace dt::log {
namespace {

std::atomic<Level> g_level{Level::kWarn};
std::mutex g_prefix_mutex;
// Never destroyed, like the writer below: its thread may still name the process after exit began.
std::string& g_prefix = *new std::string("disttrain");
thread_local std::string t_prefix;

std::string process_prefix() {
  std::lock_guard lock(g_prefix_mutex);
  return g_prefix;
}

// What may wait for a slow stderr before lines are dropped, and the extra room errors have past
// it (the last words of a failing run).
constexpr std::size_t kQueueBytes = 1 << 20;
constexpr std::size_t kErrorRoom = 64 << 10;

// stderr is written by a thread of its own, so that no other thread ever waits on it. A stderr
// that is a pipe nobody reads fills its 64 KiB, and then write(2) blocks for as long as nobody
// reads: in the thread that answers heartbeats or the one that runs a step, that stopped the run
// (its workers 'lost the coordinator'). Making stderr's file description non-blocking is not the
// way: the description is shared with the parent shell and every process that inherited it,
// which would all start seeing EAGAIN. So callers queue their line (a lock held for a push, never
// for I/O) and this thread writes them in order; past kQueueBytes waiting, lines are dropped and
// counted, and the count is written in their place once stderr takes lines again.
//
// Never destroyed: at exit its thread may still be blocked in write(2) on a pipe nobody reads,
// and the process ends with it (flush() at exit bounds how long exit waits for it). A child
// forked without exec (tests do) has no copy of the thread: it gets a writer of its own.
class StderrWriter {
 public:
  void push(std::string text, bool important) {
    std::unique_lock lock(mu_);
    if (!started_) start();
    if (direct_) {  // no thread could be made (a process or memory limit): write it here
      lock.unlock();
      (void)files::write_fd(STDERR_FILENO, text);
      return;
    }
    if (bytes_ + text.size() > kQueueBytes + (important ? kErrorRoom : 0)) {
      ++dropped_;
      return;
    }
    const std::size_t size = text.size();
    queue_.push_back({std::move(text), dropped_});
    dropped_ = 0;
    bytes_ += size;
    lock.unlock();
    wake_.notify_one();
  }

  bool flush(std::chrono::milliseconds stall) {
    std::unique_lock lock(mu_);
    if (!started_ || direct_) return true;
    if (dropped_ > 0) {  // the count of lines dropped at the very end
      queue_.push_back({std::string(), dropped_});
      dropped_ = 0;
      wake_.notify_one();
    }
    // A flush that gave up already is not waited for again until stderr takes a line.
    if (stalled_ && written_ == stalled_at_) return queue_.empty() && !busy_;
    std::uint64_t seen = written_;
    while (!queue_.empty() || busy_) {
      if (written_done_.wait_for(lock, stall) == std::cv_status::timeout && written_ == seen) {
        stalled_ = true;
        stalled_at_ = written_;
        return false;
      }
      seen = written_;
    }
    return true;
  }

 private:
  struct Entry {
    std::string text;
    std::size_t dropped_before;  // lines dropped just before this one
  };

  void start() {  // under mu_
    started_ = true;
    try {
      std::thread([this] { loop(); }).detach();
    } catch (const std::exception&) {
      direct_ = true;
    }
  }

  void loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      wake_.wait(lock, [this] { return !queue_.empty(); });
      Entry entry = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      if (entry.dropped_before > 0) write_lost(entry.dropped_before);
      (void)files::write_fd(STDERR_FILENO, entry.text);
      lock.lock();
      busy_ = false;
      bytes_ -= entry.text.size();
      ++written_;
      written_done_.notify_all();
    }
  }

  static void write_lost(std::size_t lines) noexcept {
    try {
      (void)files::write_fd(
          STDERR_FILENO,
          fmt::format("[{}] warning: {} log line{} dropped here: standard error was not read "
                      "while {} KiB of lines waited for it\n",
                      process_prefix(), lines, lines == 1 ? " was" : "s were", kQueueBytes >> 10));
    } catch (...) {  // no memory for the line: the count is lost
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;          // the thread: a line was queued
  std::condition_variable written_done_;  // flush(): a line was written
  std::deque<Entry> queue_;
  std::size_t bytes_ = 0;    // of the lines queued or being written
  std::size_t dropped_ = 0;  // lines dropped since the last one queued
  std::uint64_t written_ = 0;
  bool busy_ = false;  // the thread is writing a line
  bool started_ = false;
  bool direct_ = false;
  bool stalled_ = false;
  std::uint64_t stalled_at_ = 0;
};

std::atomic<StderrWriter*> g_writer{nullptr};

StderrWriter& writer() {
  StderrWriter* w = g_writer.load(std::memory_order_acquire);
  if (w == nullptr) {
    auto fresh = std::make_unique<StderrWriter>();
    if (g_writer.compare_exchange_strong(w, fresh.get(), std::memory_order_acq_rel)) {
      w = fresh.release();  // NOLINT: never deleted (see StderrWriter)
    }
  }
  return *w;
}

// At exit, what is queued gets its chance to be written; registered before main, so that this
// runs after the destructors of everything made since (which may log).
const bool g_hooks = [] {
  (void)std::atexit([] {
    if (StderrWriter* w = g_writer.load()) (void)w->flush(kFlushStall);
  });
  (void)::pthread_atfork(nullptr, nullptr, [] { g_writer.store(nullptr); });
  return true;
}();

// A progress line is on the terminal: the next line logged erases it first, or would be
// written after it on the same line.
std::atomic<bool> g_progress_shown{false};
constexpr std::string_view kEraseLine = "\r\x1b[2K";  // carriage return, erase the line

std::string erasing_progress(std::string text) {
  if (g_progress_shown.exchange(false)) text.insert(0, kEraseLine);
  return text;
}

}  // namespace

void set_level(Level level) noexcept { g_level.store(level); }
Level level() noexcept { return g_level.load(); }

void set_prefix(std::string prefix) {
  std::lock_guard lock(g_prefix_mutex);
  g_prefix = std::move(prefix);
}

void set_thread_prefix(std::string prefix) { t_prefix = std::move(prefix); }

void progress(std::string_view line) {
  std::string text(kEraseLine);
  text += line;
  g_progress_shown.store(!line.empty());
  writer().push(std::move(text), false);
}

void write(Level level, std::string_view message) {
  std::string line(1, '[');
  line += t_prefix.empty() ? process_prefix() : t_prefix;
  line += "] ";
  if (level == Level::kError) line += "error: ";
  if (level == Level::kWarn) line += "warning: ";
  line += message;
  line += '\n';
  writer().push(erasing_progress(std::move(line)), level == Level::kError);
}

void plain(std::string_view text) { writer().push(erasing_progress(std::string(text)), true); }

bool flush(std::chrono::milliseconds stall) { return writer().flush(stall); }

}  // namespace dt::log

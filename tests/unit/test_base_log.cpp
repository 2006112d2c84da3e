// The log is written by a thread of its own (base/log.hpp): a stderr that nobody reads never
// blocks the thread that logs, what does not fit the queue is counted where it was dropped, and
// errors still get through.

#include "base/log.hpp"
#include "tests/unit/stderr_capture.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <regex>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;

// fd 2 is the write end of a pipe while this lives; read() takes everything from the read end
// once the pipe is given back.
class StderrPipe {
 public:
  StderrPipe() {
    REQUIRE(dt::log::flush());
    REQUIRE(::pipe(fds_) == 0);
    saved_ = ::dup(STDERR_FILENO);
    ::dup2(fds_[1], STDERR_FILENO);
  }
  ~StderrPipe() { give_back(); }
  StderrPipe(const StderrPipe&) = delete;
  StderrPipe& operator=(const StderrPipe&) = delete;

  // Reads the pipe until the log is written out, then gives fd 2 back; all that came through.
  std::string drain() {
    std::string out;
    std::thread reader([&] {
      char buffer[65536];
      ssize_t n = 0;
      while ((n = ::read(fds_[0], buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<std::size_t>(n));
    });
    // A flush that gave up gives up at once until stderr takes a line: the reader has to start.
    bool flushed = false;
    for (int i = 0; i < 500 && !flushed; ++i) {
      flushed = dt::log::flush();
      if (!flushed) std::this_thread::sleep_for(10ms);
    }
    CHECK(flushed);
    give_back();
    reader.join();
    return out;
  }

 private:
  void give_back() {
    if (saved_ < 0) return;
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    ::close(fds_[1]);  // the reader sees the end once the writer let go of fd 2 too
    saved_ = -1;
  }
  int fds_[2] = {-1, -1};
  int saved_ = -1;
};

}  // namespace

TEST_CASE("log: a stderr that nobody reads never blocks the caller; dropped lines are counted") {
  constexpr int kLines = 40000;  // 4 MB: the 64 KiB pipe and the 1 MiB queue many times over
  const std::string padding(90, 'x');
  std::string out;
  {
    StderrPipe pipe;
    auto logging = std::async(std::launch::async, [&] {
      for (int i = 0; i < kLines; ++i) dt::log::warn("line {} {}", i, padding);
      dt::log::error("last words");
    });
    // Nobody reads the pipe yet: a logger that wrote from the caller would be stuck.
    const bool returned = logging.wait_for(60s) == std::future_status::ready;
    CHECK(returned);
    CHECK_FALSE(dt::log::flush(200ms));  // gives up: stderr takes nothing
    out = pipe.drain();
    logging.wait();
  }
  // The lines that fit come out in order. Where lines were dropped (the queue was full: the
  // writer fills the pipe more slowly than they come, so gaps may open more than once) their
  // count stands in their place; the error has room of its own.
  const std::regex line(R"(\] warning: line (\d+) x+\n|warning: (\d+) log lines? (?:was|were) )"
                        R"(dropped here: standard error was not read while 1024 KiB)");
  int next = 0;
  int seen = 0;
  int gaps = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it) {
    if ((*it)[1].matched) {
      CHECK(std::stoi((*it)[1]) == next);
      ++next;
      ++seen;
    } else {
      next += std::stoi((*it)[2]);
      ++gaps;
    }
  }
  CHECK(gaps >= 1);
  CHECK(seen > 1000);
  CHECK(next == kLines);
  CHECK(out.rfind("error: last words\n") > out.rfind("log lines were dropped here"));
}

TEST_CASE("log: a child forked without exec writes its own lines") {
  dt::test::StderrCapture capture;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dt::log::warn("from the child");
    ::_exit(dt::log::flush(2s) ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(dt::test::count(capture.finish(), "warning: from the child\n") == 1);
}

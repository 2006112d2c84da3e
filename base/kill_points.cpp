#include "base/kill_points.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <map>
#include <mutex>

namespace dt::kill_points {
namespace {

struct State {
  std::mutex mutex;
  std::string role = "coordinator";
  std::string trace;  // file to append first reaches to; empty: none
  std::string kill_role, kill_point, mark;
  long kill_at = 0;   // 0: no kill point
  std::map<std::string, long, std::less<>> counts;
};

State& state() {
  static State s;
  return s;
}

// Whether any point is armed: read from the environment once, at the first reach (a static
// local: thread-safe, whichever thread gets there first).
std::atomic<bool>& armed() {
  static std::atomic<bool> on = [] {
    auto& s = state();
    if (const char* t = std::getenv("DISTTRAIN_TEST_TRACE_POINTS")) s.trace = t;
    if (const char* k = std::getenv("DISTTRAIN_TEST_KILL_POINT")) {
      const std::string spec = k;
      const auto a = spec.find('|');
      const auto b = a == std::string::npos ? a : spec.find('|', a + 1);
      if (b != std::string::npos) {
        s.kill_role = spec.substr(0, a);
        s.kill_point = spec.substr(a + 1, b - a - 1);
        s.kill_at = std::strtol(spec.c_str() + b + 1, nullptr, 10);
      }
    }
    if (const char* m = std::getenv("DISTTRAIN_TEST_KILL_MARK")) s.mark = m;
    return !s.trace.empty() || (s.kill_at > 0 && !s.mark.empty());
  }();
  return on;
}

void append_line(const std::string& file, const std::string& line) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // One write of a short line with O_APPEND: lines of several processes do not interleave.
  [[maybe_unused]] const auto n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace

void set_role(std::string role) {
  auto& s = state();
  const std::lock_guard lock(s.mutex);
  s.role = std::move(role);
}

void reach(std::string_view what, std::string_view name) {
  if (!armed().load(std::memory_order_relaxed)) return;
  std::string point(what);
  point += ' ';
  for (const char c : name) point += (c >= '0' && c <= '9') ? '#' : c;
  auto& s = state();
  const std::lock_guard lock(s.mutex);
  const long n = ++s.counts[point];
  // The first reach, and the 4th of a point reached again and again (a test kills at both).
  if ((n == 1 || n == 4) && !s.trace.empty()) {
    append_line(s.trace, s.role + '|' + point + '|' + std::to_string(n) + '\n');
  }
  if (n != s.kill_at || point != s.kill_point || s.role != s.kill_role || s.mark.empty()) return;
  const int fd = ::open(s.mark.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;  // fired already (this is a replacement), or the mark cannot be made
  ::close(fd);
  std::raise(SIGKILL);
}

}  // namespace dt::kill_points

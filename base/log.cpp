#include "base/log.hpp"

#include "base/files.hpp"

#include <unistd.h>

#include <atomic>
#include <mutex>

namespace dt::log {
namespace {
std::atomic<Level> g_level{Level::kWarn};
std::mutex g_prefix_mutex;
std::string g_prefix = "disttrain";
thread_local std::string t_prefix;
}  // namespace

void set_level(Level level) noexcept { g_level.store(level); }
Level level() noexcept { return g_level.load(); }

void set_prefix(std::string prefix) {
  std::lock_guard lock(g_prefix_mutex);
  g_prefix = std::move(prefix);
}

void set_thread_prefix(std::string prefix) { t_prefix = std::move(prefix); }

void progress(std::string_view line) {
  std::string text = "\r\x1b[2K";  // carriage return, erase the line
  text += line;
  (void)files::write_fd(STDERR_FILENO, text);
}

void write(Level level, std::string_view message) {
  std::string line;
  if (!t_prefix.empty()) {
    line = "[" + t_prefix + "] ";
  } else {
    std::lock_guard lock(g_prefix_mutex);
    line = "[" + g_prefix + "] ";
  }
  if (level == Level::kError) line += "error: ";
  if (level == Level::kWarn) line += "warning: ";
  line += message;
  line += '\n';
  (void)files::write_fd(STDERR_FILENO, line);
}

}  // namespace dt::log

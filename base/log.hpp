#pragma once
// Logging: fmt to stderr, one prefix per process ("[coordinator]", "[worker 2]"), levels set by
// -v/-q. Thread-safe, and no caller ever waits on stderr: lines are queued, in order, for a
// thread that writes them (a stderr pipe that nobody reads once stopped the thread that answers
// heartbeats). Past 1 MiB waiting, lines are dropped and their count written in their place;
// errors have 64 KiB more. At exit, what is queued is written unless stderr has taken nothing for
// kFlushStall. Without a thread (none could be started), lines are written by the caller.

#include <fmt/format.h>

#include <chrono>
#include <string>
#include <string_view>

namespace dt::log {

enum class Level { kQuiet = 0, kError = 1, kWarn = 2, kInfo = 3, kDebug = 4 };

void set_level(Level level) noexcept;
[[nodiscard]] Level level() noexcept;
void set_prefix(std::string prefix);
// Overrides the prefix for the calling thread only (workers running as threads of a run).
void set_thread_prefix(std::string prefix);
void write(Level level, std::string_view message);
// Writes `text` as it is (no prefix; it brings its own newline), with an error's room: the
// command line's last word.
void plain(std::string_view text);
// How long flush() waits for stderr to take a line before it gives up.
inline constexpr std::chrono::milliseconds kFlushStall{5000};
// Waits until every line logged so far is written: before writing to stdout (a terminal or
// `2>&1` shows both in order) and at exit. False once stderr took nothing for `stall` (the lines
// stay queued; a later flush gives up at once until stderr takes a line again).
[[nodiscard]] bool flush(std::chrono::milliseconds stall = kFlushStall);
// Rewrites the current terminal line with `line` ("" clears it): a progress display.
void progress(std::string_view line);

template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  if (level() >= Level::kError) write(Level::kError, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (level() >= Level::kWarn) write(Level::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
// Shown wherever warnings are (not under --quiet) but without the "warning:" label: what the
// user needs to see that is not wrong (the address workers join).
template <class... Args>
void notice(fmt::format_string<Args...> f, Args&&... args) {
  if (level() >= Level::kWarn) write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}

template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (level() >= Level::kInfo) write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (level() >= Level::kDebug) write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace dt::log

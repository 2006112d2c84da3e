#pragma once
// Logging: fmt to stderr, one prefix per process ("[coordinator]", "[worker 2]"), levels set by
// -v/-q. Thread-safe: each line is written with one write(2).

#include <fmt/format.h>

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

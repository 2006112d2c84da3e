#include "core/coordinator/progress.hpp"

#include "base/error.hpp"
#include "base/log.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>

namespace dt::roles::progress {
namespace {

std::atomic<Form> g_form{Form::kOff};
bool g_shown = false;  // the terminal line shows something (coordinator thread only)

constexpr int kBarWidth = 20;

// The terminal's width, so that the line never wraps (a wrapped line is not rewritten in place
// by a carriage return: every redraw would add a line).
std::size_t terminal_columns() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

void show(std::string line) {
  const std::size_t width = terminal_columns();
  if (line.size() >= width) line.resize(width - 1);
  log::progress(line);
  g_shown = !line.empty();
}

std::string rate_text(double per_second) {
  return per_second >= 100 ? fmt::format("{:.0f}", per_second) : fmt::format("{:.3g}", per_second);
}

}  // namespace

Form choose_form(int log_level) {
  if (log_level != static_cast<int>(log::Level::kWarn)) return Form::kOff;
  if (const char* forced = std::getenv("DISTTRAIN_PROGRESS"); forced != nullptr && *forced) {
    const std::string_view v(forced);
    if (v == "terminal") return Form::kTerminal;
    if (v == "plain") return Form::kPlain;
    if (v == "off") return Form::kOff;
    fail<UsageError>("DISTTRAIN_PROGRESS is '{}'; expected terminal, plain or off (or unset it: "
                     "a terminal on stderr gets the live line, anything else the plain lines)",
                     v);
  }
  return ::isatty(STDERR_FILENO) == 1 ? Form::kTerminal : Form::kPlain;
}

void set_form(Form form) noexcept { g_form.store(form); }
Form form() noexcept { return g_form.load(); }

void phase(std::string_view what) {
  if (form() != Form::kTerminal) return;
  show(fmt::format("{} ...", what));
}

void clear() {
  if (form() != Form::kTerminal || !g_shown) return;
  log::progress("");
  g_shown = false;
}

std::string clock_text(double seconds) {
  const auto s = static_cast<std::int64_t>(std::max(0.0, std::round(seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string row_figures(const LogRow& row) {
  std::string out = fmt::format(" loss={:.4g}", row.train_loss);
  if (row.validation_loss) out += fmt::format(" val_loss={:.4g}", *row.validation_loss);
  if (row.validation_metric) {
    // Classification rows carry a log loss; regression rows' metric is the mse.
    out += fmt::format(" {}={:.4g}", row.validation_log_loss ? "val_acc" : "val_mse",
                       *row.validation_metric);
  }
  if (row.validation_auc) out += fmt::format(" val_auc={:.4g}", *row.validation_auc);
  return out;
}

TrainingLine::TrainingLine() : form_(form()) {}

std::optional<double> TrainingLine::rate(std::uint64_t step, Clock::time_point now) const {
  const double seconds = std::chrono::duration<double>(now - first_time_).count();
  if (!started_ || step <= first_step_ || seconds <= 0) return std::nullopt;
  return static_cast<double>(step - first_step_) / seconds;
}

void TrainingLine::step(std::uint64_t step, std::uint64_t total, double elapsed_seconds) {
  if (form_ == Form::kOff) return;
  const auto now = Clock::now();
  if (!started_) {
    // The rate counts from the step before the first one seen (a resumed run's first step
    // is not 1), at the time training started.
    started_ = true;
    first_step_ = step > 0 ? step - 1 : 0;
    first_time_ = now;
  }
  if (form_ != Form::kTerminal) return;
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(1000 / kRedrawsPerSecond)) return;
  draw(step, total, elapsed_seconds, now);
}

void TrainingLine::draw(std::uint64_t step, std::uint64_t total, double elapsed_seconds,
                        Clock::time_point now) {
  const double done = total == 0 ? 1.0 : std::min(1.0, static_cast<double>(step) /
                                                           static_cast<double>(total));
  const int full = static_cast<int>(done * kBarWidth);
  std::string bar(static_cast<std::size_t>(full), '=');
  if (full < kBarWidth) bar += '>';
  bar.resize(kBarWidth, ' ');
  std::string line = fmt::format("[{}] {:3.0f}% {}/{}", bar, done * 100, step, total);
  if (const auto r = rate(step, now)) {
    line += fmt::format(" {} steps/s {} ETA {}", rate_text(*r), clock_text(elapsed_seconds),
                        clock_text(static_cast<double>(total - std::min(step, total)) / *r));
  } else {
    line += fmt::format(" {} ETA --:--", clock_text(elapsed_seconds));
  }
  line += losses_;
  show(std::move(line));
  drawn_ = true;
  last_draw_ = now;
}

void TrainingLine::row(const LogRow& row, std::uint64_t total, double elapsed_seconds, bool last) {
  if (form_ == Form::kOff) return;
  const auto now = Clock::now();
  if (form_ == Form::kTerminal) {
    losses_ = row_figures(row);
    if (last) {
      clear();
    } else if (!drawn_ || now - last_draw_ >= std::chrono::milliseconds(1000 / kRedrawsPerSecond)) {
      draw(row.step, total, elapsed_seconds, now);
    }
    return;
  }
  if (!last && printed_ &&
      now - last_plain_ < std::chrono::milliseconds(1000 / kPlainLinesPerSecond)) {
    return;
  }
  std::string line = fmt::format("[step {}/{} epoch {:.2f}]{}", row.step, total, row.epoch,
                                 row_figures(row));
  if (const auto r = rate(row.step, now)) line += fmt::format(" {} steps/s", rate_text(*r));
  line += '\n';
  log::plain(line);
  printed_ = true;
  last_plain_ = now;
}

}  // namespace dt::roles::progress

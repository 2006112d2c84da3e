#pragma once
// What a run shows of itself on stderr while it trains (never on stdout, which is --json's and
// predict's). Three forms, chosen once by `disttrain run` (choose_form):
//   terminal: one live line rewritten in place (log::progress): a phase while data loads and
//             workers start, then a bar, percent, steps/s, elapsed, ETA and the latest losses
//             and validation metric; redrawn at most kRedrawsPerSecond times a second;
//   plain:    stderr is a file or a pipe (CI logs): one line per log step,
//             "[step 400/8442 epoch 1.90] loss=0.0687 val_loss=0.0665 val_acc=0.97 3120 steps/s",
//             at most kPlainLinesPerSecond a second (the last row always);
//   off:      -q, or -v (whose info lines say the same), or a process that never chose.
// DISTTRAIN_PROGRESS=terminal|plain|off overrides the choice by stderr (tests, and a terminal
// that wants the plain lines). Coordinator thread only, apart from the form, set before
// anything runs.

#include "core/coordinator/result.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dt::roles::progress {

enum class Form { kOff, kTerminal, kPlain };

inline constexpr int kRedrawsPerSecond = 4;
inline constexpr int kPlainLinesPerSecond = 2;

// The form for this process at `log_level` (log::Level as an int): off unless the level is the
// default; then terminal when stderr is one, else plain; DISTTRAIN_PROGRESS wins over stderr.
// Throws UsageError for an unknown DISTTRAIN_PROGRESS value.
[[nodiscard]] Form choose_form(int log_level);
void set_form(Form form) noexcept;
[[nodiscard]] Form form() noexcept;

// Terminal form: shows what the run is doing before training ("reading data", "starting 4
// workers"); nothing in the other forms.
void phase(std::string_view what);
// Terminal form: erases the live line (before the run's last words on stdout or stderr).
void clear();

// The training line, fed by the session at every step and every log row.
class TrainingLine {
 public:
  TrainingLine();
  // Every step (a clock read when nothing is due): the terminal line's bar and rate.
  void step(std::uint64_t step, std::uint64_t total, double elapsed_seconds);
  // Every log row: its losses for the terminal line, and a plain line when one is due (`last`:
  // the run's last row, always printed).
  void row(const LogRow& row, std::uint64_t total, double elapsed_seconds, bool last);

 private:
  using Clock = std::chrono::steady_clock;
  [[nodiscard]] std::optional<double> rate(std::uint64_t step, Clock::time_point now) const;
  void draw(std::uint64_t step, std::uint64_t total, double elapsed_seconds, Clock::time_point now);

  Form form_;
  bool started_ = false;
  std::uint64_t first_step_ = 0;  // the step and time the rate counts from
  Clock::time_point first_time_;
  Clock::time_point last_draw_;
  Clock::time_point last_plain_;
  bool drawn_ = false;
  bool printed_ = false;
  std::string losses_;  // the latest row's, for the terminal line
};

// " loss=0.0687 val_loss=0.0665 val_acc=0.97": a row's loss and validation figures (accuracy or
// mse, and AUC for binary models) as the plain line shows them.
[[nodiscard]] std::string row_figures(const LogRow& row);
// "1:02:03" or "2:03".
[[nodiscard]] std::string clock_text(double seconds);

}  // namespace dt::roles::progress

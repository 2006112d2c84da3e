// config: training.lr_schedule, training.clip_norm and the adamw and rmsprop keys: defaults,
// values, the to_yaml round trip and each error's exact text.

#include <doctest/doctest.h>

#include "core/config/config.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <fmt/format.h>

#include <string>

using namespace dt::config;

namespace {

// A config whose line 4 is `  <line>` inside training.
std::string training_yaml(const std::string& lines) {
  return "version: 1\ndata: {path: a.csv}\ntraining:\n" + lines;
}

std::string error_of(const std::string& text) {
  return dt::test::message_of<dt::ConfigError>([&] { (void)dt::test::parse_text(text); });
}

}  // namespace

TEST_CASE("config controls: the defaults are a constant lr and no clipping") {
  const Config c = dt::test::parse_text(training_yaml("  epochs: 2\n"));
  CHECK(c.training.optimizer.schedule.type == LrScheduleType::kConstant);
  CHECK(c.training.optimizer.schedule.warmup_steps == 0);
  CHECK(c.training.optimizer.clip_norm == 0.0);
  CHECK(to_yaml(c).find("lr_schedule") == std::string::npos);
  CHECK(to_yaml(c).find("clip_norm") == std::string::npos);
}

TEST_CASE("config controls: schedules, clip_norm, adamw and rmsprop read back from to_yaml") {
  for (const char* lines :
       {"  optimizer: {type: adamw, lr: 0.01, weight_decay: 0.1}\n"
        "  lr_schedule: {type: cosine, min_lr: 0.001, warmup_steps: 5, warmup_start: 0.1}\n"
        "  clip_norm: 2.5\n",
        "  optimizer: {type: rmsprop, alpha: 0.9, momentum: 0.5, centered: true}\n"
        "  lr_schedule: {type: step, step_size: 10, gamma: 0.5}\n",
        "  lr_schedule: {type: exponential, gamma: 0.99}\n",
        "  lr_schedule: {type: cosine, t_max: 100}\n"}) {
    CAPTURE(lines);
    const Config c = dt::test::parse_text(training_yaml(lines));
    const Config again = dt::test::parse_text(to_yaml(c));
    CHECK(to_yaml(again) == to_yaml(c));
  }
  const Config c = dt::test::parse_text(training_yaml(
      "  optimizer: {type: rmsprop, alpha: 0.9, momentum: 0.5, centered: true}\n"
      "  lr_schedule: {type: step, step_size: 10}\n  clip_norm: 1\n"));
  const auto& o = c.training.optimizer;
  CHECK(o.type == OptimizerType::kRmsprop);
  CHECK(o.rms_alpha == 0.9);
  CHECK(o.momentum == 0.5);
  CHECK(o.centered);
  CHECK(o.epsilon == 1e-8);
  CHECK(o.schedule.type == LrScheduleType::kStep);
  CHECK(o.schedule.step_size == 10);
  CHECK(o.schedule.gamma == 0.1);
  CHECK(o.clip_norm == 1.0);
  const Config w = dt::test::parse_text(training_yaml("  optimizer: {type: adamw}\n"));
  CHECK(w.training.optimizer.weight_decay == 0.01);
  // With several parameter servers, sync and async (refused before the servers exchanged norms).
  for (const char* mode : {"gradients", "async"}) {
    CAPTURE(mode);
    const Config s = dt::test::parse_text(
        fmt::format("version: 1\ndata: {{path: a.csv}}\naggregation: {{mode: {}, servers: 2}}\n"
                    "training: {{clip_norm: 1}}\n", mode));
    CHECK(s.aggregation.servers == 2);
    CHECK(s.training.optimizer.clip_norm == 1.0);
  }
}

TEST_CASE("config controls: each error names the key and what to write") {
  const std::pair<std::string, std::string> cases[] = {
      {training_yaml("  lr_schedule: {type: step}\n"),
       "missing required key 'training.lr_schedule.step_size' (decay every this many steps, "
       "e.g. 1000)"},
      {training_yaml("  lr_schedule: {type: exponential}\n"),
       "missing required key 'training.lr_schedule.gamma' (the factor per step, e.g. 0.999)"},
      {training_yaml("  lr_schedule: {type: cosine, step_size: 3}\n"),
       "training.lr_schedule.step_size: applies to step only, but training.lr_schedule.type "
       "is cosine; remove it"},
      {training_yaml("  lr_schedule: {type: step, step_size: 3, min_lr: 0.1}\n"),
       "training.lr_schedule.min_lr: applies to cosine only, but training.lr_schedule.type is "
       "step; remove it"},
      {training_yaml("  optimizer: {lr: 0.1}\n  lr_schedule: {type: cosine, min_lr: 0.5}\n"),
       "training.lr_schedule.min_lr: 0.5 is above training.optimizer.lr (0.1): a cosine "
       "schedule decays from lr to min_lr; lower min_lr"},
      {training_yaml("  lr_schedule: {warmup_steps: 3, warmup_start: 2}\n"),
       "training.lr_schedule.warmup_start: expected a number in [0, 1] (a fraction of lr), "
       "got 2"},
      {training_yaml("  lr_schedule: {type: linear}\n"),
       "training.lr_schedule.type: unknown value 'linear'"},
      {training_yaml("  clip_norm: 0\n"),
       "training.clip_norm: expected a number greater than 0, got 0"},
      {training_yaml("  optimizer: {type: adam, weight_decay: 0.1}\n"),
       "training.optimizer.weight_decay: applies to adamw only, but training.optimizer.type is "
       "adam; remove it"},
      {training_yaml("  optimizer: {type: adamw, centered: true}\n"),
       "training.optimizer.centered: applies to rmsprop only"},
      {training_yaml("  optimizer: {type: rmsprop, alpha: 1}\n"),
       "training.optimizer.alpha: expected a number in [0, 1), got 1"},
  };
  for (const auto& [text, expected] : cases) {
    CAPTURE(text);
    const std::string message = error_of(text);
    CHECK(message.find(expected) != std::string::npos);
    if (message.find(expected) == std::string::npos) MESSAGE(message);
  }
}

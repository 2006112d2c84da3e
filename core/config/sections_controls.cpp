// training.lr_schedule and training.clip_norm: the learning rate over the steps and the clipping
// of the gradient's global norm. Both are kept in OptimizerConfig, which every place that makes
// an optimizer is given (core/models/optim_controls.cpp applies them).

#include "core/config/internal.hpp"

#include <fmt/format.h>

#include <climits>

namespace dt::config::detail {

namespace {

struct ScheduleKey {
  const char* key;
  const char* owners;  // as the message says it
  bool (*applies)(LrScheduleType);
};

constexpr ScheduleKey kScheduleKeys[] = {
    {"step_size", "step", [](LrScheduleType t) { return t == LrScheduleType::kStep; }},
    {"gamma", "step and exponential",
     [](LrScheduleType t) {
       return t == LrScheduleType::kStep || t == LrScheduleType::kExponential;
     }},
    {"min_lr", "cosine", [](LrScheduleType t) { return t == LrScheduleType::kCosine; }},
    {"t_max", "cosine", [](LrScheduleType t) { return t == LrScheduleType::kCosine; }},
};

}  // namespace

void parse_training_controls(const Section& training, OptimizerConfig& c) {
  if (training.has("clip_norm")) c.clip_norm = training.number("clip_norm", 0.0, Range::kPositive);
  const Section s = training.section("lr_schedule");
  LrScheduleConfig& l = c.schedule;
  l.type = s.choice("type", l.type, kLrScheduleTypes);
  for (const ScheduleKey& k : kScheduleKeys) {
    if (s.has(k.key) && !k.applies(l.type)) {
      s.fail_not_applicable(k.key, k.owners, "training.lr_schedule.type", name_of(l.type));
    }
  }
  switch (l.type) {
    case LrScheduleType::kConstant:
      break;
    case LrScheduleType::kStep:
      if (!s.has("step_size")) s.fail_missing("step_size", "decay every this many steps, e.g. 1000");
      l.step_size = static_cast<std::uint64_t>(s.integer("step_size", 1, 1, INT64_MAX));
      l.gamma = s.number("gamma", l.gamma, Range::kPositive);
      break;
    case LrScheduleType::kExponential:
      if (!s.has("gamma")) s.fail_missing("gamma", "the factor per step, e.g. 0.999");
      l.gamma = s.number("gamma", l.gamma, Range::kPositive);
      break;
    case LrScheduleType::kCosine:
      l.min_lr = s.number("min_lr", l.min_lr, Range::kNonNegative);
      l.t_max = static_cast<std::uint64_t>(s.integer("t_max", 0, 1, INT64_MAX));
      if (l.min_lr > c.lr) {
        s.fail("min_lr", fmt::format("{} is above training.optimizer.lr ({}): a cosine schedule "
                                     "decays from lr to min_lr; lower min_lr",
                                     l.min_lr, c.lr));
      }
      break;
  }
  l.warmup_steps = static_cast<std::uint64_t>(s.integer("warmup_steps", 0, 0, INT64_MAX));

  l.warmup_start = s.number("warmup_start", l.warmup_start, Range::kNonNegative);
  if (l.warmup_start > 1.0) {
    s.fail("warmup_start",
           fmt::format("expected a number in [0, 1] (a fraction of lr), got {}", l.warmup_start));
  }
}

}  // namespace dt::config::detail

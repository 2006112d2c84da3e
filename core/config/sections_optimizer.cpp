// training.optimizer: the update rule and the keys each rule takes. A key of another rule is an
// error that names the rule it belongs to, so a typo in `type` does not silently drop a setting.

#include "core/config/internal.hpp"

#include <fmt/format.h>

#include <string_view>

namespace dt::config::detail {

namespace {

// The optimizer-specific keys and the rules that take them ("lr" and "type" apply to all).
struct OwnedKey {
  const char* key;
  const char* owners;  // as the message says it: "adam and adagrad"
  bool (*applies)(OptimizerType);
};

constexpr OwnedKey kOwnedKeys[] = {
    {"momentum", "sgd and rmsprop",
     [](OptimizerType t) { return t == OptimizerType::kSgd || t == OptimizerType::kRmsprop; }},
    {"beta1", "adam and adamw",
     [](OptimizerType t) { return t == OptimizerType::kAdam || t == OptimizerType::kAdamw; }},
    {"beta2", "adam and adamw",
     [](OptimizerType t) { return t == OptimizerType::kAdam || t == OptimizerType::kAdamw; }},
    {"epsilon", "adam, adamw, adagrad and rmsprop",
     [](OptimizerType t) { return t != OptimizerType::kSgd && t != OptimizerType::kFtrl; }},
    {"weight_decay", "adamw", [](OptimizerType t) { return t == OptimizerType::kAdamw; }},
    {"centered", "rmsprop", [](OptimizerType t) { return t == OptimizerType::kRmsprop; }},
    {"initial_accumulator_value", "adagrad",
     [](OptimizerType t) { return t == OptimizerType::kAdagrad; }},
    {"alpha", "ftrl and rmsprop",
     [](OptimizerType t) { return t == OptimizerType::kFtrl || t == OptimizerType::kRmsprop; }},
    {"beta", "ftrl", [](OptimizerType t) { return t == OptimizerType::kFtrl; }},
    {"l1", "ftrl", [](OptimizerType t) { return t == OptimizerType::kFtrl; }},
    {"l2", "ftrl", [](OptimizerType t) { return t == OptimizerType::kFtrl; }},
};

}  // namespace

OptimizerConfig parse_optimizer(const Section& s) {
  OptimizerConfig c;
  c.type = s.choice("type", c.type, kOptimizerTypes);
  const char* type = name_of(c.type);
  for (const OwnedKey& k : kOwnedKeys) {
    if (s.has(k.key) && !k.applies(c.type)) {
      s.fail_not_applicable(k.key, k.owners, "training.optimizer.type", type);
    }
  }
  switch (c.type) {
    case OptimizerType::kSgd:
      c.momentum = s.number("momentum", c.momentum, Range::kFraction);
      break;
    case OptimizerType::kAdam:
    case OptimizerType::kAdamw:
      c.beta1 = s.number("beta1", c.beta1, Range::kFraction);
      c.beta2 = s.number("beta2", c.beta2, Range::kFraction);
      c.epsilon = s.number("epsilon", c.epsilon, Range::kPositive);
      if (c.type == OptimizerType::kAdamw) {
        c.weight_decay = s.number("weight_decay", c.weight_decay, Range::kNonNegative);
      }
      break;
    case OptimizerType::kRmsprop:
      // alpha is PyTorch's name of the smoothing constant (ftrl's alpha is its lr).
      c.rms_alpha = s.number("alpha", c.rms_alpha, Range::kFraction);
      c.epsilon = s.number("epsilon", c.epsilon, Range::kPositive);
      c.momentum = s.number("momentum", c.momentum, Range::kFraction);
      c.centered = s.boolean("centered", c.centered);
      break;
    case OptimizerType::kAdagrad:
      c.epsilon = s.number("epsilon", kAdagradEpsilon, Range::kPositive);
      c.initial_accumulator_value =
          s.number("initial_accumulator_value", c.initial_accumulator_value, Range::kNonNegative);
      break;
    case OptimizerType::kFtrl:
      // alpha is the paper's name of the learning rate; lr says the same for every rule.
      if (s.has("alpha") && s.has("lr")) {
        s.fail("alpha", "is ftrl's name for lr, which is given too; keep only one of them");
      }
      c.lr = s.number("alpha", c.lr, Range::kPositive);
      c.beta = s.number("beta", c.beta, Range::kNonNegative);
      c.l1 = s.number("l1", c.l1, Range::kNonNegative);
      c.l2 = s.number("l2", c.l2, Range::kNonNegative);
      break;
  }
  c.lr = s.number("lr", c.lr, Range::kPositive);
  return c;
}

void check_optimizer(const Section& root, const Config& c) {
  if (c.training.optimizer.type != OptimizerType::kFtrl) return;
  if (c.aggregation.mode == AggregationMode::kAsync && c.aggregation.async.staleness_lr) {
    root.section("aggregation")
        .section("async")
        .fail("staleness_lr",
              "true with training.optimizer.type ftrl would not damp anything: FTRL computes "
              "each weight from its accumulated z, so a step scaled down after it is undone at "
              "the weight's next update; remove it and bound staleness with "
              "aggregation.async.max_staleness");
  }
  if (c.aggregation.mode == AggregationMode::kParameters &&
      c.aggregation.parameters.optimizer_state == OptimizerState::kKeep) {
    root.section("aggregation")
        .section("parameters")
        .fail("optimizer_state",
              "keep with training.optimizer.type ftrl would undo every merge: FTRL computes each "
              "weight from its own accumulated z, not from the merged weight; use "
              "optimizer_state: reset (each round's FTRL starts from the merged weights)");
  }
}

}  // namespace dt::config::detail

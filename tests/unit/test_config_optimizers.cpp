// config: training.optimizer with adagrad and ftrl: their keys and defaults, the to_yaml round
// trip, and the errors (a key of another rule, a bad value, ftrl with a kept state).

#include <doctest/doctest.h>

#include "core/config/config.hpp"
#include "base/error.hpp"
#include "tests/unit/harness.hpp"

#include <string>

using namespace dt::config;

namespace {

// A config whose line 4 is `    <line>` inside training.optimizer.
std::string optimizer_yaml(const std::string& lines) {
  return "version: 1\ndata: {path: a.csv}\ntraining:\n  optimizer:\n" + lines;
}

std::string optimizer_error(const std::string& text) {
  return dt::test::message_of<dt::ConfigError>([&] { (void)dt::test::parse_text(text); });
}

}  // namespace

TEST_CASE("config optimizers: adagrad keys and PyTorch's defaults") {
  const Config d = dt::test::parse_text(optimizer_yaml("    type: adagrad\n"));
  CHECK(d.training.optimizer.type == OptimizerType::kAdagrad);
  CHECK(d.training.optimizer.lr == 0.05);
  CHECK(d.training.optimizer.epsilon == 1e-10);
  CHECK(d.training.optimizer.initial_accumulator_value == 0.0);
  const Config c = dt::test::parse_text(optimizer_yaml(
      "    type: adagrad\n    lr: 0.3\n    epsilon: 1e-6\n    initial_accumulator_value: 0.1\n"));
  CHECK(c.training.optimizer.lr == 0.3);
  CHECK(c.training.optimizer.epsilon == 1e-6);
  CHECK(c.training.optimizer.initial_accumulator_value == 0.1);
}

TEST_CASE("config optimizers: ftrl keys, the paper's beta and alpha as lr") {
  const Config d = dt::test::parse_text(optimizer_yaml("    type: ftrl\n"));
  CHECK(d.training.optimizer.type == OptimizerType::kFtrl);
  CHECK(d.training.optimizer.lr == 0.05);
  CHECK(d.training.optimizer.beta == 1.0);
  CHECK(d.training.optimizer.l1 == 0.0);
  CHECK(d.training.optimizer.l2 == 0.0);
  const Config c = dt::test::parse_text(
      optimizer_yaml("    type: ftrl\n    alpha: 0.2\n    beta: 0.5\n    l1: 1.5\n    l2: 0.25\n"));
  CHECK(c.training.optimizer.lr == 0.2);
  CHECK(c.training.optimizer.beta == 0.5);
  CHECK(c.training.optimizer.l1 == 1.5);
  CHECK(c.training.optimizer.l2 == 0.25);
  const Config by_lr = dt::test::parse_text(optimizer_yaml("    type: ftrl\n    lr: 0.4\n"));
  CHECK(by_lr.training.optimizer.lr == 0.4);
  // --set training.optimizer.lr works for every rule, ftrl too.
  const Config set = dt::test::parse_text(optimizer_yaml("    type: ftrl\n"),
                                          {parse_override("training.optimizer.lr=0.7")});
  CHECK(set.training.optimizer.lr == 0.7);
}

TEST_CASE("config optimizers: to_yaml writes each rule's keys and reads back the same") {
  for (const char* lines :
       {"    type: adagrad\n    lr: 0.3\n    initial_accumulator_value: 0.1\n",
        "    type: ftrl\n    lr: 0.2\n    beta: 0.5\n    l1: 1.5\n    l2: 0.25\n"}) {
    CAPTURE(lines);
    const Config c = dt::test::parse_text(optimizer_yaml(lines));
    const std::string yaml = to_yaml(c);
    const Config again = parse(yaml, "resolved.yaml", "/");
    CHECK(to_yaml(again) == yaml);
    CHECK(again.training.optimizer.type == c.training.optimizer.type);
    CHECK(again.training.optimizer.lr == c.training.optimizer.lr);
    CHECK(again.training.optimizer.epsilon == c.training.optimizer.epsilon);
    CHECK(again.training.optimizer.initial_accumulator_value ==
          c.training.optimizer.initial_accumulator_value);
    CHECK(again.training.optimizer.beta == c.training.optimizer.beta);
    CHECK(again.training.optimizer.l1 == c.training.optimizer.l1);
    CHECK(again.training.optimizer.l2 == c.training.optimizer.l2);
  }
  const Config ftrl = dt::test::parse_text(optimizer_yaml("    type: ftrl\n    lr: 0.2\n"));
  CHECK(to_yaml(ftrl).find("    alpha: 0.2\n    beta: 1\n    l1: 0\n    l2: 0\n") !=
        std::string::npos);
}

TEST_CASE("config optimizers: each error names the key, the rule and what to write") {
  const std::pair<std::string, std::string> cases[] = {
      {optimizer_yaml("    type: adagrad\n    momentum: 0.9\n"),
       "test.yaml:6:15: training.optimizer.momentum: applies to sgd and rmsprop only, but "
       "training.optimizer.type is adagrad; remove it"},
      {optimizer_yaml("    type: adam\n    l1: 0.1\n"),
       "test.yaml:6:9: training.optimizer.l1: applies to ftrl only, but "
       "training.optimizer.type is adam; remove it"},
      {optimizer_yaml("    alpha: 0.1\n"),
       "test.yaml:5:12: training.optimizer.alpha: applies to ftrl and rmsprop only, but "
       "training.optimizer.type is sgd; remove it"},
      {optimizer_yaml("    type: ftrl\n    epsilon: 1e-8\n"),
       "test.yaml:6:14: training.optimizer.epsilon: applies to adam, adamw, adagrad and rmsprop only, "
       "but training.optimizer.type is ftrl; remove it"},
      {optimizer_yaml("    type: adagrad\n    beta: 1\n"),
       "test.yaml:6:11: training.optimizer.beta: applies to ftrl only, but "
       "training.optimizer.type is adagrad; remove it"},
      {optimizer_yaml("    type: ftrl\n    lr: 0.1\n    alpha: 0.1\n"),
       "test.yaml:7:12: training.optimizer.alpha: is ftrl's name for lr, which is "
       "given too; keep only one of them"},
      {optimizer_yaml("    type: ftrl\n    l1: -1\n"),
       "test.yaml:6:9: training.optimizer.l1: expected a non-negative number, got -1"},
      {optimizer_yaml("    type: ftrl\n    alpha: 0\n"),
       "test.yaml:6:12: training.optimizer.alpha: expected a number greater than 0, "
       "got 0"},
      {optimizer_yaml("    type: ftrl\n    beta: -0.5\n"),
       "test.yaml:6:11: training.optimizer.beta: expected a non-negative number, got "
       "-0.5"},
      {optimizer_yaml("    type: adagrad\n    initial_accumulator_value: -0.1\n"),
       "test.yaml:6:32: training.optimizer.initial_accumulator_value: expected a "
       "non-negative number, got -0.1"},
      {optimizer_yaml("    type: adagrad\n    epsilon: 0\n"),
       "test.yaml:6:14: training.optimizer.epsilon: expected a number greater than 0, "
       "got 0"},
      {optimizer_yaml("    type: ftrls\n"),
       "test.yaml:5:11: training.optimizer.type: unknown value 'ftrls' (expected sgd, "
       "adam, adagrad, ftrl, adamw or rmsprop; did you mean 'ftrl'?)"},
      {optimizer_yaml("    type: ftrl\naggregation:\n  mode: parameters\n  parameters:\n"
                      "    optimizer_state: keep\n"),
       "test.yaml:9:22: aggregation.parameters.optimizer_state: keep with "
       "training.optimizer.type ftrl would undo every merge: FTRL computes each "
       "weight from its own accumulated z, not from the merged weight; use "
       "optimizer_state: reset (each round's FTRL starts from the merged weights)"},
      {optimizer_yaml("    type: ftrl\naggregation:\n  mode: async\n  async:\n"
                      "    staleness_lr: true\n"),
       "test.yaml:9:19: aggregation.async.staleness_lr: true with "
       "training.optimizer.type ftrl would not damp anything: FTRL computes each "
       "weight from its accumulated z, so a step scaled down after it is undone at "
       "the weight's next update; remove it and bound staleness with "
       "aggregation.async.max_staleness"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.first);
    CHECK(optimizer_error(c.first) == c.second);
  }
  // ftrl with a reset state (the default) in parameters mode is fine.
  CHECK(dt::test::parse_text(optimizer_yaml("    type: ftrl\naggregation: {mode: parameters}\n"))
            .training.optimizer.type == OptimizerType::kFtrl);
}

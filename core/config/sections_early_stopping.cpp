// training.early_stopping: the metric watched on the validation split, how many checks without
// improvement end training (patience), and what counts as an improvement (min_delta).

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "core/config/internal.hpp"
#include "base/text.hpp"

namespace dt::config::detail {
namespace {

// The metrics each task has at a log step's validation pass (core/coordinator/evaluate.cpp).
std::vector<std::string> metrics_of(Task task) {
  switch (task) {
    case Task::kRegression:
      return {"val_loss", "val_mse"};
    case Task::kBinary:
      return {"val_loss", "val_acc", "val_auc", "val_log_loss"};
    case Task::kMulticlass:
      return {"val_loss", "val_acc", "val_log_loss"};
  }
  return {"val_loss"};
}

const std::vector<std::string>& all_metrics() {
  static const std::vector<std::string> all{"val_loss", "val_acc", "val_auc", "val_log_loss",
                                            "val_mse"};
  return all;
}

}  // namespace

EarlyStoppingConfig parse_early_stopping(const Section& s) {
  EarlyStoppingConfig c;
  c.metric = s.string("metric", c.metric);
  const auto& all = all_metrics();
  if (std::find(all.begin(), all.end(), c.metric) == all.end()) {
    s.fail("metric", fmt::format("expected one of {}, got '{}'", fmt::join(all, ", "), c.metric));
  }
  c.patience = to_int(s.integer("patience", c.patience, 1, INT_MAX));
  c.min_delta = s.number("min_delta", c.min_delta, Range::kNonNegative);
  return c;
}

void check_early_stopping(const Section& root, const Config& c) {
  if (!c.training.early_stopping) return;
  const Section s = root.section("training").section("early_stopping");
  if (c.data.validation_fraction <= 0) {
    s.fail_here("watches a metric on the validation split, but data.validation is 0; set "
                "data.validation (e.g. 0.1: the rows held out for it), or remove "
                "training.early_stopping");
  }
  const Task task = task_of(c.model);
  const auto mine = metrics_of(task);
  const std::string& metric = c.training.early_stopping->metric;
  if (std::find(mine.begin(), mine.end(), metric) == mine.end()) {
    s.fail("metric", fmt::format("{} is not measured for a {} model (task {}); use one of {}",
                                 metric, name_of(c.model.type), name_of(task),
                                 fmt::join(mine, ", ")));
  }
}

}  // namespace dt::config::detail

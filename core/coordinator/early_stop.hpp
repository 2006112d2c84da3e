#pragma once
// Early stopping (training.early_stopping): each log step's validation pass is a check of the
// configured metric; the parameters of the best check are kept, and once `patience` checks in a
// row have not beaten the best by more than min_delta, training stops (the modes end their
// loop on stopped()). Checks count as Keras's EarlyStopping does: the wait
// restarts at every improvement. A check whose metric is missing (an AUC of held-out rows of one
// class) or not a number is not an improvement. Owned by the session's Evaluation (evaluate.hpp);
// coordinator thread only.

#include "core/config/config.hpp"
#include "core/coordinator/result.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::roles {

class EarlyStopper {
 public:
  explicit EarlyStopper(const std::optional<config::EarlyStoppingConfig>& config);

  [[nodiscard]] bool enabled() const noexcept { return config_.has_value(); }
  // One check: the validation metrics at `step` and the parameters they were measured on.
  void check(std::uint64_t step, const std::optional<Metrics>& validation,
             const std::vector<double>& params);
  // Patience ran out at some check: no more steps.
  [[nodiscard]] bool stopped() const noexcept { return stopped_at_.has_value(); }
  // After training: `params` becomes the best check's (unchanged when no check was made).
  void restore_best(std::vector<double>& params) const;
  // summary.json's "early_stopping": {metric, patience, min_delta, stopped_at (null: ran every
  // step), best_step, best_metric}.
  [[nodiscard]] nlohmann::json summary() const;

  // A checkpoint's share: the counters (manifest) and the best parameters (an array); a
  // checkpoint without them (written by a run without early stopping, or an older disttrain)
  // restores nothing. `where` names the checkpoint in errors.
  [[nodiscard]] nlohmann::json state() const;
  [[nodiscard]] const std::vector<double>& best_params() const noexcept { return best_params_; }
  void restore(const nlohmann::json& state, std::vector<double> best_params,
               std::size_t parameter_count, const std::string& where);

 private:
  [[nodiscard]] std::optional<double> value_of(const Metrics& m) const;
  [[nodiscard]] bool improves(double value) const;

  std::optional<config::EarlyStoppingConfig> config_;
  bool higher_is_better_ = false;
  std::optional<double> best_;
  std::uint64_t best_step_ = 0;
  int wait_ = 0;  // checks since the best
  std::optional<std::uint64_t> stopped_at_;
  std::vector<double> best_params_;
};

}  // namespace dt::roles

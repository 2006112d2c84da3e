#include "core/coordinator/early_stop.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dt::roles {

EarlyStopper::EarlyStopper(const std::optional<config::EarlyStoppingConfig>& config)
    : config_(config),
      higher_is_better_(config && (config->metric == "val_acc" || config->metric == "val_auc")) {}

std::optional<double> EarlyStopper::value_of(const Metrics& m) const {
  const std::string& metric = config_->metric;
  if (metric == "val_loss") return m.loss;
  if (metric == "val_acc") return m.accuracy;
  if (metric == "val_auc") return m.auc;
  if (metric == "val_log_loss") return m.log_loss;
  if (metric == "val_mse") return m.mse;
  return std::nullopt;
}

bool EarlyStopper::improves(double value) const {
  if (!std::isfinite(value)) return false;
  if (!best_) return true;
  const double delta = config_->min_delta;
  return higher_is_better_ ? value > *best_ + delta : value < *best_ - delta;
}

void EarlyStopper::check(std::uint64_t step, const std::optional<Metrics>& validation,
                         const std::vector<double>& params) {
  if (!config_ || stopped()) return;
  const std::optional<double> value = validation ? value_of(*validation) : std::nullopt;
  if (value && improves(*value)) {
    best_ = *value;
    best_step_ = step;
    best_params_ = params;
    wait_ = 0;
    return;
  }
  if (++wait_ >= config_->patience) stopped_at_ = step;
}

void EarlyStopper::restore_best(std::vector<double>& params) const {
  if (config_ && best_ && best_params_.size() == params.size()) params = best_params_;
}

nlohmann::json EarlyStopper::summary() const {
  if (!config_) return nlohmann::json();
  nlohmann::json j;
  j["metric"] = config_->metric;
  j["patience"] = config_->patience;
  j["min_delta"] = config_->min_delta;
  j["stopped_at"] = stopped_at_ ? nlohmann::json(*stopped_at_) : nlohmann::json();
  j["best_step"] = best_ ? nlohmann::json(best_step_) : nlohmann::json();
  j["best_metric"] = best_ ? nlohmann::json(*best_) : nlohmann::json();
  return j;
}

nlohmann::json EarlyStopper::state() const {
  nlohmann::json j;
  j["best"] = best_ ? nlohmann::json(*best_) : nlohmann::json();
  j["best_step"] = best_step_;
  j["wait"] = wait_;
  j["stopped_at"] = stopped_at_ ? nlohmann::json(*stopped_at_) : nlohmann::json();
  return j;
}

void EarlyStopper::restore(const nlohmann::json& state, std::vector<double> best_params,
                           std::size_t parameter_count, const std::string& where) {
  if (!config_ || !state.is_object()) return;
  const auto bad = [&](const char* what) {
    fail<DataError>("{}: the checkpoint's early_stopping state is damaged ({})", where, what);
  };
  const auto& best = state.contains("best") ? state["best"] : nlohmann::json();
  const auto& stopped = state.contains("stopped_at") ? state["stopped_at"] : nlohmann::json();
  if (!(best.is_null() || best.is_number()) || !state.contains("best_step") ||
      !state["best_step"].is_number_unsigned() || !state.contains("wait") ||
      !state["wait"].is_number_integer() || state["wait"].get<std::int64_t>() < 0 ||
      !(stopped.is_null() || stopped.is_number_unsigned())) {
    bad("a counter is missing or not a count");
  }
  if (best.is_number() && best_params.size() != parameter_count) {
    bad("the best parameters do not fit the model");
  }
  best_ = best.is_number() ? std::optional<double>(best.get<double>()) : std::nullopt;
  best_step_ = state["best_step"].get<std::uint64_t>();
  wait_ = static_cast<int>(std::min<std::int64_t>(state["wait"].get<std::int64_t>(), 1 << 30));
  stopped_at_ = stopped.is_null() ? std::nullopt
                                  : std::optional<std::uint64_t>(stopped.get<std::uint64_t>());
  best_params_ = best_ ? std::move(best_params) : std::vector<double>();
}

}  // namespace dt::roles

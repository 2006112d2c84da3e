#pragma once
// How the coordinator scores parameters: Evaluation holds its own copy of the model (set once
// the classes are known) and the held-out rows, and gives the validation metrics of any
// parameters; evaluate_rows and to_metrics are the sums and the numbers they become (also used
// for the final evaluation over the training rows).

#include "core/config/config.hpp"
#include "core/coordinator/result.hpp"
#include "core/data/dataset.hpp"
#include "core/models/model.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace dt::roles {

class Evaluation {
 public:
  // The coordinator's own model object (validation, regularization).
  [[nodiscard]] models::Model& model() noexcept { return *model_; }
  void set_model(std::unique_ptr<models::Model> model) { model_ = std::move(model); }
  // The held-out rows (normalized, classes assigned), or nullptr without a split.
  [[nodiscard]] const data::Shard* validation() const noexcept {
    return validation_ ? &*validation_ : nullptr;
  }
  void set_validation(data::Shard shard) { validation_ = std::move(shard); }
  // Validation metrics of `params` on the held-out rows (nullopt without a split).
  [[nodiscard]] std::optional<Metrics> validate(const std::vector<double>& params);

 private:
  std::unique_ptr<models::Model> model_;
  std::optional<data::Shard> validation_;
};

// Loss and metric sums of `params` over every row of `shard`, in chunks so that the model's
// scratch memory stays bounded whatever the shard size.
[[nodiscard]] models::BatchResult evaluate_rows(models::Model& model,
                                                std::span<const double> params,
                                                const data::Shard& shard);

// Turns a Metrics for the task into loss/metric numbers.
[[nodiscard]] Metrics to_metrics(config::Task task, double loss_sum, double correct,
                                 double squared_error_sum, std::uint64_t rows);

}  // namespace dt::roles

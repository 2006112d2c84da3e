#pragma once
// The loss sums of the steps since the last loss.csv row: the run's and each worker's, added as
// steps complete, turned into the row's means, and kept in a checkpoint so that a resumed run
// writes the same next row.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::roles {

class LossWindow {
 public:
  explicit LossWindow(std::size_t ranks) : worker_loss_(ranks), worker_rows_(ranks) {}

  void add(double loss_sum, std::uint64_t rows, const std::vector<double>& worker_loss_sum,
           const std::vector<std::uint64_t>& worker_rows);
  // Mean batch loss since the last row (0 without rows), and each worker's.
  [[nodiscard]] double train_loss() const;
  [[nodiscard]] std::vector<double> worker_loss() const;
  void clear();

  // The mean loss of the run's first step, the yardstick of a loss that explodes (session.cpp);
  // kept in checkpoints.
  void set_first_loss(double mean) noexcept { first_loss_ = mean; }
  [[nodiscard]] std::optional<double> first_loss() const noexcept { return first_loss_; }

  // For a checkpoint, and back (a checkpoint of another worker count is resized).
  [[nodiscard]] nlohmann::json to_json() const;
  // DataError naming `where` (the checkpoint) when a key is missing or of another type.
  void restore(const nlohmann::json& window, const std::string& where);

 private:
  double loss_ = 0;
  std::uint64_t rows_ = 0;
  std::vector<double> worker_loss_;
  std::vector<std::uint64_t> worker_rows_;
  std::optional<double> first_loss_;
};

}  // namespace dt::roles

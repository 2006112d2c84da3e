#include "core/coordinator/loss_window.hpp"

#include "core/coordinator/resume_read.hpp"

#include <algorithm>

namespace dt::roles {

void LossWindow::add(double loss_sum, std::uint64_t rows, const std::vector<double>& worker_loss_sum,
                     const std::vector<std::uint64_t>& worker_rows) {
  loss_ += loss_sum;
  rows_ += rows;
  for (std::size_t r = 0; r < worker_loss_sum.size(); ++r) {
    worker_loss_[r] += worker_loss_sum[r];
    worker_rows_[r] += worker_rows[r];
  }
}

double LossWindow::train_loss() const {
  return rows_ > 0 ? loss_ / static_cast<double>(rows_) : 0.0;
}

std::vector<double> LossWindow::worker_loss() const {
  std::vector<double> out;
  for (std::size_t r = 0; r < worker_loss_.size(); ++r) {
    out.push_back(worker_rows_[r] > 0 ? worker_loss_[r] / static_cast<double>(worker_rows_[r])
                                      : 0.0);
  }
  return out;
}

void LossWindow::clear() {
  loss_ = 0;
  rows_ = 0;
  std::fill(worker_loss_.begin(), worker_loss_.end(), 0.0);
  std::fill(worker_rows_.begin(), worker_rows_.end(), 0);
}

nlohmann::json LossWindow::to_json() const {
  nlohmann::json j = {{"loss", loss_}, {"rows", rows_}, {"worker_loss", worker_loss_},
                      {"worker_rows", worker_rows_}};
  if (first_loss_) j["first_loss"] = *first_loss_;
  return j;
}

void LossWindow::restore(const nlohmann::json& window, const std::string& where) {
  const auto ranks = worker_loss_.size();
  loss_ = manifest_number(window, "loss", where);
  rows_ = manifest_count(window, "rows", where);
  worker_loss_ = manifest_numbers(window, "worker_loss", where);
  worker_rows_ = manifest_counts(window, "worker_rows", where);
  worker_loss_.resize(ranks);
  worker_rows_.resize(ranks);
  // Checkpoints of earlier builds have none: the check then waits for a new run.
  if (window.contains("first_loss")) first_loss_ = manifest_number(window, "first_loss", where);
}

}  // namespace dt::roles

#include "core/modes/merge.hpp"

#include "base/error.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <cmath>

namespace dt::modes::merge {

namespace {

// Every candidate has out.size() finite parameters; TrainingError otherwise.
void check(std::span<const Candidate> candidates, std::span<double> out) {
  if (candidates.empty()) fail<TrainingError>("merge: no worker model to merge");
  for (const auto& c : candidates) {
    if (c.params.size() != out.size()) {
      fail<TrainingError>("merge: worker {} returned {} parameters, the model has {}", c.rank,
                          c.params.size(), out.size());
    }
    for (std::size_t i = 0; i < c.params.size(); ++i) {
      if (!std::isfinite(c.params[i])) {
        fail<TrainingError>("worker {}'s model has a non-finite parameter (index {} is {}): it "
                            "diverged in its local steps",
                            c.rank, i, text::format_double(c.params[i]));
      }
    }
  }
}

// sum_k w_k * theta_k / sum_k w_k in candidate order; the plain average when every w_k is 0.
Outcome weighted_mean(std::span<const Candidate> candidates, std::span<const double> w,
                      std::span<double> out) {
  double total = 0;
  for (double x : w) total += x;
  Outcome outcome;
  if (!(total > 0)) {
    outcome = average(candidates, out);
    outcome.fallback = true;
    return outcome;
  }
  std::fill(out.begin(), out.end(), 0.0);
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    if (w[k] == 0) continue;  // keeps a weight-0 model's values out of the sum entirely
    const auto theta = candidates[k].params;
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += w[k] * theta[i];
  }
  for (double& x : out) x /= total;
  for (double x : w) outcome.weights.push_back(x / total);
  return outcome;
}

// Sorts each coordinate's values and averages positions [cut, K - cut).
void sorted_mean(std::span<const Candidate> candidates, std::size_t cut, std::span<double> out) {
  const std::size_t k = candidates.size();
  std::vector<double> values(k);
  const double kept = static_cast<double>(k - 2 * cut);
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (std::size_t j = 0; j < k; ++j) values[j] = candidates[j].params[i];
    std::sort(values.begin(), values.end());
    if (k - 2 * cut == 2) {
      // 0.5a + 0.5b cannot overflow where (a + b) / 2 could.
      out[i] = 0.5 * values[cut] + 0.5 * values[cut + 1];
      continue;
    }
    double sum = 0;
    for (std::size_t j = cut; j < k - cut; ++j) sum += values[j];
    out[i] = sum / kept;
  }
}

}  // namespace

Outcome weighted_average(std::span<const Candidate> candidates, std::span<double> out) {
  check(candidates, out);
  std::vector<double> w;
  for (const auto& c : candidates) w.push_back(static_cast<double>(c.rows));
  return weighted_mean(candidates, w, out);
}

Outcome average(std::span<const Candidate> candidates, std::span<double> out) {
  check(candidates, out);
  std::fill(out.begin(), out.end(), 0.0);
  for (const auto& c : candidates) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += c.params[i];
  }
  const double k = static_cast<double>(candidates.size());
  for (double& x : out) x /= k;
  return {.weights = std::vector<double>(candidates.size(), 1.0 / k)};
}

Outcome median(std::span<const Candidate> candidates, std::span<double> out) {
  check(candidates, out);
  sorted_mean(candidates, (candidates.size() - 1) / 2, out);
  return {};
}

Outcome trimmed_mean(std::span<const Candidate> candidates, double trim, std::span<double> out) {
  check(candidates, out);
  const std::size_t k = candidates.size();
  const std::size_t cut = trimmed_count(k, trim);
  sorted_mean(candidates, cut, out);
  Outcome outcome;
  // The cut was clamped because trim * K would have left nothing: only with trim >= 0.5 (the
  // config refuses it) or within the 1e-9 slack below it.
  outcome.fallback = trim > 0 && std::floor(trim * static_cast<double>(k) + 1e-9) >
                                     static_cast<double>(cut);
  return outcome;
}

Outcome best(std::span<const Candidate> candidates, std::span<double> out) {
  check(candidates, out);
  std::size_t chosen = 0;
  for (std::size_t k = 1; k < candidates.size(); ++k) {
    const auto& c = candidates[k];
    const auto& b = candidates[chosen];
    const bool better = std::isnan(b.validation_loss)
                            ? !std::isnan(c.validation_loss) || c.rank < b.rank
                            : c.validation_loss < b.validation_loss ||
                                  (c.validation_loss == b.validation_loss && c.rank < b.rank);
    if (better) chosen = k;
  }
  std::copy(candidates[chosen].params.begin(), candidates[chosen].params.end(), out.begin());
  Outcome outcome;
  outcome.weights.assign(candidates.size(), 0.0);
  outcome.weights[chosen] = 1.0;
  outcome.chosen = candidates[chosen].rank;
  return outcome;
}

Outcome validation_weighted(std::span<const Candidate> candidates, std::span<double> out) {
  check(candidates, out);
  std::vector<double> w;
  for (const auto& c : candidates) w.push_back(c.quality > 0 ? c.quality : 0.0);  // NaN -> 0
  return weighted_mean(candidates, w, out);
}

std::size_t trimmed_count(std::size_t k, double trim) {
  if (k == 0 || !(trim > 0)) return 0;
  const double wanted = std::floor(trim * static_cast<double>(k) + 1e-9);
  const std::size_t most = (k - 1) / 2;
  return wanted >= static_cast<double>(most) ? most : static_cast<std::size_t>(wanted);
}

double accuracy_quality(double correct, std::uint64_t rows) {
  return rows == 0 ? 0.0 : correct / static_cast<double>(rows);
}

std::vector<double> regression_qualities(std::span<const double> absolute_errors) {
  double total = 0;
  for (double e : absolute_errors) {
    if (std::isfinite(e)) total += e;
  }
  std::vector<double> q;
  for (double e : absolute_errors) {
    if (!std::isfinite(e)) {
      q.push_back(0.0);
    } else {
      q.push_back(total > 0 ? 1.0 - e / total : 1.0);
    }
  }
  return q;
}

}  // namespace dt::modes::merge

#pragma once
// The merge rules of `parameters` mode, as pure functions: K worker models in, one merged
// parameter vector out. No I/O, no config, no randomness, so each rule is unit-tested on
// hand-built parameter sets with exactly representable results.
//
// Reproducibility: every rule visits the candidates in the order given (the mode passes them in
// rank order) and every coordinate's sum runs in that order (median and trimmed_mean: in sorted
// order, which the values alone fix), so a merge gives the same bits on every run.
//
// Non-finite parameters: every rule throws TrainingError naming the worker and the coordinate.
// A NaN or infinity in a returned model means that worker diverged during its local steps; a
// median would hide that for a while and an average would spread it to every worker, and
// neither is a model anyone wants, so the run fails (the mode adds the round to the message).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace dt::modes::merge {

inline constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

// One worker model returned in a round.
struct Candidate {
  int rank = 0;                        // names the worker in messages; breaks ties in `best`
  std::span<const double> params;
  std::uint64_t rows = 0;              // rows trained this round (weighted_average)
  double validation_loss = kUnknown;   // mean validation loss (best); NaN counts as worst
  double quality = kUnknown;           // >= 0, higher is better (validation_weighted);
                                       // NaN or negative counts as 0
};

// What a merge did, for the run summary.
struct Outcome {
  // Each candidate's share of the merged model (sums to 1) for the rules that are a weighted
  // mean (weighted_average, average, best, validation_weighted); empty for median and
  // trimmed_mean, whose weights differ per coordinate.
  std::vector<double> weights;
  std::optional<int> chosen;  // best: the rank whose model was taken
  // The rule's fallback applied: weighted_average with every row count 0, validation_weighted
  // with every quality 0 (both fall back to the plain average), trimmed_mean whose cut would
  // leave nothing (falls back to the median).
  bool fallback = false;
};

// FedAvg: sum_k rows_k * theta_k / sum_k rows_k. A worker that trained no rows has weight 0;
// when no worker trained any row the rule falls back to the plain average.
Outcome weighted_average(std::span<const Candidate> candidates, std::span<double> out);
// sum_k theta_k / K.
Outcome average(std::span<const Candidate> candidates, std::span<double> out);
// Coordinate-wise median; for an even K the mean of the two middle values.
Outcome median(std::span<const Candidate> candidates, std::span<double> out);
// Coordinate-wise trimmed mean: sorts each coordinate's K values, cuts trimmed_count(K, trim)
// from EACH end and averages the rest.
Outcome trimmed_mean(std::span<const Candidate> candidates, double trim, std::span<double> out);
// The model with the lowest validation loss (ties: the lowest rank; NaN loses to any number).
Outcome best(std::span<const Candidate> candidates, std::span<double> out);
// sum_k q_k * theta_k / sum_k q_k with the qualities q_k; when they are all 0 (every model
// equally useless, or K = 1 for regression, see regression_qualities) the plain average.
Outcome validation_weighted(std::span<const Candidate> candidates, std::span<double> out);

// The number of values trimmed_mean cuts from each end of K: floor(trim * K) (with 1e-9 of
// slack, so that 0.3 * 10 counts as 3 even though it is 2.9999999999999996 in binary), at most
// floor((K - 1) / 2) so that one value (odd K) or two (even K) remain — the median.
[[nodiscard]] std::size_t trimmed_count(std::size_t k, double trim);

// Qualities for validation_weighted.
// Classification: the model's accuracy on the validation rows (correct / rows; 0 without rows).
[[nodiscard]] double accuracy_quality(double correct, std::uint64_t rows);
// Regression: q_k = 1 - e_k / sum_j e_j, where e_k is model k's total absolute error on the
// validation rows: a model's quality is 1 minus its share of the error all the models make.
// The qualities sum to K - 1 (equal errors give equal weights). A non-finite e_k gets quality 0
// and is left out of the sum. When the sum is 0 (every model perfect, or every error
// non-finite) the finite models get quality 1 each, i.e. equal weights.
[[nodiscard]] std::vector<double> regression_qualities(std::span<const double> absolute_errors);

}  // namespace dt::modes::merge

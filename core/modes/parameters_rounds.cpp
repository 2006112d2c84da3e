#include "core/modes/parameters_rounds.hpp"

#include "core/coordinator/evaluate.hpp"
#include "core/coordinator/plan.hpp"
#include "core/coordinator/session.hpp"
#include "base/error.hpp"
#include "base/random.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dt::modes::rounds {

using config::MergeRule;

namespace {

// Sum of |prediction - label| over the rows of a regression shard, in chunks (bounded scratch),
// in row order.
double absolute_error(models::Model& model, std::span<const double> params,
                      const data::Shard& shard) {
  constexpr std::int64_t kChunkRows = 8192;
  models::RowMatrix predictions;
  double total = 0;
  roles::RowScorer scorer(model, params, shard);
  const auto rows = scorer.rows();
  for (std::int64_t begin = 0; begin < rows; begin += kChunkRows) {
    const auto n = std::min(kChunkRows, rows - begin);
    scorer.predict(begin, n, predictions);
    for (std::int64_t i = 0; i < n; ++i) total += std::abs(predictions(i, 0) - shard.y(begin + i));
  }
  return total;
}

}  // namespace

Schedule make_schedule(const config::Config& config, const roles::Plan& plan,
                       std::uint64_t steps_per_epoch) {
  const auto& p = config.aggregation.parameters;
  Schedule s;
  for (const auto rows : plan.shard_rows) {
    s.steps_per_epoch = std::max(s.steps_per_epoch, roles::local_steps_per_epoch(config.training, rows));
  }
  if (steps_per_epoch > 0) s.steps_per_epoch = steps_per_epoch;
  s.epochs = static_cast<std::uint64_t>(config.training.epochs);
  s.total_steps = s.epochs * s.steps_per_epoch;
  if (p.sync_every_steps > 0) {
    s.sync_steps = static_cast<std::uint64_t>(p.sync_every_steps);
    s.rounds = (s.total_steps + s.sync_steps - 1) / s.sync_steps;
  } else {
    s.sync_epochs = static_cast<std::uint64_t>(std::max(1, p.sync_every_epochs));
    s.rounds = (s.epochs + s.sync_epochs - 1) / s.sync_epochs;
  }
  return s;
}

std::vector<int> sample_clients(std::uint64_t seed, std::uint64_t round, int n, double fraction) {
  std::vector<int> ranks(static_cast<std::size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  const auto m = static_cast<std::size_t>(
      std::max(1.0, std::floor(fraction * static_cast<double>(n) + 1e-9)));
  if (m >= ranks.size()) return ranks;
  random::Generator gen(seed, random::stream::kClientSampling, round);
  for (std::size_t i = 0; i < m; ++i) {
    const auto j = i + static_cast<std::size_t>(gen.below(ranks.size() - i));
    std::swap(ranks[i], ranks[j]);
  }
  ranks.resize(m);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

bool needs_validation(MergeRule rule) {
  return rule == MergeRule::kBest || rule == MergeRule::kValidationWeighted;
}

merge::Outcome apply_rule(MergeRule rule, double trim, std::span<const merge::Candidate> c,
                          std::span<double> out) {
  switch (rule) {
    case MergeRule::kWeightedAverage: return merge::weighted_average(c, out);
    case MergeRule::kAverage: return merge::average(c, out);
    case MergeRule::kMedian: return merge::median(c, out);
    case MergeRule::kTrimmedMean: return merge::trimmed_mean(c, trim, out);
    case MergeRule::kBest: return merge::best(c, out);
    case MergeRule::kValidationWeighted: return merge::validation_weighted(c, out);
  }
  fail<TrainingError>("merge rule {} is not implemented", static_cast<int>(rule));
}

void score(roles::CoordinatorSession& session, MergeRule rule,
           std::vector<merge::Candidate>& candidates, std::vector<double>& errors) {
  if (!needs_validation(rule)) return;
  const auto& validation = *session.validation();
  auto& model = session.model();
  const auto rows = static_cast<std::uint64_t>(validation.y.size());
  const bool regression = model.task() == config::Task::kRegression;
  errors.clear();
  for (auto& c : candidates) {
    if (rule == MergeRule::kBest) {
      c.validation_loss =
          roles::evaluate_rows(model, c.params, validation).loss_sum / static_cast<double>(rows);
    } else if (regression) {
      errors.push_back(absolute_error(model, c.params, validation));
    } else {
      c.quality =
          merge::accuracy_quality(roles::evaluate_rows(model, c.params, validation).correct, rows);
    }
  }
  if (rule == MergeRule::kValidationWeighted && regression) {
    const auto q = merge::regression_qualities(errors);
    for (std::size_t k = 0; k < candidates.size(); ++k) candidates[k].quality = q[k];
  }
}

}  // namespace dt::modes::rounds

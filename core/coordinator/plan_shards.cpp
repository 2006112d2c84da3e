// Shard planning per strategy. Strategy files numbers the rows of all files as one virtual table
// (file k's row i is first_row[k] + i) for the validation split; each rank's own rows are
// numbered in its file.

#include "core/coordinator/plan_shards.hpp"

#include "core/data/non_iid.hpp"
#include "base/error.hpp"
#include "base/random.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dt::roles {
namespace {

std::vector<std::vector<std::uint64_t>> plan_files(const config::Config& config, Plan& plan) {
  plan.rank_sources = data::describe_files(config);
  const auto first = data::first_rows(plan.rank_sources);
  std::vector<std::vector<std::uint64_t>> shards;
  for (std::size_t k = 0; k < plan.rank_sources.size(); ++k) {
    const auto& part = plan.rank_sources[k];
    // The validation fraction is held out of every file, each with its own draw, so that every
    // client is represented in the validation rows as in the training rows.
    const auto held = data::validation_rows(
        part.rows, config.data.validation_fraction,
        random::hash(config.seed, random::stream::kValidationSplit, k));
    for (const auto row : held) plan.validation_rows.push_back(first[k] + row);
    if (held.size() == part.rows) {
      fail<DataError>("{}: no training rows ({} data rows{}); every file of shards.files needs "
                      "rows for its worker",
                      part.file.string(), part.rows,
                      held.empty() ? "" : fmt::format(", {} held out by data.validation", held.size()));
    }
    shards.push_back(data::training_rows(part.rows, held, 1));
  }
  // The plan's own source describes the columns; its rows are those of all files.
  plan.source = plan.rank_sources.front();
  plan.source.csv.reset();
  plan.source.file.clear();
  plan.source.rows = first.back() + plan.rank_sources.back().rows;
  return shards;
}

// The source and the held-out rows, for every strategy but files.
void describe(const config::Config& config, Plan& plan, unsigned index_threads,
              const data::CsvIndex* indexed) {
  plan.source = data::describe_source(config, index_threads, indexed);
  plan.validation_rows =
      data::validation_rows(plan.source.rows, config.data.validation_fraction, config.seed);
}

}  // namespace

void plan_segments(const config::Config& config, Plan& plan, unsigned index_threads,
                   const data::CsvIndex* indexed) {
  describe(config, plan, index_threads, indexed);
  plan.segments = data::contiguous_segments(plan.source.rows, plan.validation_rows,
                                            config.shards.count, plan.source.csv);
  for (const auto& segments : plan.segments) {
    std::uint64_t rows = 0;
    for (const auto& s : segments) rows += s.count;
    plan.shard_rows.push_back(rows);
    plan.train_rows += rows;
  }
}

std::vector<std::vector<std::uint64_t>> plan_rows(const config::Config& config, Plan& plan,
                                                  unsigned index_threads,
                                                  const data::CsvIndex* indexed) {
  const auto& shards = config.shards;
  if (shards.strategy == config::ShardStrategy::kFiles) return plan_files(config, plan);

  describe(config, plan, index_threads, indexed);
  if (shards.strategy != config::ShardStrategy::kByLabel &&
      shards.strategy != config::ShardStrategy::kDirichlet) {
    return data::plan_shards(plan.source.rows, plan.validation_rows, shards.count,
                             shards.strategy, config.seed);
  }
  const auto kind = data::label_kind(config::task_of(config.model));
  const auto labels = data::read_labels(config, plan.source, kind);
  const auto training = data::training_rows(plan.source.rows, plan.validation_rows, shards.count);
  if (shards.strategy == config::ShardStrategy::kByLabel) {
    return data::plan_by_label(training, labels, shards.count, shards.labels_per_worker,
                               config.seed);
  }
  return data::plan_dirichlet(training, labels, shards.count, shards.alpha, config.seed);
}

std::vector<std::string> empty_shard_warnings(const config::Config& config,
                                              const std::vector<std::vector<std::uint64_t>>& shards) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < shards.size(); ++r) {
    if (!shards[r].empty()) continue;
    const bool dirichlet = config.shards.strategy == config::ShardStrategy::kDirichlet;
    // Shards are data-parallel replicas; with parallelism.tensor = T replica r is the T workers
    // r*T .. r*T+T-1 (tensor_plan.hpp), so name those rather than worker r.
    const auto tensor = static_cast<std::size_t>(std::max(1, config.parallelism.tensor));
    const auto who = tensor == 1 ? fmt::format("worker {}", r)
                                 : fmt::format("replica {} (workers {}..{})", r, r * tensor,
                                               r * tensor + tensor - 1);
    out.push_back(fmt::format(
        "shards: {} has no training rows ({} split); it trains on nothing and weighs 0 in "
        "every average; {}",
        who, config::name_of(config.shards.strategy),
        dirichlet ? fmt::format("raise shards.alpha (now {}) or change the seed for a less skewed "
                                "split", config.shards.alpha)
                  : "its classes have fewer rows than the workers that share them; lower "
                    "shards.count or raise shards.labels_per_worker"));
  }
  return out;
}

}  // namespace dt::roles

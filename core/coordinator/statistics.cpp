// The merge of every shard's statistics (statistics.hpp).

#include "core/coordinator/statistics.hpp"

#include "core/coordinator/tensor_plan.hpp"
#include "core/data/dataset.hpp"
#include "core/data/missing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

#include <fmt/format.h>

namespace dt::roles {

protocol::Finalize merge_loaded(const config::Config& config, const Plan& plan,
                                const std::vector<protocol::Envelope>& replies,
                                std::vector<std::string> labels, RunResult& result,
                                const InitialModel* init) {
  data::ColumnStats stats;
  std::vector<data::ColumnStats> tensor_stats;  // per rank, of its own columns
  for (std::size_t r = 0; r < replies.size(); ++r) {
    const auto loaded =
        protocol::read_loaded(replies[r], static_cast<std::size_t>(columns_of(plan, r).size()));
    if (loaded.rows != plan.shard_rows[r]) {
      fail<ProtocolError>("worker {} loaded {} rows, its shard has {}", r, loaded.rows,
                          plan.shard_rows[r]);
    }
    if (plan.tensor > 1) {
      tensor_stats.push_back(loaded.stats);
    } else {
      data::merge_into(stats, loaded.stats);
    }
    labels.insert(labels.end(), loaded.labels.begin(), loaded.labels.end());
    result.workers[r].rows = loaded.rows;
  }
  if (plan.tensor > 1) stats = merge_tensor_stats(plan, tensor_stats);
  protocol::Finalize f;
  const auto fill = data::missing_fill(config.data.missing, stats, plan.source.features);
  f.normalization = data::make_normalization(config.data.normalize, stats, plan.source.features);
  f.normalization.missing = config.data.missing;
  f.normalization.fill = fill;
  data::leave_encoded_unscaled(f.normalization, plan.source.features, plan.source.categorical);
  const auto task = config::task_of(config.model);
  if (data::label_kind(task) == data::LabelKind::kCategorical) {
    f.classes = data::resolve_classes(labels);
  } else if (task == config::Task::kBinary) {
    f.classes = {"0", "1"};
  }
  if (init != nullptr) adopt_initial(*init, f);
  for (const auto& c : f.normalization.constant_columns) {
    result.warnings.push_back(fmt::format("column '{}' is constant; left unscaled", c));
    log::warn("column '{}' is constant over the training rows; it is left unscaled", c);
  }
  f.train_rows = plan.train_rows;
  f.steps_per_epoch = plan.steps_per_epoch;
  return f;
}


std::vector<protocol::Envelope> with_departed_shards(const config::Config& config,
                                                     const Plan& plan,
                                                     const std::vector<bool>& departed,
                                                     std::vector<protocol::Envelope> replies) {
  if (departed.empty()) return replies;
  const auto kind = data::label_kind(config::task_of(config.model));
  std::vector<protocol::Envelope> out;
  std::size_t next = 0;
  for (std::size_t r = 0; r < departed.size(); ++r) {
    if (!departed[r]) {
      out.push_back(std::move(replies.at(next++)));
      continue;
    }
    // As its worker would have: the same rows, the same statistics (data::column_stats).
    const auto shard = data::load_shard(config, source_for(plan, r), plan.segments[r], kind);
    auto e = protocol::make_loaded(
        {static_cast<std::uint64_t>(shard.y.size()), data::column_stats(shard),
         kind == data::LabelKind::kCategorical ? data::distinct_labels(shard)
                                               : std::vector<std::string>{}});
    e.rank = static_cast<std::uint32_t>(r);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace dt::roles

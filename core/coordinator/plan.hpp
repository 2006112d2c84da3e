#pragma once
// The plan: which rows each worker trains on (segments of the source), the held-out rows and the
// steps per epoch. make_plan is plan.cpp (per strategy: plan_shards.cpp; tensor ranks:
// tensor_plan.cpp); the coordinator sends each worker its part, `validate` prints it.

#include "core/config/config.hpp"
#include "core/data/dataset.hpp"
#include "core/models/tensor.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt::roles {

// The plan `validate` prints and `run` follows.
struct Plan {
  data::SourceInfo source;  // strategy files: the columns of every file, rows of all files
  // Strategy files: rank r's own file (its index, rows and path); empty for other strategies.
  std::vector<data::SourceInfo> rank_sources;
  // Held-out source rows (strategy files: numbered across the files in order).
  std::vector<std::uint64_t> validation_rows;
  std::vector<std::vector<data::Segment>> segments;  // per rank
  std::vector<std::uint64_t> shard_rows;             // per rank
  std::uint64_t train_rows = 0;
  std::uint64_t steps_per_epoch = 0;
  std::vector<std::string> warnings;  // e.g. an empty shard; the run lists them in its summary

  // The source rank r's segments refer to.
  [[nodiscard]] const data::SourceInfo& source_of(std::size_t rank) const {
    return rank_sources.empty() ? source : rank_sources.at(rank);
  }
  // parallelism.tensor: rank r is replica r / tensor, slice r % tensor (tensor_plan.hpp).
  int tensor = 1;
  std::vector<models::Range> columns;  // per rank: the feature columns it loads; empty: all
  // fault_tolerance.elastic: the last join_slots ranks start empty (no rows, no worker), for
  // workers that join the running job (with_join_slots).
  int join_slots = 0;
  [[nodiscard]] int starting_ranks() const noexcept {
    return static_cast<int>(shard_rows.size()) - join_slots;
  }
};
// fault_tolerance.elastic with max_workers above the starting count: `plan` with a rank slot
// for each worker that may join (no segments, 0 rows), so that every per-rank structure of the
// run is sized once; an unjoined slot is a rank that is not alive. Otherwise `plan` unchanged.
[[nodiscard]] Plan with_join_slots(const config::Config& config, Plan plan);
// index_threads: how many threads the CSV index may use. `run` gives 2: nothing else runs before
// the plan is made. `validate` keeps 1 (its bytes per second are read as one core's).
// `indexed`: the CSV's index when it is already made (data::describe_source).
[[nodiscard]] Plan make_plan(const config::Config& config, unsigned index_threads = 1,
                             const data::CsvIndex* indexed = nullptr);

// Local steps per epoch of a worker with `rows` rows in the modes where training.batch_size is
// per worker (parameters, async): ceil(rows / batch_size), at least 1; 1 with `full`.
[[nodiscard]] std::uint64_t local_steps_per_epoch(const config::TrainingConfig& training,
                                                  std::uint64_t rows);
// The held-out rows, loaded (from every file with strategy files), labels not yet assigned.
[[nodiscard]] data::Shard load_validation(const config::Config& config, const Plan& plan,
                                          data::LabelKind kind);

}  // namespace dt::roles

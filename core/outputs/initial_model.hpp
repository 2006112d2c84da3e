#pragma once
// model.init read and checked before a run starts (by `run` and `validate`): the model must be
// one the config trains, on the data's features, so that its parameters mean what the run's do.

#include "core/config/config.hpp"
#include "core/coordinator/warm_start.hpp"
#include "core/data/dataset.hpp"

namespace dt::output {

// DataError (exit 2) naming model.init's file and what differs, and what to do: another model
// type, layers, activation or task than the config's; other features (names or order) than the
// data's; for a sparse model (or sparse data), another way of reading rows into keys (format,
// width, index_base, hashed columns, crosses, numeric columns: sparse_difference). A
// normalization kind other than data.normalize is not an error: the model's is used
// (a warning says so).
[[nodiscard]] roles::InitialModel read_initial_model(const config::Config& config,
                                                     const data::SourceInfo& source);

}  // namespace dt::output

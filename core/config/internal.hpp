#pragma once
// The steps of config::parse, internal to core/config.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/config/config.hpp"
#include "core/config/reader.hpp"

namespace dt::config::detail {

// An integer the Reader has already bounded to [min, INT_MAX], as an int. One definition for the
// section parsers (the sanitizer presets build them as one translation unit).
[[nodiscard]] inline int to_int(std::int64_t v) { return static_cast<int>(v); }

// Writes each override into `root` (a map), creating missing maps, and records it in `reader`
// so that errors about its value name the override. Unknown keys fail like in the file.
void apply_overrides(YAML::Node& root, const std::vector<Override>& overrides, Reader& reader);

// fault_tolerance and faults (sections_faults.cpp).
[[nodiscard]] FaultToleranceConfig parse_fault_tolerance(const Section& s);
[[nodiscard]] std::vector<FaultConfig> parse_faults(const Section& root, std::uint64_t seed);
// Faults that cannot hit (rank, inproc) and policies not available with the chosen mode.
void check_fault_tolerance(const Section& root, const Config& c);
// fault_tolerance.elastic (sections_elastic.cpp): its keys, then what it needs of the rest of
// the config (the worker count, a mode that can re-plan, worker processes).
[[nodiscard]] ElasticConfig parse_elastic(const Section& s);
void check_elastic(const Section& root, const Config& c);

// transport (sections_transport.cpp), and what it needs of the rest of the config.
[[nodiscard]] TransportConfig parse_transport(const Section& s, const std::filesystem::path& base_dir);
void check_transport(const Section& root, const Config& c);

// data.categorical (sections_categorical.cpp): {column: one_hot | hash | {hash: N}}.
[[nodiscard]] std::vector<CategoricalColumn> categorical_entries(const Section& s);
// data.index_base, data.feature_count, data.max_dense_gib (sections_libsvm.cpp); `from_file`:
// data.path is set (the keys apply to nothing else).
void parse_libsvm_keys(const Section& s, DataConfig& d, bool from_file);
// data.sparse and data.hash (sections_sparse.cpp), after data.format and data.categorical.
void parse_sparse_keys(const Section& s, DataConfig& d, bool from_file);

// training.optimizer (sections_optimizer.cpp): the type and the keys that type takes.
[[nodiscard]] OptimizerConfig parse_optimizer(const Section& s);
// Optimizer settings that do not fit the rest of the config (ftrl with a kept state in
// parameters mode, or with async's staleness_lr).
void check_optimizer(const Section& root, const Config& c);
// training.lr_schedule and training.clip_norm (sections_controls.cpp), into `c` (parsed
// after training.optimizer: cosine's min_lr is checked against its lr).
void parse_training_controls(const Section& training, OptimizerConfig& c);

// training.early_stopping (sections_early_stopping.cpp): its keys, then what it needs of the
// rest of the config (a validation split, a metric the model has).
[[nodiscard]] EarlyStoppingConfig parse_early_stopping(const Section& s);
void check_early_stopping(const Section& root, const Config& c);

// aggregation.compression (sections_compression.cpp), and the setups it is not available with.
// The map form {topk: {ratio: R}} sets `topk_ratio`.
[[nodiscard]] WireCompression parse_compression(const Section& aggregation, double& topk_ratio);
void check_compression(const Section& root, const Config& c);

// output.timeline (sections_timeline.cpp): `true`, `false` or `{steps: N}`; the steps kept.
[[nodiscard]] std::uint64_t parse_timeline(const Section& output);

// `path` against `base_dir`, absolute and normal.
[[nodiscard]] std::filesystem::path resolve(const std::filesystem::path& base_dir,
                                            const std::string& path);

// The validated Config from the top-level map; relative paths resolve against `base_dir`.
[[nodiscard]] Config build(const Section& root, const std::filesystem::path& base_dir);

}  // namespace dt::config::detail

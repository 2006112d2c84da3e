#pragma once
// aggregation.compression on the step path: the frame a worker's gradient travels in (raw
// float64, or fp16 / bf16 frames of transports/half_codec.hpp), the receiver's sum of such
// frames, and the tally of what the compression saved (summary.json "aggregation.compression").

#include "core/config/config.hpp"
#include "core/protocol/protocol.hpp"
#include "transports/half_codec.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>

namespace dt::protocol {

// The half codec of the config's aggregation.compression; nullopt for none.
[[nodiscard]] std::optional<wire::HalfCodec> half_codec(const config::Config& config);

// The gradient payload bytes that travelled compressed, and what float64 would have cost.
// Counted where the frames are received (the coordinator), payload only (no message headers).
class CompressionTally {
 public:
  // `entries`: top-k, the (key, value) pairs the frames held (the values a dense frame would
  // hold: `values`).
  void add(std::size_t values, std::size_t frame_bytes, std::size_t entries = 0) {
    values_ += values;
    bytes_ += frame_bytes;
    entries_ += entries;
  }
  // Mode parameters: a model sent whole in float64 (to a client without the model before),
  // counted as values that travelled uncompressed.
  void add_whole(std::size_t values) {
    values_ += values;
    bytes_ += values * sizeof(double);
    ++whole_;
  }
  // {"codec", "values", "bytes", "float64_bytes", "saved_bytes", "ratio"}; top-k adds
  // "topk_ratio" (the config's) and "entries" (the pairs sent, of `values`); mode parameters
  // adds "whole_models" (the models sent whole).
  [[nodiscard]] nlohmann::json to_json(const config::Config& config) const;

 private:
  std::uint64_t values_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t entries_ = 0;
  std::uint64_t whole_ = 0;
};

// A run's tally, put into its summary (`aggregation`["compression"]) when it goes out of scope:
// at the end of a mode's training, and when an error ends the run (it unwinds through the mode),
// so that a failed run's summary.json counts what travelled until then. Inactive (puts nothing)
// when the run is not compressed. `refresh`, when given, recounts the tally just before (sharded
// servers: their own counts).
class SummaryTally {
 public:
  SummaryTally(const config::Config& config, nlohmann::json& aggregation,
               std::function<void(CompressionTally&)> refresh = {});
  ~SummaryTally();
  SummaryTally(const SummaryTally&) = delete;
  SummaryTally& operator=(const SummaryTally&) = delete;

  [[nodiscard]] CompressionTally& tally() noexcept { return tally_; }

 private:
  const config::Config& config_;
  nlohmann::json& aggregation_;
  std::function<void(CompressionTally&)> refresh_;
  CompressionTally tally_;
  bool active_;
};

}  // namespace dt::protocol

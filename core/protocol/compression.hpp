#pragma once
// aggregation.compression on the step path: the frame a worker's gradient travels in (raw
// float64, or fp16 / bf16 frames of transports/half_codec.hpp), the receiver's sum of such
// frames, and the tally of what the compression saved (summary.json "aggregation.compression").

#include "core/config/config.hpp"
#include "core/protocol/protocol.hpp"
#include "transports/half_codec.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <span>

namespace dt::protocol {

// The half codec of the config's aggregation.compression; nullopt for none.
[[nodiscard]] std::optional<wire::HalfCodec> half_codec(const config::Config& config);

// Array `index` of `e`, the frame as it came (ProtocolError when the message has fewer arrays).
[[nodiscard]] std::span<const std::byte> frame_of(const Envelope& e, std::size_t index);

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
  // {"codec", "values", "bytes", "float64_bytes", "saved_bytes", "ratio"}; top-k adds
  // "topk_ratio" (the config's) and "entries" (the pairs sent, of `values`).
  [[nodiscard]] nlohmann::json to_json(const config::Config& config) const;

 private:
  std::uint64_t values_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t entries_ = 0;
};

}  // namespace dt::protocol

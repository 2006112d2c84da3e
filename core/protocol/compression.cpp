#include "core/protocol/compression.hpp"

#include "base/error.hpp"

namespace dt::protocol {

std::optional<wire::HalfCodec> half_codec(const config::Config& config) {
  switch (config.aggregation.compression) {
    case config::WireCompression::kNone:
    case config::WireCompression::kTopk:  // not a half codec: topk_feedback.hpp
      return std::nullopt;
    case config::WireCompression::kFp16:
      return wire::HalfCodec::kFp16;
    case config::WireCompression::kBf16:
      return wire::HalfCodec::kBf16;
  }
  return std::nullopt;
}

nlohmann::json CompressionTally::to_json(const config::Config& config) const {
  const std::uint64_t raw = values_ * sizeof(double);
  nlohmann::json j = nlohmann::json::object();
  j["codec"] = config::name_of(config.aggregation.compression);
  j["values"] = values_;
  j["bytes"] = bytes_;
  j["float64_bytes"] = raw;
  j["saved_bytes"] = raw >= bytes_ ? raw - bytes_ : 0;
  j["ratio"] = bytes_ > 0 ? static_cast<double>(raw) / static_cast<double>(bytes_) : 1.0;
  if (config.aggregation.compression == config::WireCompression::kTopk) {
    j["topk_ratio"] = config.aggregation.topk_ratio;
    j["entries"] = entries_;
  }
  if (config.aggregation.mode == config::AggregationMode::kParameters) j["whole_models"] = whole_;
  return j;
}

SummaryTally::SummaryTally(const config::Config& config, nlohmann::json& aggregation,
                           std::function<void(CompressionTally&)> refresh)
    : config_(config),
      aggregation_(aggregation),
      refresh_(std::move(refresh)),
      active_(config.aggregation.compression != config::WireCompression::kNone) {}

SummaryTally::~SummaryTally() {
  if (!active_) return;
  try {
    if (refresh_) refresh_(tally_);
    aggregation_["compression"] = tally_.to_json(config_);
  } catch (...) {
    // A summary without its tally beats an exception thrown while another one unwinds.
  }
}

}  // namespace dt::protocol

#include "core/modes/parameters_half.hpp"

#include "core/protocol/step_messages.hpp"
#include "base/error.hpp"

#include <algorithm>

namespace dt::modes {

HalfModelsOut::HalfModelsOut(wire::HalfCodec codec, int ranks)
    : codec_(codec), held_(static_cast<std::size_t>(ranks), 0) {}

void HalfModelsOut::put_model(protocol::Envelope& request, int rank,
                              std::span<const double> params, protocol::CompressionTally& tally) {
  auto& held = held_.at(static_cast<std::size_t>(rank));
  request.fields["model_version"] = version_;
  if (!delta_frame_.empty() && held + 1 == version_) {
    request.fields["delta_from"] = held;
    request.arrays.push_back(delta_frame_);
    tally.add(params.size(), delta_frame_.size());
  } else {
    request.arrays.push_back(wire::to_bytes(params));
    tally.add_whole(params.size());
  }
  held = version_;
}

std::span<const double> HalfModelsOut::model_of(const protocol::Envelope& reply,
                                                std::span<const double> start, std::size_t slot,
                                                protocol::CompressionTally& tally) {
  if (models_.size() <= slot) models_.resize(slot + 1);
  auto& model = models_[slot];
  model.assign(start.begin(), start.end());
  const auto frame = protocol::frame_of(reply, 0);
  wire::add_half(frame, codec_, model);
  tally.add(model.size(), frame.size());
  return model;
}

void HalfModelsOut::advance(std::span<double> params, std::span<const double> merged) {
  delta_.resize(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) delta_[i] = merged[i] - params[i];
  wire::encode_half(delta_, codec_, delta_frame_);
  wire::add_half(delta_frame_, codec_, params);  // what a client holding params rebuilds
  ++version_;
}

void HalfModelsOut::forget(int rank) { held_.at(static_cast<std::size_t>(rank)) = 0; }

std::span<const double> HalfModelsIn::read_model(const protocol::Envelope& request,
                                                 wire::HalfCodec codec, std::size_t p) {
  const auto version = protocol::count(request, "model_version");
  if (request.fields.contains("delta_from")) {
    const auto from = protocol::count(request, "delta_from");
    if (from != version_ || model_.size() != p) {
      fail<ProtocolError>("parameters mode, round {}: the model came as a delta on model "
                          "version {}, but this worker holds {}; the coordinator sends a worker "
                          "without that version the model whole (a bug if seen)",
                          request.step + 1, from,
                          version_ == 0 ? std::string("none") : std::to_string(version_));
    }
    wire::add_half(protocol::frame_of(request, 0), codec, model_);
  } else {
    const auto whole = protocol::doubles(request, 0, p);
    model_.assign(whole.begin(), whole.end());
  }
  version_ = version;
  return model_;
}

wire::Bytes HalfModelsIn::encode_trained(std::span<const double> trained, wire::HalfCodec codec) {
  delta_.resize(trained.size());
  for (std::size_t i = 0; i < trained.size(); ++i) delta_[i] = trained[i] - model_[i];
  return wire::encode_half(delta_, codec);
}

}  // namespace dt::modes

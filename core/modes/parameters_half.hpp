#pragma once
// aggregation.compression fp16 / bf16 in `parameters` mode (parameters.cpp): the models travel
// as DELTAS in half-float frames (transports/half_codec.hpp), both ways; the merge and every
// optimizer stay float64.
//
// Why deltas: a model's values are far larger than what one round changes them by. A frame has
// 11 significant bits (fp16) relative to its largest value: rounding the model itself would
// move every parameter by up to 2^-12 of the largest one, each round, while rounding the change
// moves it by 2^-12 of the round's largest change, usually orders of magnitude less.
//
// Up: a client sends (its model after the round) - (the model it started the round from). The
// coordinator sent that start, so it adds the decoded delta to it in float64, and merges the
// models so rebuilt in float64 as without compression.
// Down: the coordinator's model (the one checkpoints and model.json hold) moves by the merge's
// change rounded as its frame decodes:
//   model_v = model_(v-1) + decode(encode(merged - model_(v-1)))
// so a client holding model_(v-1) rebuilds model_v bit for bit from one delta frame. A client
// that does not (the first round, a resumed run, a replacement, a joiner, a client that missed
// the last merge under clients_per_round < 1) is sent model_v whole in float64: the same bits.
// The model a round trains from thus never depends on how it travelled, and a resume or a
// replacement gives the bytes of the run that never stopped.
//
// Threading: none; each object is owned by the coordinator's or a worker's mode.

#include "core/protocol/compression.hpp"
#include "core/protocol/protocol.hpp"
#include "transports/half_codec.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace dt::modes {

// The coordinator's side: which model version each rank holds, the last merge's delta frame.
class HalfModelsOut {
 public:
  HalfModelsOut(wire::HalfCodec codec, int ranks);

  // Appends the round's model `params` (the current version) to `request` for `rank`: the last
  // merge's delta frame when the rank holds the version before, else the model whole (float64).
  // Sets the fields "model_version" (and "delta_from"); counts the array in `tally`.
  void put_model(protocol::Envelope& request, int rank, std::span<const double> params,
                 protocol::CompressionTally& tally);
  // A client's model from its reply (array 0): `start`, the round's model, plus the decoded
  // delta. The span lives until the next call with the same `slot`.
  [[nodiscard]] std::span<const double> model_of(const protocol::Envelope& reply,
                                                 std::span<const double> start, std::size_t slot,
                                                 protocol::CompressionTally& tally);
  // After a merge: `params` (the round's model) += (merged - params) as its frame decodes; the
  // frame becomes the next rounds' delta.
  void advance(std::span<double> params, std::span<const double> merged);
  // A rank whose process may no longer hold a model of ours (lost, replaced, left, a slot taken
  // by a joiner): it is sent the next model whole.
  void forget(int rank);

 private:
  wire::HalfCodec codec_;
  std::uint64_t version_ = 1;        // of the coordinator's model; 1 is the starting one
  std::vector<std::uint64_t> held_;  // per rank, the version it was last sent; 0: none
  wire::Bytes delta_frame_;          // model_(version_) - model_(version_ - 1)
  std::vector<double> delta_;        // scratch
  std::vector<std::vector<double>> models_;  // clients' rebuilt models, one a slot
};

// A worker's side: the model it holds (the start of its last round) and its version.
class HalfModelsIn {
 public:
  // The round's start model from `request` (array 0): whole, or the held one plus the delta
  // (ProtocolError naming both versions when the worker does not hold the one it applies to).
  [[nodiscard]] std::span<const double> read_model(const protocol::Envelope& request,
                                                   wire::HalfCodec codec, std::size_t p);
  // The reply's frame: `trained` minus the round's start.
  [[nodiscard]] wire::Bytes encode_trained(std::span<const double> trained, wire::HalfCodec codec);

 private:
  std::vector<double> model_;
  std::uint64_t version_ = 0;  // 0: none
  std::vector<double> delta_;  // scratch
};

}  // namespace dt::modes

#pragma once
// aggregation.compression {topk: {ratio}}: a worker's error feedback. Each step the worker adds
// its residual (what it has not sent yet, float64) to the step's gradient sum, sends the k
// entries of largest magnitude of that total (transports/topk_codec.hpp) and keeps the rest as
// the next residual, so no part of any gradient is ever dropped, only delayed (the error
// feedback of Seide et al. 2014 and Stich et al. 2018; DGC without momentum correction).
//
// Owned by one worker's mode object; not thread-safe. Hot path: no allocation once warm.

#include "core/config/config.hpp"
#include "transports/wire.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dt::protocol {

class TopkFeedback {
 public:
  // residual += grad, then chooses the k = topk_count(ratio, p) entries of it to send: keys()
  // and values() until the next call; those entries of the residual become 0.
  void select(std::span<const double> grad, double ratio);
  // Nothing to send this step (a worker without rows): the residual (of p values) stays as is.
  void select_none(std::size_t p);
  [[nodiscard]] std::span<const std::uint32_t> keys() const noexcept { return keys_; }
  [[nodiscard]] std::span<const double> values() const noexcept { return values_; }
  // The frame of the entries in [begin, end) (keys local to begin), for server k's range.
  void encode(std::size_t begin, std::size_t end, wire::Bytes& out) const;

  // The residual, for a checkpoint, and back (an empty span: zero, as a fresh worker's).
  [[nodiscard]] std::span<const double> residual() const noexcept { return residual_; }
  void set_residual(std::span<const double> residual, std::size_t p);

 private:
  std::vector<double> residual_;
  std::vector<std::uint32_t> keys_;
  std::vector<double> values_;
  std::vector<std::uint32_t> order_;  // selection scratch
};

// The checkpoint array that holds rank r's residual ("topk_residual.<r>").
[[nodiscard]] std::string topk_residual_key(int rank);

}  // namespace dt::protocol

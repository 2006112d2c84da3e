#pragma once
// The values of each rank's next keys, read by the optimizer's lazy step in its own pass
// (Optimizer::step_indices_with) into the frames of the messages that carry them after it: the
// sparse star's step messages and a keyed parameter server's slices. In a wide model each of
// those keys is a cache miss; inside the step's arithmetic the CPU need not wait for it.
// Owned by the one thread that steps and sends.

#include "core/models/optim.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dt::models {

class NextValues {
 public:
  using Bytes = std::vector<std::byte>;  // wire::Bytes: a message frame
  // Before the step: forgets every frame not taken; `ranks` the most there can be.
  void clear(std::size_t ranks);
  // A frame for `rank`'s keys (ascending, below the parameters' size) and `extra` doubles after
  // their values (the caller's to write), for the message of `version`. Returns the frame's
  // doubles.
  double* add(std::size_t rank, std::span<const std::uint32_t> keys, std::size_t extra,
              std::uint64_t version);
  // What the step reads them with (Optimizer::LazyStepWork::gathers).
  [[nodiscard]] std::span<const Optimizer::LazyStepWork::Gather> gathers() const noexcept {
    return gathers_;
  }
  // The frame made for `rank` and `version`, handed over; nullopt when none was (the caller
  // reads the values itself).
  [[nodiscard]] std::optional<Bytes> take(std::size_t rank, std::uint64_t version);

 private:
  struct Frame {
    std::uint64_t version = UINT64_MAX;  // UINT64_MAX: none
    Bytes bytes;
  };
  std::vector<Frame> frames_;
  std::vector<Optimizer::LazyStepWork::Gather> gathers_;
};

}  // namespace dt::models

#pragma once
// Counter-based random numbers: every draw is a pure function of (seed, stream, index), so any
// process can generate row i of a synthetic dataset, or the permutation of epoch e, without
// generating what comes before it, and every platform gets the same bits. The standard library's
// distributions are implementation-defined, so they are never used where results must reproduce.

#include <cstdint>
#include <span>
#include <vector>

namespace dt::random {

[[nodiscard]] std::uint64_t splitmix64(std::uint64_t x) noexcept;
// A 64-bit hash of the four coordinates of a draw.
[[nodiscard]] std::uint64_t hash(std::uint64_t seed, std::uint64_t stream, std::uint64_t a,
                                 std::uint64_t b = 0) noexcept;
// Uniform in [0, 1) with 53 random bits.
[[nodiscard]] double uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t a,
                             std::uint64_t b = 0) noexcept;
// Standard normal (Box-Muller on two independent uniforms).
[[nodiscard]] double normal(std::uint64_t seed, std::uint64_t stream, std::uint64_t a,
                            std::uint64_t b = 0) noexcept;

// The draws of one (seed, stream, a) as b varies, bit for bit what hash/uniform/normal give,
// without recomputing the part of the hash the draws share (three of its four rounds): the
// synthetic data generator draws a whole row this way.
class DrawRow {
 public:
  DrawRow(std::uint64_t seed, std::uint64_t stream, std::uint64_t a) noexcept;
  [[nodiscard]] std::uint64_t hash(std::uint64_t b) const noexcept {
    return splitmix64(prefix_ ^ b);
  }
  [[nodiscard]] double normal(std::uint64_t b) const noexcept;

 private:
  std::uint64_t prefix_;
};

// A sequential generator for shuffles, seeded from the same coordinates.
class Generator {
 public:
  Generator(std::uint64_t seed, std::uint64_t stream, std::uint64_t a = 0) noexcept;
  [[nodiscard]] std::uint64_t next() noexcept;
  [[nodiscard]] double next_uniform() noexcept;
  // Uniform integer in [0, bound), bound > 0, without modulo bias.
  [[nodiscard]] std::uint64_t below(std::uint64_t bound) noexcept;
  [[nodiscard]] std::uint64_t state() const noexcept { return state_; }
  void set_state(std::uint64_t state) noexcept { state_ = state; }

 private:
  std::uint64_t state_;
};

// Fisher-Yates shuffle driven by a Generator: identical on every platform.
template <class T>
void shuffle(std::span<T> values, Generator& gen) noexcept {
  for (std::size_t i = values.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(gen.below(i));
    std::swap(values[i - 1], values[j]);
  }
}

// Named streams keep independent uses of one seed from colliding.
namespace stream {
inline constexpr std::uint64_t kSynthetic = 1;
inline constexpr std::uint64_t kSyntheticTruth = 2;
inline constexpr std::uint64_t kValidationSplit = 3;
inline constexpr std::uint64_t kShardPlan = 4;
inline constexpr std::uint64_t kEpochShuffle = 5;
inline constexpr std::uint64_t kInit = 6;
inline constexpr std::uint64_t kFaults = 7;
inline constexpr std::uint64_t kClientSampling = 8;
}  // namespace stream

}  // namespace dt::random

#include "base/random.hpp"

#include <cmath>
#include <numbers>

namespace dt::random {

std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

namespace {

// The first three of hash's four rounds.
std::uint64_t hash_prefix(std::uint64_t seed, std::uint64_t stream, std::uint64_t a) noexcept {
  std::uint64_t h = splitmix64(seed ^ 0x6A09E667F3BCC909ULL);
  h = splitmix64(h ^ stream);
  return splitmix64(h ^ a);
}

double to_unit(std::uint64_t bits) noexcept {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// The normal draw of a hash; normal() and DrawRow::normal share it, so they agree bit for bit.
double normal_of(std::uint64_t h) noexcept {
  // 1 - u keeps the logarithm's argument in (0, 1].
  const double u1 = 1.0 - to_unit(h);
  const double u2 = to_unit(splitmix64(h ^ 0xD1B54A32D192ED03ULL));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

std::uint64_t hash(std::uint64_t seed, std::uint64_t stream, std::uint64_t a,
                   std::uint64_t b) noexcept {
  return splitmix64(hash_prefix(seed, stream, a) ^ b);
}

double uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t a,
               std::uint64_t b) noexcept {
  return to_unit(hash(seed, stream, a, b));
}

double normal(std::uint64_t seed, std::uint64_t stream, std::uint64_t a, std::uint64_t b) noexcept {
  return normal_of(hash(seed, stream, a, b));
}

DrawRow::DrawRow(std::uint64_t seed, std::uint64_t stream, std::uint64_t a) noexcept
    : prefix_(hash_prefix(seed, stream, a)) {}

double DrawRow::normal(std::uint64_t b) const noexcept { return normal_of(hash(b)); }

Generator::Generator(std::uint64_t seed, std::uint64_t stream, std::uint64_t a) noexcept
    : state_(hash(seed, stream, a, 0x5851F42D4C957F2DULL)) {}

std::uint64_t Generator::next() noexcept {
  state_ += 0x9E3779B97F4A7C15ULL;
  return splitmix64(state_);
}

double Generator::next_uniform() noexcept { return to_unit(next()); }

std::uint64_t Generator::below(std::uint64_t bound) noexcept {
  // Rejection sampling on the top of the range: unbiased, and the same on every platform.
  const std::uint64_t limit = UINT64_MAX - (UINT64_MAX % bound);
  for (;;) {
    const std::uint64_t x = next();
    if (x < limit) return x % bound;
  }
}

}  // namespace dt::random

// The synthetic click log (clicks.hpp).

#include "core/data/clicks.hpp"
#include "base/random.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace dt::data {
namespace {

// Streams of the click log's draws (apart from data.synthetic's, base/random.hpp).
constexpr std::uint64_t kClickDraws = 0x436c69636b01;  // per row: a = row, b = field (0: label)
constexpr std::uint64_t kClickTruth = 0x436c69636b02;  // per token: a = field, b = rank
constexpr std::uint64_t kClickShape = 0x436c69636b03;  // cardinalities (seed 0): a = field

// A weight of about N(0, 1) from 64 hash bits: the sum of four 16-bit uniforms, centered and
// scaled to unit variance (cheaper than Box-Muller, and every platform gets the same bits).
// (Each term k / 65536 and every partial sum is exact in a double, so the sum is taken in
// integers and scaled once: the same bits as adding the four fractions.)
double unit_weight(std::uint64_t h) noexcept {
  std::uint64_t sum = 0;
  for (int k = 0; k < 4; ++k) sum += (h >> (16 * k)) & 0xffff;
  return (static_cast<double>(sum) / 65536.0 - 2.0) * std::sqrt(3.0);
}

// Two lowercase hex digits per byte value.
struct HexPairs {
  char pair[256][2];
  constexpr HexPairs() : pair{} {
    constexpr char kHex[] = "0123456789abcdef";
    for (int b = 0; b < 256; ++b) {
      pair[b][0] = kHex[b >> 4];
      pair[b][1] = kHex[b & 0xf];
    }
  }
};
constexpr HexPairs kHexPairs;

}  // namespace

std::uint64_t click_cardinality(int field) noexcept {
  const std::uint64_t h = random::hash(0, kClickShape, static_cast<std::uint64_t>(field));
  const int f = field - 1;
  if (f % 13 == 0) return 2 + h % 9;             // tiny: 2 .. 10 values
  if (f % 13 == 7) return 500'000 + h % 700'001;  // near 10^6: 0.5M .. 1.2M
  return 1'000 + h % 9'001;                      // the thousands
}

std::string click_header(int fields) {
  std::string out = "click";
  for (int f = 1; f <= fields; ++f) fmt::format_to(std::back_inserter(out), ",C{}", f);
  out += '\n';
  return out;
}

void click_rows(const ClickSpec& spec, std::uint64_t first, std::uint64_t count, std::string& out) {
  const auto fields = static_cast<std::size_t>(spec.fields);
  std::vector<std::uint64_t> card(fields);
  std::vector<double> log_n(fields);
  std::vector<random::DrawRow> truth;  // a field's tokens: hash(seed, kClickTruth, f + 1, rank)
  truth.reserve(fields);
  for (std::size_t f = 0; f < fields; ++f) {
    card[f] = click_cardinality(static_cast<int>(f) + 1);
    log_n[f] = std::log(static_cast<double>(card[f]) + 1.0);
    truth.emplace_back(spec.seed, kClickTruth, f + 1);
  }
  const double scale = 2.0 / std::sqrt(static_cast<double>(fields));
  std::string row(2 + 9 * fields, '\0');
  for (std::uint64_t i = first; i < first + count; ++i) {
    const random::DrawRow draws(spec.seed, kClickDraws, i);
    double logit = kClickBias;
    char* p = row.data() + 1;
    for (std::size_t f = 0; f < fields; ++f) {
      const double u = static_cast<double>(draws.hash(f + 1) >> 11) * 0x1.0p-53;
      const auto n = card[f];
      auto rank = static_cast<std::uint64_t>(std::exp(u * log_n[f])) - 1;
      if (rank >= n) rank = n - 1;  // rounding at u near 1
      const std::uint64_t token = truth[f].hash(rank);
      logit += scale * unit_weight(random::splitmix64(token));
      *p++ = ',';
      for (int k = 3; k >= 0; --k) {  // the token's low 32 bits, 8 hex digits
        std::memcpy(p, kHexPairs.pair[(token >> (8 * k)) & 0xff], 2);
        p += 2;
      }
    }
    *p++ = '\n';
    const double u = static_cast<double>(draws.hash(0) >> 11) * 0x1.0p-53;
    row[0] = u < 1.0 / (1.0 + std::exp(-logit)) ? '1' : '0';
    out.append(row.data(), static_cast<std::size_t>(p - row.data()));
  }
}

}  // namespace dt::data

// The synthetic click log (clicks.hpp).

#include "core/data/clicks.hpp"
#include "base/random.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace dt::data {
namespace {

// Streams of the click log's draws (apart from data.synthetic's, base/random.hpp).
constexpr std::uint64_t kClickDraws = 0x436c69636b01;  // per row: a = row, b = field (0: label)
constexpr std::uint64_t kClickTruth = 0x436c69636b02;  // per token: a = field, b = rank
constexpr std::uint64_t kClickShape = 0x436c69636b03;  // cardinalities (seed 0): a = field

// A weight of about N(0, 1) from 64 hash bits: the sum of four 16-bit uniforms, centered and
// scaled to unit variance (cheaper than Box-Muller, and every platform gets the same bits).
double unit_weight(std::uint64_t h) noexcept {
  double sum = 0.0;
  for (int k = 0; k < 4; ++k) sum += static_cast<double>((h >> (16 * k)) & 0xffff) / 65536.0;
  return (sum - 2.0) * std::sqrt(3.0);
}

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
  static constexpr char kHex[] = "0123456789abcdef";
  const auto fields = static_cast<std::size_t>(spec.fields);
  std::vector<std::uint64_t> card(fields);
  std::vector<double> log_n(fields);
  for (std::size_t f = 0; f < fields; ++f) {
    card[f] = click_cardinality(static_cast<int>(f) + 1);
    log_n[f] = std::log(static_cast<double>(card[f]) + 1.0);
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
      const std::uint64_t token = random::hash(spec.seed, kClickTruth, f + 1, rank);
      logit += scale * unit_weight(random::splitmix64(token));
      *p++ = ',';
      for (int k = 7; k >= 0; --k) *p++ = kHex[(token >> (4 * k)) & 0xf];
    }
    *p++ = '\n';
    const double u = static_cast<double>(draws.hash(0) >> 11) * 0x1.0p-53;
    row[0] = u < 1.0 / (1.0 + std::exp(-logit)) ? '1' : '0';
    out.append(row.data(), static_cast<std::size_t>(p - row.data()));
  }
}

}  // namespace dt::data

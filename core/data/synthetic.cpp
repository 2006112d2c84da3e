// Seeded synthetic datasets. Every value is a counter-based draw, so row i is the same whether a
// worker generates it alone, `disttrain gen` writes it, or a test generates rows in pieces.
//
// Draw coordinates (seed, stream, a, b):
//   feature x_ij       kSynthetic      a = i, b = j
//   noise e_i          kSynthetic      a = i, b = kNoiseSalt
//   blob class of i    kSynthetic      a = i, b = kClassSalt   (hash mod K)
//   weight w_j         kSyntheticTruth a = j, b = 0
//   bias b             kSyntheticTruth a = kBiasIndex, b = 0
//   blob center c_kj   kSyntheticTruth a = k, b = j + 1        (scaled by kCenterSpread)

#include "core/data/dataset.hpp"
#include "base/error.hpp"
#include "base/random.hpp"

#include <fmt/format.h>

namespace dt::data {
namespace {

constexpr std::uint64_t kNoiseSalt = std::uint64_t{1} << 62;
constexpr std::uint64_t kClassSalt = kNoiseSalt + 1;
constexpr std::uint64_t kBiasIndex = ~std::uint64_t{0};
// Centers ~ N(0, 3^2) per coordinate: with the default noise 0.1 the blobs are far apart, so
// blobs data is (deliberately) easy; raise `noise` to make the classes overlap.
constexpr double kCenterSpread = 3.0;

}  // namespace

void synthesize(const config::SyntheticConfig& spec, std::uint64_t seed, std::uint64_t first_row,
                std::uint64_t count, Eigen::Ref<RowMatrix> x, Eigen::Ref<Eigen::VectorXd> y) {
  using random::stream::kSynthetic;
  using random::stream::kSyntheticTruth;
  if (spec.features < 1) fail<DataError>("synthetic data: features must be at least 1, not {}", spec.features);
  const auto p = static_cast<Eigen::Index>(spec.features);
  if (x.rows() != static_cast<Eigen::Index>(count) || x.cols() != p ||
      y.size() != static_cast<Eigen::Index>(count)) {
    fail<DataError>("synthetic data: output of {}x{} and {} labels does not fit {} rows of {} features",
                    x.rows(), x.cols(), y.size(), count, p);
  }
  if (spec.kind == config::SyntheticKind::kBlobs && spec.classes < 2) {
    fail<DataError>("synthetic data: blobs needs at least 2 classes, not {}", spec.classes);
  }

  // The truth (weights, bias, centers) is the same for every row; draw it once per call.
  const bool blobs = spec.kind == config::SyntheticKind::kBlobs;
  const Eigen::Index truth_rows = blobs ? spec.classes : 1;
  RowMatrix truth(truth_rows, p);
  for (Eigen::Index k = 0; k < truth_rows; ++k) {
    for (Eigen::Index j = 0; j < p; ++j) {
      const auto uj = static_cast<std::uint64_t>(j);
      truth(k, j) = blobs ? kCenterSpread * random::normal(seed, kSyntheticTruth, static_cast<std::uint64_t>(k), uj + 1)
                          : random::normal(seed, kSyntheticTruth, uj, 0);
    }
  }
  const double bias = random::normal(seed, kSyntheticTruth, kBiasIndex, 0);

  for (Eigen::Index r = 0; r < static_cast<Eigen::Index>(count); ++r) {
    const std::uint64_t i = first_row + static_cast<std::uint64_t>(r);
    const random::DrawRow draws(seed, kSynthetic, i);  // the draws (seed, kSynthetic, i, b)
    if (blobs) {
      const auto k = draws.hash(kClassSalt) % static_cast<std::uint64_t>(spec.classes);
      for (Eigen::Index j = 0; j < p; ++j) {
        x(r, j) = truth(static_cast<Eigen::Index>(k), j) +
                  spec.noise * draws.normal(static_cast<std::uint64_t>(j));
      }
      y(r) = static_cast<double>(k);
      continue;
    }
    // Summed in a fixed order (not a vectorized dot product) so the label's bits do not depend
    // on the compiler's choice of SIMD width.
    double score = bias;
    for (Eigen::Index j = 0; j < p; ++j) {
      const double v = draws.normal(static_cast<std::uint64_t>(j));
      x(r, j) = v;
      score += v * truth(0, j);
    }
    score += spec.noise * draws.normal(kNoiseSalt);
    y(r) = spec.kind == config::SyntheticKind::kLinear ? score : (score > 0.0 ? 1.0 : 0.0);
  }
}

std::vector<std::string> synthetic_columns(const config::SyntheticConfig& spec) {
  std::vector<std::string> columns;
  columns.reserve(static_cast<std::size_t>(std::max(spec.features, 0)) + 1);
  for (int j = 0; j < spec.features; ++j) columns.push_back(fmt::format("x{}", j));
  columns.emplace_back("y");
  return columns;
}

}  // namespace dt::data

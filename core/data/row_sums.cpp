// column_stats's first pass, made by a loader (row_sums.hpp).

#include "core/data/row_sums.hpp"

#include <algorithm>
#include <limits>

namespace dt::data::detail {

// GCC's target_clones on x86-64 (AVX2 where the CPU has it, SSE2 otherwise), as the model
// kernels are built: no fused multiply-add either way (-ffp-contract=off), so the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define DT_SUMS_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DT_SUMS_CLONES
#endif

ColumnStats no_sums(std::size_t p) {
  ColumnStats s;
  s.mean.assign(p, 0.0);
  s.min.assign(p, std::numeric_limits<double>::infinity());
  s.max.assign(p, -std::numeric_limits<double>::infinity());
  return s;
}

DT_SUMS_CLONES void row_sums(const double* __restrict row, std::uint64_t p,
                             double* __restrict sum, double* __restrict lo,
                             double* __restrict hi, double* __restrict bad) {
  for (std::uint64_t c = 0; c < p; ++c) {
    const double v = row[c];
    bad[c] += v * 0.0;
    sum[c] += v;
    lo[c] = std::min(lo[c], v);
    hi[c] = std::max(hi[c], v);
  }
}

DT_SUMS_CLONES void four_row_sums(const double* __restrict r0, const double* __restrict r1,
                                  const double* __restrict r2, const double* __restrict r3,
                                  std::uint64_t p, double* __restrict sum, double* __restrict lo,
                                  double* __restrict hi, double* __restrict bad) {
  for (std::uint64_t c = 0; c < p; ++c) {
    const double a = r0[c], b = r1[c], d = r2[c], e = r3[c];
    bad[c] += ((a * 0.0 + b * 0.0) + d * 0.0) + e * 0.0;
    sum[c] = (((sum[c] + a) + b) + d) + e;
    lo[c] = std::min(std::min(std::min(std::min(lo[c], a), b), d), e);
    hi[c] = std::max(std::max(std::max(std::max(hi[c], a), b), d), e);
  }
}

}  // namespace dt::data::detail

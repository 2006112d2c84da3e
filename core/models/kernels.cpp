#include "core/models/kernels.hpp"

namespace dt::models::kernels {

// ifunc-based clones exist on x86-64 only; elsewhere (arm64: NEON is the baseline) the one
// build is already vector code. Not under ThreadSanitizer: it instruments the ifunc resolver,
// which the dynamic loader runs before the TSan runtime is up (a crash at start).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define DT_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DT_SIMD_CLONES
#endif

DT_SIMD_CLONES double dot(const double* a, const double* b, std::size_t n) noexcept {
  constexpr std::size_t kLanes = 8;
  double acc[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (std::size_t j = 0; i < n; ++i, ++j) acc[j] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

DT_SIMD_CLONES void axpy(double alpha, const double* x, double* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

DT_SIMD_CLONES void axpy4(const double* alpha, const double* const* x, double* y,
                          std::size_t n) noexcept {
  const double a0 = alpha[0], a1 = alpha[1], a2 = alpha[2], a3 = alpha[3];
  const double* __restrict x0 = x[0];
  const double* __restrict x1 = x[1];
  const double* __restrict x2 = x[2];
  const double* __restrict x3 = x[3];
  double* __restrict out = y;
  for (std::size_t i = 0; i < n; ++i) {
    out[i] += (a0 * x0[i] + a1 * x1[i]) + (a2 * x2[i] + a3 * x3[i]);
  }
}

DT_SIMD_CLONES void add_row_times(const double* x, const double* w, std::size_t p, std::size_t k,
                                  double* out) noexcept {
  double* __restrict o = out;
  for (std::size_t f = 0; f < p; ++f) {
    const double a = x[f];
    const double* __restrict row = w + f * k;
    for (std::size_t c = 0; c < k; ++c) o[c] += a * row[c];
  }
}

DT_SIMD_CLONES void add_outer(const double* x, std::size_t p, const double* d, std::size_t k,
                              double* g) noexcept {
  const double* __restrict dd = d;
  for (std::size_t f = 0; f < p; ++f) {
    const double a = x[f];
    double* __restrict row = g + f * k;
    for (std::size_t c = 0; c < k; ++c) row[c] += a * dd[c];
  }
}

}  // namespace dt::models::kernels

#pragma once
// The vector kernels of the row-by-row models (affine.cpp): a dot product and an axpy over
// contiguous doubles. Built for several instruction sets and chosen when the program loads
// (GCC's target_clones on x86-64: AVX2 where the CPU has it, SSE2 otherwise), so one portable
// binary runs wide SIMD where it can.
//
// Every variant gives the same bits: the dot product keeps 8 partial sums in fixed lanes
// (element i goes to lane i mod 8) and adds them in one fixed order, and nothing is contracted
// into fused multiply-adds (-ffp-contract=off). A run's results therefore do not depend on the
// machine's SIMD width, only on these rules.

#include <cstddef>

namespace dt::models::kernels {

// sum_i a[i] * b[i], in the fixed lane order described above.
[[nodiscard]] double dot(const double* a, const double* b, std::size_t n) noexcept;

// y[i] += alpha * x[i].
void axpy(double alpha, const double* x, double* y, std::size_t n) noexcept;

}  // namespace dt::models::kernels

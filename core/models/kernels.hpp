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

// y[i] += (alpha[0] * x[0][i] + alpha[1] * x[1][i]) + (alpha[2] * x[2][i] + alpha[3] * x[3][i]):
// four rows' contributions to a gradient in one pass over it, so y is loaded and stored once per
// four rows instead of once per row (the row-by-row axpy was the slower half of a linear step).
// The grouping is fixed, so it gives the same bits on every machine.
void axpy4(const double* alpha, const double* const* x, double* y, std::size_t n) noexcept;

// A row times a row-major p x k matrix, added to out: for f = 0 .. p-1 in turn,
// out[c] += x[f] * w[f * k + c]. The same bits as p calls of axpy(x[f], w + f * k, out, k), in
// one call: a softmax over 100,000 features made 100,000 calls of 10 values a row.
void add_row_times(const double* x, const double* w, std::size_t p, std::size_t k,
                   double* out) noexcept;

// The outer product of x (p values) and d (k values), added to a row-major p x k matrix:
// g[f * k + c] += x[f] * d[c]; the same bits as p calls of axpy(x[f], d, g + f * k, k).
void add_outer(const double* x, std::size_t p, const double* d, std::size_t k,
               double* g) noexcept;

}  // namespace dt::models::kernels

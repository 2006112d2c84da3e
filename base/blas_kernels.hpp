#pragma once
// Which kernels OpenBLAS multiplies with (the MLP's layers, tensor-parallel slices: Eigen hands
// its dense products to OpenBLAS, see CMakeLists.txt).
//
// Why: OpenBLAS picks its kernels for the CPU model when it loads, from a table of the models it
// knew when it was released. A CPU newer than the table gets the oldest x86-64 kernels: Debian
// bookworm's 0.3.21 on an Emerald Rapids Xeon (family 6, model 207) runs "Prescott" (SSE3)
// kernels, and the bench's MLP trained 2.5-3x slower than with the AVX-512 ones. When the CPU
// has AVX-512 (F, BW, DQ, VL) or AVX2 with FMA but OpenBLAS chose a core without them, this asks
// OpenBLAS again for "SkylakeX" or "Haswell" kernels. A core OpenBLAS did recognise (Zen,
// SkylakeX, Cooperlake, ...) is kept, and so is the user's own OPENBLAS_CORETYPE.
//
// Determinism: every process of a run on one host makes the same choice (the variable is set
// for the processes this one starts, which then load OpenBLAS with it), and a run's results
// stay bit-identical run to run. As before, an MLP's last bits may differ between CPUs whose
// kernels differ.
//
// Threading: call it first thing in main(), before any thread starts and before any product:
// it sets an environment variable and re-initialises OpenBLAS's kernel table.

#include <string>

namespace dt::blas {

// Upgrades OpenBLAS's kernels where it chose ones older than the CPU (see above). Returns the
// kernels in use ("SkylakeX"), or "" when the BLAS is not a runtime-dispatched OpenBLAS.
std::string use_the_cpus_kernels();

// The kernels OpenBLAS multiplies with now ("SkylakeX"), or "" as above.
[[nodiscard]] std::string kernels();

}  // namespace dt::blas

#include "base/blas_kernels.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <string_view>

// OpenBLAS's own entry points, weak: a BLAS without them (a build without runtime dispatch,
// another BLAS) leaves them null, and the choice is left to it.
extern "C" {
__attribute__((weak)) char* openblas_get_corename(void);
__attribute__((weak)) void gotoblas_dynamic_init(void);
__attribute__((weak)) void gotoblas_dynamic_quit(void);
}

namespace dt::blas {

namespace {

// OpenBLAS x86 cores without AVX2: what it falls back to for a CPU model it does not know
// (Prescott above all), and genuinely older CPUs (where the CPU check below fails anyway).
constexpr std::array<std::string_view, 17> kWithoutAvx2 = {
    "prescott", "core2",   "penryn",   "dunnington", "nehalem",   "sandybridge",
    "atom",     "katmai",  "coppermine", "northwood", "banias",   "opteron",
    "opteron_sse3", "barcelona", "bobcat", "bulldozer", "piledriver"};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The best OpenBLAS core this CPU (and its OS) can run, or nullptr to leave the choice alone.
const char* core_for_this_cpu() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

}  // namespace

std::string kernels() {
  if (openblas_get_corename == nullptr) return "";
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "";
}

std::string use_the_cpus_kernels() {
  const std::string chosen = kernels();
  if (chosen.empty() || gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr ||
      std::getenv("OPENBLAS_CORETYPE") != nullptr) {
    return chosen;
  }
  const char* better = core_for_this_cpu();
  const auto old = lower(chosen);
  if (better == nullptr ||
      std::find(kWithoutAvx2.begin(), kWithoutAvx2.end(), old) == kWithoutAvx2.end()) {
    return chosen;
  }
  // Set for the worker processes this one starts, which load OpenBLAS with it; and read by
  // gotoblas_dynamic_init here, which picks the kernel table again (nothing has multiplied yet).
  (void)::setenv("OPENBLAS_CORETYPE", better, 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  return kernels();
}

}  // namespace dt::blas

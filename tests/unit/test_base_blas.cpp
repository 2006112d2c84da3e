// base/blas_kernels: the unit binary's main asks OpenBLAS for the CPU's kernels, as disttrain's
// does; where the CPU has AVX2 and FMA the products never run a core without them.

#include "base/blas_kernels.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

TEST_CASE("blas: OpenBLAS multiplies with AVX2 kernels where the CPU has AVX2 and FMA") {
  std::string name = dt::blas::kernels();
  REQUIRE_FALSE(name.empty());  // the build links Debian's runtime-dispatched OpenBLAS
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    const std::set<std::string> without_avx2 = {
        "prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge", "atom", "katmai",
        "coppermine", "northwood", "banias", "opteron", "opteron_sse3", "barcelona", "bobcat",
        "bulldozer", "piledriver"};
    CHECK_MESSAGE(without_avx2.count(name) == 0, "OpenBLAS runs ", name);
  }
#endif
  // Asking again changes nothing (the environment now names the choice).
  CHECK(dt::blas::use_the_cpus_kernels() == dt::blas::kernels());
}

// The unit binary computes as disttrain itself does: subnormals flushed (base/subnormals.hpp),
// OpenBLAS on the CPU's kernels (base/blas_kernels.hpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include "base/blas_kernels.hpp"
#include "base/subnormals.hpp"

#include <doctest/doctest.h>

int main(int argc, char** argv) {
  dt::subnormals::flush();
  (void)dt::blas::use_the_cpus_kernels();
  return doctest::Context(argc, argv).run();
}

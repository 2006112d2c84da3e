// The unit binary computes as disttrain itself does: subnormals flushed (base/subnormals.hpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include "base/subnormals.hpp"

#include <doctest/doctest.h>

int main(int argc, char** argv) {
  dt::subnormals::flush();
  return doctest::Context(argc, argv).run();
}

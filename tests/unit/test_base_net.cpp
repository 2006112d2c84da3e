// base/net: hosts, wildcards, loopback, and the address of the route to a host.

#include "base/error.hpp"
#include "base/net.hpp"

#include <doctest/doctest.h>

TEST_CASE("net: hosts without ports, wildcards and loopback") {
  using namespace dt::net;
  CHECK(valid_host("node7"));
  CHECK(valid_host("10.1.2.3"));
  CHECK(valid_host("[fd00::5]"));
  CHECK_FALSE(valid_host(""));
  CHECK_FALSE(valid_host("10.1.2.3:29500"));  // a port
  CHECK_FALSE(valid_host("fd00::5"));         // IPv6 without brackets
  CHECK_FALSE(valid_host("tcp://node7"));
  CHECK_FALSE(valid_host("two words"));
  CHECK(is_wildcard("0.0.0.0"));
  CHECK(is_wildcard("*"));
  CHECK(is_wildcard("[::]"));
  CHECK_FALSE(is_wildcard("10.0.0.1"));
  CHECK(is_loopback("127.0.1.1"));
  CHECK(is_loopback("[::1]"));
  CHECK(is_loopback("localhost"));
  CHECK_FALSE(is_loopback("node7"));
  CHECK(host_of("[::1]:5555") == "[::1]");
  CHECK(port_of("[::1]:5555") == "5555");
  CHECK(host_of("node7:29500") == "node7");
}

TEST_CASE("net: the route to a host, and a clear error when it does not resolve") {
  // To this host's loopback the route leaves from loopback.
  CHECK(dt::net::route_address("127.0.0.1", "5555", "--connect x") == "127.0.0.1");
  CHECK(dt::net::route_address("[::1]", "5555", "--connect x").value_or("[::1]") == "[::1]");
  CHECK_THROWS_WITH_AS((void)dt::net::route_address("no-such-host.invalid", "1", "--connect y"),
                       doctest::Contains("--connect y: cannot resolve host 'no-such-host.invalid'"),
                       dt::UsageError);
  // With a default route, an address of this host that others can be told; without, nothing.
  if (const auto own = dt::net::default_route_address(false)) {
    CHECK(dt::net::valid_host(*own));
    CHECK_FALSE(dt::net::is_wildcard(*own));
  }
}

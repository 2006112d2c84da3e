#pragma once
// Host names and addresses for tcp runs that span hosts: which local address other hosts should
// be told (the "bound to the wrong interface" trap of other tools), and whether a name resolves.

#include <optional>
#include <string>

namespace dt::net {

// "0.0.0.0", "*", "[::]": a listener on every interface, which no other host can connect to
// by that name.
[[nodiscard]] bool is_wildcard(const std::string& host);

// A host name or address, an IPv6 one in brackets ([fd00::5]), without a port or a scheme.
[[nodiscard]] bool valid_host(const std::string& host);

// 127.0.0.0/8, [::1], localhost.
[[nodiscard]] bool is_loopback(const std::string& host);

// This host's address (numeric, an IPv6 one in brackets) on its route to `host`:`port`, as the
// kernel would pick it. A datagram socket "connected" there sends nothing. nullopt when there is
// no route. UsageError when `host` does not resolve, naming `what` (e.g. "--connect tcp://h:p").
[[nodiscard]] std::optional<std::string> route_address(const std::string& host,
                                                       const std::string& port,
                                                       const std::string& what);

// This host's address on its default route (IPv4, or IPv6 when `ipv6`): what a listener on
// every interface advertises when told nothing else. nullopt without a default route.
[[nodiscard]] std::optional<std::string> default_route_address(bool ipv6);

// This host's name (gethostname), "unknown" when it has none.
[[nodiscard]] std::string this_host();

// The host part of host:port, and the port.
[[nodiscard]] std::string host_of(const std::string& address);
[[nodiscard]] std::string port_of(const std::string& address);

}  // namespace dt::net

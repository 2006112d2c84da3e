#include "base/net.hpp"

#include "base/error.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

namespace dt::net {
namespace {

std::string unbracketed(const std::string& host) {
  return host.size() > 2 && host.front() == '[' && host.back() == ']'
             ? host.substr(1, host.size() - 2)
             : host;
}

// The local address a datagram socket connected to `to` would send from; nullopt without a route.
std::optional<std::string> local_address_towards(const sockaddr* to, socklen_t length, int family) {
  const int fd = ::socket(family, SOCK_DGRAM, 0);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> out;
  if (::connect(fd, to, length) == 0) {
    sockaddr_storage addr{};
    socklen_t size = sizeof addr;
    char text[INET6_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) == 0 &&
        ::getnameinfo(reinterpret_cast<sockaddr*>(&addr), size, text, sizeof text, nullptr, 0,
                      NI_NUMERICHOST) == 0) {
      out = addr.ss_family == AF_INET6 ? fmt::format("[{}]", text) : std::string(text);
    }
  }
  ::close(fd);
  return out;
}

}  // namespace

bool valid_host(const std::string& host) {
  if (host.empty() || host.find_first_of(" \t/") != std::string::npos) return false;
  const bool bracketed = host.front() == '[' && host.back() == ']' && host.size() > 2;
  return bracketed || host.find_first_of(":[]") == std::string::npos;
}

bool is_wildcard(const std::string& host) {
  const std::string h = unbracketed(host);
  return h == "0.0.0.0" || h == "*" || h == "::" || h == "0:0:0:0:0:0:0:0";
}

bool is_loopback(const std::string& host) {
  return host.starts_with("127.") || unbracketed(host) == "::1" || host == "localhost";
}

std::string this_host() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "unknown";
}

std::string host_of(const std::string& address) {
  const auto colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

std::string port_of(const std::string& address) {
  const auto colon = address.rfind(':');
  return colon == std::string::npos ? std::string() : address.substr(colon + 1);
}

std::optional<std::string> route_address(const std::string& host, const std::string& port,
                                         const std::string& what) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string name = unbracketed(host);
  if (const int rc = ::getaddrinfo(name.c_str(), port.c_str(), &hints, &found); rc != 0) {
    fail<UsageError>("{}: cannot resolve host '{}': {}", what, name, ::gai_strerror(rc));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
  return local_address_towards(found->ai_addr, found->ai_addrlen, found->ai_family);
}

std::optional<std::string> default_route_address(bool ipv6) {
  // Documentation addresses (RFC 5737, RFC 3849): never answered, only routed by the default
  // route; nothing is sent to them.
  if (ipv6) {
    sockaddr_in6 to{};
    to.sin6_family = AF_INET6;
    to.sin6_port = htons(9);
    ::inet_pton(AF_INET6, "2001:db8::1", &to.sin6_addr);
    return local_address_towards(reinterpret_cast<sockaddr*>(&to), sizeof to, AF_INET6);
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  ::inet_pton(AF_INET, "192.0.2.1", &to.sin_addr);
  return local_address_towards(reinterpret_cast<sockaddr*>(&to), sizeof to, AF_INET);
}

}  // namespace dt::net

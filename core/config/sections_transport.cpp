// transport: how the processes of a run reach each other, where the coordinator listens and
// what it tells other hosts, and CURVE security.

#include <fmt/format.h>

#include <climits>

#include "core/config/internal.hpp"
#include "base/net.hpp"
#include "base/text.hpp"

namespace dt::config::detail {
namespace {

bool valid_address(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  const std::string port = address.substr(colon + 1);
  const bool digits = !port.empty() && port.find_first_not_of("0123456789") == std::string::npos;
  const auto number = digits ? parse_integer(port) : std::nullopt;
  return number && *number <= 65535 && net::valid_host(address.substr(0, colon));
}

// Loopback only: 127.0.0.0/8 or [::1]. A training port open to the network would take
// gradients from anyone without authentication (transport.security: curve).
bool loopback_host(const std::string& address) {
  const std::string host = address.substr(0, address.rfind(':'));
  return host.starts_with("127.") || host == "[::1]";
}

void parse_keys(const Section& s, const std::filesystem::path& base_dir, TransportConfig& c) {
  if (s.has("secret")) c.secret_key = resolve(base_dir, s.string("secret", ""));
  if (s.has("authorized")) c.authorized_keys = resolve(base_dir, s.string("authorized", ""));
  if (s.has("server")) c.server_key = resolve(base_dir, s.string("server", ""));
}

void parse_advertise(const Section& s, TransportConfig& c) {
  c.advertise = s.string("advertise", c.advertise);
  if (!s.has("advertise")) return;
  if (!net::valid_host(c.advertise)) {
    s.fail("advertise",
           fmt::format("expected a host name or address without a port (every listener "
                       "advertises its own port; an IPv6 address goes in brackets: [fd00::5]), "
                       "got {}",
                       describe(s.node("advertise"))));
  }
  if (net::is_wildcard(c.advertise)) {
    s.fail("advertise", fmt::format("{} means every interface, which no other host can connect "
                                    "to; give this host's name or address as the others reach it",
                                    c.advertise));
  }
}

}  // namespace

TransportConfig parse_transport(const Section& s, const std::filesystem::path& base_dir) {
  TransportConfig c;
  c.type = s.choice("type", c.type, kTransportTypes);
  c.address = s.string("address", c.address);
  if (!valid_address(c.address)) {
    s.fail("address", fmt::format("expected host:port with a port from 0 to 65535, got {}",
                                  describe(s.node("address"))));
  }
  parse_advertise(s, c);
  c.remote_workers = to_int(s.integer("remote_workers", c.remote_workers, 0, INT_MAX));
  c.join_timeout_ms = to_int(s.integer("join_timeout_ms", c.join_timeout_ms, 1000, INT_MAX));
  c.security = s.choice("security", c.security, kSecurityModes);
  c.max_message_bytes = static_cast<std::uint64_t>(
      s.integer("max_message_bytes", static_cast<std::int64_t>(c.max_message_bytes),
                std::int64_t{1} << 20, INT64_MAX));
  if (s.has("keys")) {
    if (c.security != SecurityMode::kCurve) {
      s.fail("keys", "key files are used with transport.security: curve; set it, or remove "
                     "transport.keys");
    }
    parse_keys(s.section("keys"), base_dir, c);
  }
  if (c.security == SecurityMode::kCurve && c.type == TransportType::kInproc) {
    s.fail("security", "curve protects links between processes, and with transport.type inproc "
                       "the workers are threads of one process; use type ipc or tcp, or "
                       "security: none");
  }
  if (!loopback_host(c.address) && c.security != SecurityMode::kCurve) {
    s.fail("address",
           fmt::format("{} is not a loopback address, and listening where other machines can "
                       "connect needs authentication: set transport.security: curve, make key "
                       "pairs with `disttrain keygen coordinator` and `disttrain keygen worker`, "
                       "and give transport.keys: {{secret: coordinator.key, authorized: "
                       "worker.pub}} (see docs/security.md); or listen on 127.0.0.1:PORT",
                       describe(s.node("address"))));
  }
  return c;
}

void check_transport(const Section& root, const Config& c) {
  const Section transport = root.section("transport");
  if (!c.transport.advertise.empty() && c.transport.type != TransportType::kTcp) {
    transport.fail("advertise",
                   fmt::format("is the address other hosts connect to over tcp, but "
                               "transport.type is {}; set transport.type: tcp, or remove "
                               "transport.advertise",
                               name_of(c.transport.type)));
  }
  if (c.transport.remote_workers == 0) return;
  if (c.transport.type != TransportType::kTcp) {
    transport.fail("remote_workers",
                   fmt::format("is {}, but workers on other hosts join over tcp and "
                               "transport.type is {}; set transport.type: tcp (or "
                               "`disttrain run --listen HOST:PORT`)",
                               c.transport.remote_workers, name_of(c.transport.type)));
  }
  if (c.transport.remote_workers > worker_count(c)) {
    transport.fail("remote_workers",
                   fmt::format("is {}, but the run has only {} workers (shards.count x "
                               "parallelism.tensor); use at most {}",
                               c.transport.remote_workers, worker_count(c), worker_count(c)));
  }
}

}  // namespace dt::config::detail

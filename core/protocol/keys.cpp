#include "core/protocol/keys.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <cstdlib>

namespace dt::roles {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

std::string origin_of(const char* name) { return fmt::format("${}", name); }

}  // namespace

RunKeys run_keys(const config::Config& config) {
  RunKeys keys;
  const auto& t = config.transport;
  if (t.security != config::SecurityMode::kCurve) return keys;
  auto& s = keys.coordinator;
  s.curve = true;
  const bool remote = t.remote_workers > 0;
  if (!t.secret_key.empty()) {
    s.own = transport::read_key_pair_file(t.secret_key);
  } else if (const char* text = env(kSecretKeyEnv)) {
    s.own = transport::parse_key_pair(text, origin_of(kSecretKeyEnv));
  } else if (remote) {
    fail<ConfigError>("transport.security curve with workers that join (transport.remote_workers "
                      "{}): they need the coordinator's public key beforehand, so give its key "
                      "pair: `disttrain keygen coordinator`, then transport.keys.secret: "
                      "coordinator.key (or ${}), and hand coordinator.pub to the workers",
                      t.remote_workers, kSecretKeyEnv);
  } else {
    s.own = transport::generate_key_pair();
  }
  s.server_key = s.own.public_key;
  if (!t.authorized_keys.empty()) {
    s.authorized = transport::read_public_keys_file(t.authorized_keys);
  } else if (const char* text = env(kAuthorizedKeysEnv)) {
    s.authorized = transport::parse_key_list(text, origin_of(kAuthorizedKeysEnv));
  } else if (remote) {
    fail<ConfigError>("transport.security curve with workers that join (transport.remote_workers "
                      "{}), but no client key is authorized, so none could join: give "
                      "transport.keys.authorized: a file of their public keys (the .pub files of "
                      "`disttrain keygen`, one per line), or ${}",
                      t.remote_workers, kAuthorizedKeysEnv);
  }
  if (t.remote_workers < config::worker_count(config)) {
    // The run's own workers: one pair for all of them, never written anywhere.
    const auto local = transport::generate_key_pair();
    s.authorized.push_back(local.public_key);
    keys.child_environment = {fmt::format("{}={}", kSecretKeyEnv, local.secret_key),
                              fmt::format("{}={}", kServerKeyEnv, s.own.public_key)};
  }
  keys.peer = transport::generate_key_pair();
  return keys;
}

transport::Security worker_keys(const std::filesystem::path& secret_file,
                                const std::filesystem::path& server_file, bool required) {
  transport::Security s;
  bool have_secret = true;
  if (!secret_file.empty()) {
    s.own = transport::read_key_pair_file(secret_file);
  } else if (const char* text = env(kSecretKeyEnv)) {
    s.own = transport::parse_key_pair(text, origin_of(kSecretKeyEnv));
  } else {
    have_secret = false;
  }
  if (!server_file.empty()) {
    s.server_key = transport::read_public_key_file(server_file);
  } else if (const char* text = env(kServerKeyEnv)) {
    const auto list = transport::parse_key_list(text, origin_of(kServerKeyEnv));
    if (list.size() != 1) {
      fail<ConfigError>("${} holds {} keys; give the coordinator's one public key",
                        kServerKeyEnv, list.size());
    }
    s.server_key = list.front();
  }
  const bool have_server = !s.server_key.empty();
  if (have_secret != have_server) {
    fail<ConfigError>("a worker with CURVE security needs both its own key pair (--key FILE or "
                      "${}) and the coordinator's public key (--server-key FILE or ${}); {} is "
                      "missing",
                      kSecretKeyEnv, kServerKeyEnv,
                      have_secret ? "the coordinator's public key" : "this worker's key pair");
  }
  if (!have_secret && required) {
    fail<ConfigError>("transport.security is curve, so this worker needs its key pair and the "
                      "coordinator's public key: transport.keys.secret and transport.keys.server "
                      "(or ${} and ${})",
                      kSecretKeyEnv, kServerKeyEnv);
  }
  s.curve = have_secret;
  return s;
}

transport::Security peer_security(const transport::KeyPair& peer) {
  return {true, peer, peer.public_key, {peer.public_key}};
}

}  // namespace dt::roles

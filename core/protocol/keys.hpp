#pragma once
// Where the CURVE keys of a run come from (transport.security: curve), for each kind of process.
// Explicit files first (flags, then the config's transport.keys), then the environment; never
// argv, where other users of the host could read them (ps, /proc/PID/cmdline).
//   coordinator  its key pair: keys.secret, else $DISTTRAIN_SECRET_KEY, else one made for the run
//                (only when every worker is local: a worker that joins needs the public half
//                beforehand). Admitted clients: keys.authorized, else $DISTTRAIN_AUTHORIZED_KEYS,
//                plus the run's own local workers.
//   local worker a key pair made for the run's local workers and the coordinator's public key,
//                handed over in the child's environment.
//   joining      its key pair and the coordinator's public key from --key/--server-key (or the
//                config's keys.secret/keys.server under a launcher), else $DISTTRAIN_SECRET_KEY
//                and $DISTTRAIN_SERVER_KEY.
//   peer links   (ring, tensor) one key pair per run, made by the coordinator and sent to each
//                admitted worker in its Setup, over the encrypted link: a worker's peer
//                listener serves it and admits only it.

#include "core/config/config.hpp"
#include "transports/security.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace dt::roles {

inline constexpr const char* kSecretKeyEnv = "DISTTRAIN_SECRET_KEY";
inline constexpr const char* kServerKeyEnv = "DISTTRAIN_SERVER_KEY";
inline constexpr const char* kAuthorizedKeysEnv = "DISTTRAIN_AUTHORIZED_KEYS";

struct RunKeys {
  transport::Security coordinator;             // curve false with security none
  std::vector<std::string> child_environment;  // NAME=VALUE for local worker processes
  transport::KeyPair peer;                     // empty with security none
};

// Reads and checks every key the run needs: ConfigError (exit 2) naming the file or variable,
// what is wrong and what to do. With security none: nothing (and no environment for children).
[[nodiscard]] RunKeys run_keys(const config::Config& config);

// A worker that joins: keys from the files when given, else from the environment. Both halves
// or neither: neither gives plain ZeroMQ (curve false), which `required` turns into an error.
[[nodiscard]] transport::Security worker_keys(const std::filesystem::path& secret_file,
                                              const std::filesystem::path& server_file,
                                              bool required);

// The Security of a worker's peer links, from the key pair its Setup carried.
[[nodiscard]] transport::Security peer_security(const transport::KeyPair& peer);

}  // namespace dt::roles

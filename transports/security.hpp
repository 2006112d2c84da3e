#pragma once
// CURVE security for the transport (transport.security: curve): key pairs, the key file formats,
// and the ZAP decision (ZeroMQ RFC 27) that admits only known client keys. Keys are Z85 text,
// 40 characters for 32 bytes, as `disttrain keygen` writes them and ZeroMQ takes them.
//
// Key files:
//   PREFIX.key  a key pair, secret: "public-key: Z85" and "secret-key: Z85" lines; '#' starts
//               a comment. The secret is also accepted alone (a bare Z85 line).
//   PREFIX.pub  public keys, one per line, each optionally followed by a label ("KEY worker-3");
//               '#' comments and blank lines are skipped. An authorized-keys file is the
//               same: `cat a.pub b.pub > workers.pub`.

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dt::transport {

inline constexpr std::size_t kKeyLength = 40;  // Z85 characters of a 32-byte key

struct KeyPair {
  std::string public_key;
  std::string secret_key;
};

// What a Transport does with transport.security: curve. Every listener is a CURVE server with
// the `own` pair and admits only clients whose public key is in `authorized` (checked by the
// Transport's ZAP handler); every connection is a CURVE client with the `own` pair that trusts
// only a listener whose public key is `server_key`. curve false: plain ZeroMQ (NULL mechanism).
struct Security {
  bool curve = false;
  KeyPair own;
  std::string server_key;
  std::vector<std::string> authorized;
};

// A fresh key pair (libsodium through ZeroMQ). TransportError when this ZeroMQ lacks CURVE.
[[nodiscard]] KeyPair generate_key_pair();
// True for 40 characters of the Z85 alphabet that decode to a 32-byte key.
[[nodiscard]] bool is_key(std::string_view text);
// The public half of a secret key (both Z85); ConfigError when `secret` is no key.
[[nodiscard]] std::string public_key_of(const std::string& secret);

// Parsers over text, so that messages are pinned in unit tests; `origin` names the file (or the
// environment variable) in errors, which say the line, what is wrong and what to do
// (ConfigError). Key material itself never appears in a message.
[[nodiscard]] KeyPair parse_key_pair(std::string_view text, std::string_view origin);
// At least one key; a file with none is an error (it would admit nobody).
[[nodiscard]] std::vector<std::string> parse_public_keys(std::string_view text,
                                                         std::string_view origin);
// The same over whitespace- or comma-separated keys on one line (an environment variable).
[[nodiscard]] std::vector<std::string> parse_key_list(std::string_view text,
                                                      std::string_view origin);

// Files: ConfigError when missing or unreadable. A secret key file that others than its owner
// may read (mode & 077) is refused, as ssh refuses such a private key: `chmod 600 FILE`.
[[nodiscard]] KeyPair read_key_pair_file(const std::filesystem::path& path);
[[nodiscard]] std::vector<std::string> read_public_keys_file(const std::filesystem::path& path);
// Exactly one key: the public key of the listener a connection trusts (PREFIX.pub).
[[nodiscard]] std::string read_public_key_file(const std::filesystem::path& path);

// The text of PREFIX.key and PREFIX.pub for a pair (`name` labels the public key).
[[nodiscard]] std::string key_pair_file_text(const KeyPair& pair);
[[nodiscard]] std::string public_key_file_text(const KeyPair& pair, std::string_view name);

// ZAP (RFC 27): the answer to one request, whose frames are version "1.0", request id,
// domain, address, routing id, mechanism, credentials... A CURVE request whose 32-byte client
// key is in `authorized` gets "200"; anything else (another mechanism, a malformed request, an
// unknown key) gets "400", or "500" for a request this handler cannot read.
struct ZapDecision {
  std::string status_code;  // "200", "400", "500"
  std::string status_text;
  std::string client_key;  // Z85 of the presented key ("" when there was none)
  std::string address;     // the peer's address as ZeroMQ reported it
};
[[nodiscard]] ZapDecision decide_zap(const std::vector<std::string>& request,
                                     const std::set<std::string>& authorized);

}  // namespace dt::transport

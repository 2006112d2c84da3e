#include "transports/security.hpp"

#include "base/error.hpp"
#include "base/files.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <zmq.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace dt::transport {
namespace {

constexpr std::size_t kKeyBytes = 32;

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// Each line of `text` that is neither blank nor a comment, trimmed; numbered from 1. Only a
// line that starts with '#' is a comment: '#' and ':' are Z85 characters, so a key may hold them.
template <class F>
void for_each_line(std::string_view text, F&& f) {
  int number = 0;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++number;
    if (!line.empty() && line.front() != '#') f(number, line);
  }
}

// "public-key: KEY" -> ("public-key", "KEY"); a bare KEY -> ("", "KEY").
std::pair<std::string_view, std::string_view> split_entry(std::string_view line) {
  for (const std::string_view name : {"public-key", "secret-key"}) {
    if (line.starts_with(name) && line.substr(name.size()).starts_with(':')) {
      return {name, trim(line.substr(name.size() + 1))};
    }
  }
  return {"", line};
}

[[noreturn]] void bad_key(std::string_view origin, int line, std::string_view what) {
  fail<ConfigError>("{}{}: {}", origin, line > 0 ? fmt::format(":{}", line) : std::string(), what);
}

std::string checked_key(std::string_view word, std::string_view origin, int line,
                        std::string_view kind) {
  if (!is_key(word)) {
    bad_key(origin, line,
            fmt::format("expected a {} key (40 characters of Z85, as `disttrain keygen` writes), "
                        "got {} characters that are not one",
                        kind, word.size()));
  }
  return std::string(word);
}

std::string to_z85(const std::uint8_t* bytes) {
  std::array<char, kKeyLength + 1> text{};
  if (zmq_z85_encode(text.data(), bytes, kKeyBytes) == nullptr) return {};
  return std::string(text.data(), kKeyLength);
}

// A key file is a few lines (a list of client keys: a line each); the bound keeps an endless
// file from filling memory.
constexpr std::uint64_t kMaxKeyFileBytes = 16 << 20;

std::string read_key_file(const std::filesystem::path& path, std::string_view what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    fail<ConfigError>("{} {} does not exist; create one with `disttrain keygen PREFIX`", what,
                      path.string());
  }
  try {
    return files::read_all(path, kMaxKeyFileBytes);
  } catch (const files::UnreadableFile& e) {
    fail<ConfigError>("{} {} cannot be read: {}", what, path.string(), e.reason());
  }
}

}  // namespace

KeyPair generate_key_pair() {
  if (zmq_has("curve") == 0) {
    fail<TransportError>("this ZeroMQ library was built without CURVE security; install one "
                         "with libsodium (Debian: libzmq5) or use transport.security: none");
  }
  std::array<char, kKeyLength + 1> pub{}, sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0) {
    fail<TransportError>("cannot generate a CURVE key pair: {}", zmq_strerror(zmq_errno()));
  }
  return {std::string(pub.data(), kKeyLength), std::string(sec.data(), kKeyLength)};
}

bool is_key(std::string_view text) {
  if (text.size() != kKeyLength) return false;
  const std::string copy(text);  // zmq_z85_decode reads a terminated string
  std::array<std::uint8_t, kKeyBytes> bytes{};
  return zmq_z85_decode(bytes.data(), copy.c_str()) != nullptr;
}

std::string public_key_of(const std::string& secret) {
  if (!is_key(secret)) fail<ConfigError>("not a CURVE secret key (40 characters of Z85)");
  std::array<char, kKeyLength + 1> pub{};
  if (zmq_curve_public(pub.data(), secret.c_str()) != 0) {
    fail<TransportError>("cannot derive a CURVE public key: {}", zmq_strerror(zmq_errno()));
  }
  return std::string(pub.data(), kKeyLength);
}

KeyPair parse_key_pair(std::string_view text, std::string_view origin) {
  KeyPair pair;
  int public_line = 0;
  for_each_line(text, [&](int number, std::string_view line) {
    const auto [name, value] = split_entry(line);
    if (name == "public-key") {
      pair.public_key = checked_key(value, origin, number, "public");
      public_line = number;
    } else if (name == "secret-key" || value.size() == kKeyLength) {
      if (!pair.secret_key.empty()) bad_key(origin, number, "a second secret key; keep one");
      pair.secret_key = checked_key(value, origin, number, "secret");
    } else {
      bad_key(origin, number, "unexpected text; a key file has 'public-key: KEY' and "
                              "'secret-key: KEY' lines, as `disttrain keygen` writes them");
    }
  });
  if (pair.secret_key.empty()) {
    bad_key(origin, 0, "no secret key in it; write a key pair with `disttrain keygen PREFIX` and "
                       "give PREFIX.key (the .pub file is the public half only)");
  }
  const std::string derived = public_key_of(pair.secret_key);
  if (!pair.public_key.empty() && pair.public_key != derived) {
    bad_key(origin, public_line, "the public key does not belong to the secret key in the same "
                                 "file; write a new pair with `disttrain keygen`");
  }
  pair.public_key = derived;
  return pair;
}

std::vector<std::string> parse_public_keys(std::string_view text, std::string_view origin) {
  std::vector<std::string> keys;
  for_each_line(text, [&](int number, std::string_view line) {
    const auto [name, value] = split_entry(line);
    if (name == "secret-key") {
      bad_key(origin, number, "holds a secret key; give the public key file (PREFIX.pub) here "
                              "and keep PREFIX.key private");
    }
    const auto space = value.find_first_of(" \t");  // a label may follow the key
    keys.push_back(checked_key(value.substr(0, space), origin, number, "public"));
  });
  if (keys.empty()) {
    bad_key(origin, 0, "has no public key in it (one Z85 key per line, as in the .pub files "
                       "`disttrain keygen` writes)");
  }
  return keys;
}

std::vector<std::string> parse_key_list(std::string_view text, std::string_view origin) {
  std::vector<std::string> keys;
  std::size_t at = 0;
  int index = 0;
  while (at < text.size()) {
    const auto start = text.find_first_not_of(" \t\r\n,", at);
    if (start == std::string_view::npos) break;
    const auto end = text.find_first_of(" \t\r\n,", start);
    const auto word = text.substr(start, end == std::string_view::npos ? end : end - start);
    ++index;
    if (!is_key(word)) {
      fail<ConfigError>("{}: item {} is not a public key (40 characters of Z85); separate keys "
                        "with spaces or commas",
                        origin, index);
    }
    keys.emplace_back(word);
    at = end == std::string_view::npos ? text.size() : end;
  }
  if (keys.empty()) fail<ConfigError>("{}: is empty; give at least one public key", origin);
  return keys;
}

KeyPair read_key_pair_file(const std::filesystem::path& path) {
  const std::string text = read_key_file(path, "secret key file");
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    fail<ConfigError>("secret key file {} can be read by others (mode {:03o}); make it private "
                      "with `chmod 600 {}`",
                      path.string(), st.st_mode & 0777, path.string());
  }
  return parse_key_pair(text, path.string());
}

std::vector<std::string> read_public_keys_file(const std::filesystem::path& path) {
  return parse_public_keys(read_key_file(path, "public key file"), path.string());
}

std::string read_public_key_file(const std::filesystem::path& path) {
  const auto keys = read_public_keys_file(path);
  if (keys.size() != 1) {
    fail<ConfigError>("{} holds {} public keys; the server key file holds exactly one (the "
                      "coordinator's PREFIX.pub)",
                      path.string(), keys.size());
  }
  return keys.front();
}

std::string key_pair_file_text(const KeyPair& pair) {
  return fmt::format("# disttrain CURVE key pair. Keep this file secret (mode 600): whoever has\n"
                     "# it can join runs as this key. Share only the .pub file.\n"
                     "public-key: {}\nsecret-key: {}\n",
                     pair.public_key, pair.secret_key);
}

std::string public_key_file_text(const KeyPair& pair, std::string_view name) {
  return fmt::format("# disttrain CURVE public key of {}.key\n{} {}\n", name, pair.public_key,
                     name);
}

ZapDecision decide_zap(const std::vector<std::string>& request,
                       const std::set<std::string>& authorized) {
  ZapDecision d;
  if (request.size() < 6 || request[0] != "1.0") {
    d.status_code = "500";
    d.status_text = "malformed ZAP request";
    return d;
  }
  d.address = request[3];
  const std::string& mechanism = request[5];
  if (mechanism != "CURVE") {
    d.status_code = "400";
    d.status_text = fmt::format("mechanism {} is not allowed; CURVE is required",
                                mechanism.substr(0, 16));
    return d;
  }
  if (request.size() != 7 || request[6].size() != kKeyBytes) {
    d.status_code = "400";
    d.status_text = "malformed CURVE credentials";
    return d;
  }
  d.client_key = to_z85(reinterpret_cast<const std::uint8_t*>(request[6].data()));
  if (d.client_key.empty() || authorized.count(d.client_key) == 0) {
    d.status_code = "400";
    d.status_text = "client key not authorized";
    return d;
  }
  d.status_code = "200";
  d.status_text = "OK";
  return d;
}

}  // namespace dt::transport

#include "core/protocol/drop_log.hpp"

#include "base/log.hpp"

#include <fmt/format.h>

namespace dt::roles {
namespace {

// A peer identity is network-supplied bytes (ZeroMQ makes up binary ones): printable ASCII
// as is, anything else as \xNN, cut to a readable length.
std::string printable(const std::string& peer) {
  constexpr std::size_t kMax = 64;
  std::string out;
  for (std::size_t i = 0; i < peer.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(peer[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (peer.size() > kMax) out += "...";
  return out;
}

}  // namespace

void DropLog::drop(const std::string& peer, const std::string& why) {
  if (!log_.count(peer)) return;
  log::warn("dropped a message from '{}': {} (further ones from it are counted, not named)",
            printable(peer), why);
}

}  // namespace dt::roles

#pragma once
// Readers of the step-path messages whose fields are more than one number or one array (those
// are read with protocol::count, number and doubles where they are used): lists of ranks and
// endpoints, flags, the rows a survivor took over. A peer's message is outside input: a field
// that is missing, of another type or out of range is a ProtocolError naming the message, the
// sender and the field, never an exception of the JSON library or a value cast out of range.
// tests/fuzz/fuzz_step.cpp feeds them hostile messages.

#include "core/protocol/protocol.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt::protocol {

// An optional true/false field; absent: `otherwise`.
[[nodiscard]] bool flag(const Envelope& e, const char* name, bool otherwise = false);
// An optional non-negative integer field; absent: `otherwise`.
[[nodiscard]] std::uint64_t count_or(const Envelope& e, const char* name, std::uint64_t otherwise);
// A list of strings (endpoints).
[[nodiscard]] std::vector<std::string> strings(const Envelope& e, const char* name);
// A string field.
[[nodiscard]] std::string text(const Envelope& e, const char* name);
// A list of ranks: non-negative integers below 2^32.
[[nodiscard]] std::vector<std::uint32_t> ranks(const Envelope& e, const char* name);

// kRingReform (coordinator -> worker): the members of the re-formed ring (or group) in order,
// the replacements among them, and every rank's peer endpoint.
struct Reform {
  std::vector<std::uint32_t> members;
  std::vector<std::uint32_t> fresh;
  std::vector<std::string> endpoints;
};
[[nodiscard]] Reform read_reform(const Envelope& e);

// kDone's "took" (async, continue): the rows of a lost worker this survivor took over, from
// which of its local epochs. Absent: none.
struct Took {
  std::uint64_t lost_rank = 0;
  std::uint64_t rows = 0;
  std::uint64_t from_epoch = 0;
};
[[nodiscard]] std::vector<Took> read_took(const Envelope& e);

// kServers (coordinator -> worker): the parameter servers' endpoints in key order and the
// model's parameter count they split.
struct Servers {
  std::vector<std::string> endpoints;
  std::uint64_t parameters = 0;
};
[[nodiscard]] Servers read_servers(const Envelope& e);

// kServerMoved (coordinator -> worker): server `server` was replaced; its new endpoint and the
// update it was restored at.
struct ServerMoved {
  std::uint64_t server = 0;
  std::string endpoint;
  std::uint64_t version = 0;
};
[[nodiscard]] ServerMoved read_server_moved(const Envelope& e);

}  // namespace dt::protocol

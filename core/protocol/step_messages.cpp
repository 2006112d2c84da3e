#include "core/protocol/step_messages.hpp"

#include "base/error.hpp"

#include <limits>

namespace dt::protocol {
namespace {

using nlohmann::json;

// Names unique in the unity build (protocol.cpp shares its unit).
const json& list_field(const Envelope& e, const char* name) {
  const json& j = field(e, name);
  if (!j.is_array()) {
    fail<ProtocolError>("{} message from rank {}: field '{}' is not a list", name_of(e.type),
                        e.rank, name);
  }
  return j;
}

[[noreturn]] void bad_element(const Envelope& e, const char* name, std::size_t i, const char* what) {
  fail<ProtocolError>("{} message from rank {}: element {} of field '{}' is not {}",
                      name_of(e.type), e.rank, i, name, what);
}

std::uint64_t whole_number(const Envelope& e, const char* list, std::size_t i, const json& j,
                           const char* name) {
  if (!j.is_object()) bad_element(e, list, i, "an object");
  const auto it = j.find(name);
  if (it == j.end() || !it->is_number_unsigned()) {
    fail<ProtocolError>("{} message from rank {}: element {} of field '{}' has no non-negative "
                        "integer '{}'", name_of(e.type), e.rank, i, list, name);
  }
  return it->get<std::uint64_t>();
}

}  // namespace

bool flag(const Envelope& e, const char* name, bool otherwise) {
  const auto it = e.fields.find(name);
  if (it == e.fields.end()) return otherwise;
  if (!it->is_boolean()) {
    fail<ProtocolError>("{} message from rank {}: field '{}' is not true or false",
                        name_of(e.type), e.rank, name);
  }
  return it->get<bool>();
}

std::uint64_t count_or(const Envelope& e, const char* name, std::uint64_t otherwise) {
  return e.fields.contains(name) ? count(e, name) : otherwise;
}

std::vector<std::string> strings(const Envelope& e, const char* name) {
  const json& j = list_field(e, name);
  std::vector<std::string> out;
  out.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) bad_element(e, name, i, "a string");
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

std::string text(const Envelope& e, const char* name) {
  const json& j = field(e, name);
  if (!j.is_string()) {
    fail<ProtocolError>("{} message from rank {}: field '{}' is not a string", name_of(e.type),
                        e.rank, name);
  }
  return j.get<std::string>();
}

std::vector<std::uint32_t> ranks(const Envelope& e, const char* name) {
  const json& j = list_field(e, name);
  std::vector<std::uint32_t> out;
  out.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_unsigned() ||
        j[i].get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
      bad_element(e, name, i, "a rank (a non-negative integer below 2^32)");
    }
    out.push_back(static_cast<std::uint32_t>(j[i].get<std::uint64_t>()));
  }
  return out;
}

Reform read_reform(const Envelope& e) {
  return {ranks(e, "members"), ranks(e, "fresh"), strings(e, "endpoints")};
}

std::vector<Took> read_took(const Envelope& e) {
  std::vector<Took> out;
  if (!e.fields.contains("took")) return out;
  const json& j = list_field(e, "took");
  for (std::size_t i = 0; i < j.size(); ++i) {
    out.push_back({whole_number(e, "took", i, j[i], "lost_rank"),
                   whole_number(e, "took", i, j[i], "rows"),
                   whole_number(e, "took", i, j[i], "from_epoch")});
  }
  return out;
}

Servers read_servers(const Envelope& e) {
  return {strings(e, "endpoints"), count(e, "parameters")};
}

ServerMoved read_server_moved(const Envelope& e) {
  return {count(e, "server"), text(e, "endpoint"), count(e, "version")};
}

}  // namespace dt::protocol

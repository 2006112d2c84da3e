#include "core/coordinator/addresses.hpp"

#include "base/error.hpp"

namespace dt::roles {

WorkerAddresses::WorkerAddresses(std::size_t ranks) {
  for (std::size_t r = 0; r < ranks; ++r) {
    identities_.push_back(protocol::peer_name(static_cast<std::uint32_t>(r)));
  }
}

const std::string& WorkerAddresses::identity(int rank) const {
  return identities_.at(static_cast<std::size_t>(rank));
}

void WorkerAddresses::set_identity(int rank, std::string identity) {
  identities_.at(static_cast<std::size_t>(rank)) = std::move(identity);
}

bool WorkerAddresses::take_endpoints(const std::vector<protocol::Envelope>& ready) {
  std::vector<std::string> endpoints;
  for (const auto& e : ready) {
    const auto it = e.fields.find("peer_endpoint");
    if (it == e.fields.end() || !it->is_string() || it->get<std::string>().empty()) {
      if (!endpoints.empty()) {
        fail<ProtocolError>("worker {} reported no peer endpoint while others did", e.rank);
      }
      continue;
    }
    if (endpoints.size() != e.rank) {
      fail<ProtocolError>("worker {} reported a peer endpoint while others did not", e.rank);
    }
    endpoints.push_back(it->get<std::string>());
  }
  if (endpoints.empty()) return false;
  endpoints_ = std::move(endpoints);
  return true;
}

void WorkerAddresses::replace_endpoint(std::size_t rank, std::string endpoint) {
  if (endpoints_.empty()) return;  // a run without peer links
  if (rank >= endpoints_.size()) endpoints_.resize(rank + 1);  // a joiner's slot (elastic)
  endpoints_[rank] = std::move(endpoint);
}

}  // namespace dt::roles

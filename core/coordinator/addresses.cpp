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

bool WorkerAddresses::take_endpoints(const std::vector<protocol::Envelope>& ready,
                                     std::size_t ranks) {
  // By rank: a rank that sent no kReady (one that had left, on --resume) keeps an empty
  // endpoint, which no ring of the run includes.
  std::vector<std::string> endpoints(ranks);
  std::size_t reported = 0;
  std::size_t silent = 0;
  for (const auto& e : ready) {
    const auto it = e.fields.find("peer_endpoint");
    if (it == e.fields.end() || !it->is_string() || it->get<std::string>().empty()) {
      if (reported > 0) {
        fail<ProtocolError>("worker {} reported no peer endpoint while others did", e.rank);
      }
      ++silent;
      continue;
    }
    if (silent > 0) {
      fail<ProtocolError>("worker {} reported a peer endpoint while others did not", e.rank);
    }
    if (endpoints.size() <= e.rank) endpoints.resize(e.rank + 1);
    endpoints[e.rank] = it->get<std::string>();
    ++reported;
  }
  if (reported == 0) return false;
  endpoints_ = std::move(endpoints);
  return true;
}

void WorkerAddresses::replace_endpoint(std::size_t rank, std::string endpoint) {
  if (endpoints_.empty()) return;  // a run without peer links
  if (rank >= endpoints_.size()) endpoints_.resize(rank + 1);  // a joiner's slot (elastic)
  endpoints_[rank] = std::move(endpoint);
}

}  // namespace dt::roles

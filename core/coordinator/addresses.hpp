#pragma once
// Where each rank is: the identity its connection to the coordinator uses (protocol::peer_name
// for the workers this process starts; a worker that joins by itself has its own), and the
// endpoint of its peer links as last reported (a replacement's replaces the lost worker's; none
// in a star run, where workers open no peer links).

#include "core/protocol/protocol.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace dt::roles {

class WorkerAddresses {
 public:
  explicit WorkerAddresses(std::size_t ranks);

  [[nodiscard]] const std::string& identity(int rank) const;
  void set_identity(int rank, std::string identity);
  void set_identities(std::vector<std::string> identities) { identities_ = std::move(identities); }

  // From the workers' kReady replies: every rank's peer endpoint, or none (a star run; false).
  // ProtocolError when some report one and others do not. `ranks`: the endpoints' count at least
  // (a rank that sent no kReady, having left before a --resume, gets an empty one).
  bool take_endpoints(const std::vector<protocol::Envelope>& ready, std::size_t ranks = 0);
  // A replacement's or a joiner's endpoint (a joiner's slot may lie past the list: it grows,
  // slots between held by no one staying empty); ignored in a star run, which has none.
  void replace_endpoint(std::size_t rank, std::string endpoint);
  // Every rank's peer endpoint; empty for a star run. Sent again when a group re-forms
  // (core/modes/ring_reform.hpp).
  [[nodiscard]] const std::vector<std::string>& endpoints() const noexcept { return endpoints_; }

 private:
  std::vector<std::string> identities_;  // by rank
  std::vector<std::string> endpoints_;   // by rank; empty without peer links
};

}  // namespace dt::roles

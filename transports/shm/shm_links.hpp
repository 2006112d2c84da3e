#pragma once
// The same-host fast path over ipc: a Listener and a Connection that wrap the ZeroMQ ones and,
// once a connection's offer is accepted, carry that link's messages through a shared-memory
// region (transports/shm/region.hpp) instead. ZeroMQ stays for set-up, for messages that do
// not fit a ring (a marker keeps their place), and as the fallback. Core sees the same contract.
//
// Switch-over, per link, keeping each direction's order:
//   connection: creates region + its bell, sends `offer` over ZeroMQ; reads ZeroMQ until
//               `accept` (or `refuse`: stays on ZeroMQ), then sends `switch` over ZeroMQ and
//               from then on sends over the up ring and reads the down ring.
//   listener:   on `offer` maps the region, sends `accept` over ZeroMQ and from then on sends
//               over the down ring; reads the peer's ZeroMQ messages until `switch`, then the
//               up ring.
// After the switch a ZeroMQ message from the peer is delivered only at its marker.
// A newer offer under the same identity replaces the older region (takeover). A peer whose
// connection is closed or whose process has exited (pidfd) is gone: a send to it fails.
//
// transports/shm/: the same-host shared-memory rings and the Listener/Connection wrappers that
// switch a link onto them.
// May use: base/, transports/ (the interface and the wire format).

#include "transports/shm/region.hpp"
#include "transports/transport.hpp"

#include <filesystem>
#include <memory>

namespace dt::transport::shm {

struct LinkOptions {
  int zmq_fd = -1;                   // the ZeroMQ socket's ZMQ_FD, polled beside the bells
  std::filesystem::path folder;      // the listener's ipc folder (where its socket file is)
  std::string name;                  // listener: its name; connection: its identity
  std::string listener;              // connection: the listener's name (its socket file's stem)
  std::uint64_t max_payload = 0;
  std::uint64_t job_id = 0;
};

// Wrap `inner` (a ZeroMQ ipc socket); on any failure to set up the fast path, `inner` itself
// is returned (and the link stays on ZeroMQ).
[[nodiscard]] std::unique_ptr<Listener> wrap_listener(std::unique_ptr<Listener> inner,
                                                      const LinkOptions& options);
[[nodiscard]] std::unique_ptr<Connection> wrap_connection(std::unique_ptr<Connection> inner,
                                                          const LinkOptions& options);

}  // namespace dt::transport::shm

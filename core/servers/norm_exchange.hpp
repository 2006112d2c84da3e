#pragma once
// training.clip_norm with K parameter servers in synchronous rounds: the global L2 norm of a
// round's averaged gradient is over every server's slice, so each server posts the sum of the
// squares of its slice's part (dense: every key; keyed: the touched ones) and reads back the one
// factor all of them scale by: min(1, clip / (sqrt(total) + 1e-6)), total = p0 + p1 + ... +
// p(K-1) added in server order, whatever order the posts came in (reruns and transports give the
// same bits). The ServerGroup owns one; its servers (threads of the coordinator) share it.
//
// A round's factor is fixed once every server has posted: a replacement server that redoes a
// round the others have finished (server_recovery.cpp) reads the factor they used. Before that,
// a server's later post replaces its earlier one (a replacement redoing a round its failed
// predecessor had posted). Waits are bounded (factor's `wait`, and close()): a server that
// fails before posting blocks no one for good; the others wait in short slices, keep their
// heartbeat and take in the coordinator's news meanwhile (ParameterServer::exchange_norm).
//
// Threading: every member is safe to call from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace dt::roles {

class NormExchange {
 public:
  NormExchange(int servers, double clip);

  // Server `server`'s sum of squares for round `round` (the round's number: the servers'
  // version before it).
  void post(std::uint64_t round, int server, double sum_of_squares);
  // The round's factor once every server has posted; nullopt after `wait` without it, or when
  // closed.
  [[nodiscard]] std::optional<double> factor(std::uint64_t round, std::chrono::milliseconds wait);
  // Wakes every wait, now and later (the group is stopping).
  void close();

 private:
  struct Round {
    std::vector<std::optional<double>> partials;
    int posted = 0;
    std::optional<double> factor;
  };
  const int servers_;
  const double clip_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Round> rounds_;  // the last few rounds (a replacement redoes one)
  bool closed_ = false;
};

}  // namespace dt::roles

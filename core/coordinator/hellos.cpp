// The start of a run: the starting ranks' hellos (hellos.hpp).

#include "core/coordinator/hellos.hpp"

#include "core/coordinator/worker_pool.hpp"
#include "core/protocol/drop_log.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"

#include <algorithm>
#include <optional>

namespace dt::roles {

using transport::deadline_in;

namespace {

// Waits for every rank's hello, before heartbeats exist. Ranks below `first_remote` are this
// process's children, started under the identity protocol::peer_name(rank); the others join by
// themselves (`disttrain worker --connect`) under identities of their own, without the job id
// (their hello carries job 0). A hello that cannot be accepted (a rank out of range or taken, a
// different config) is answered with an error naming the reason, and the wait goes on: the
// right worker may still come. Bounded by `timeout`; the error names the missing ranks.
std::vector<Joined> await_hellos(transport::Listener& listener, WorkerPool& pool, int ranks,
                                 int first_remote, std::uint64_t job,
                                 const std::string& config_hash, std::chrono::milliseconds timeout,
                                 std::vector<std::optional<Joined>>& joined) {
  std::vector<std::string> refusals;
  DropLog drops;
  int remaining = static_cast<int>(std::count(joined.begin(), joined.end(), std::nullopt));
  const auto deadline = deadline_in(timeout);
  const auto refuse = [&](const transport::Incoming& in, const protocol::Hello& hello,
                          const std::string& why) {
    const std::string line = fmt::format("refused worker {} (pid {} on {}): {}", hello.rank,
                                         hello.pid, hello.host, why);
    log::warn("{}", line);
    refusals.push_back(line);
    try {  // the worker exits with this message (exit 2); it may be gone already
      listener.send(in.peer,
                    protocol::encode(protocol::make_error({"config", line, 2}), in.message.header.job_id),
                    deadline_in(kSendDeadline));
    } catch (const TransportError&) {
    }
  };
  while (remaining > 0) {
    if (signals::interrupted()) fail<InterruptedError>("interrupted while workers were starting");
    drops.tick();
    if (auto in = listener.receive(deadline_in(kPollSlice))) {
      try {
        const auto& header = in->message.header;
        const bool joining = header.job_id == 0 &&
                             header.type == static_cast<std::uint16_t>(protocol::Type::kHello);
        const auto e = protocol::decode(in->message, joining ? 0 : job);
        if (e.type != protocol::Type::kHello) continue;
        const auto hello = protocol::read_hello(e);
        // A worker joining the running job (`--join`, elastic) is admitted once training runs
        // (session_joins.cpp); it says hello again every second until then.
        if (hello.join) continue;
        const auto r = static_cast<std::size_t>(hello.rank);
        if (hello.rank >= static_cast<std::uint32_t>(ranks)) {
          refuse(*in, hello, fmt::format("the run has ranks 0 to {}", ranks - 1));
          continue;
        }
        if (static_cast<int>(hello.rank) < first_remote) {
          if (in->peer != protocol::peer_name(hello.rank) || joined[r]) {
            refuse(*in, hello,
                   fmt::format("rank {} is started by the coordinator itself; workers that join "
                               "take ranks {} to {} (transport.remote_workers)",
                               hello.rank, first_remote, ranks - 1));
            continue;
          }
        } else if (joined[r]) {
          if (joined[r]->peer.empty()) {  // departed (resume_membership.hpp)
            refuse(*in, hello, fmt::format("rank {} had left the run before the checkpoint this "
                                           "run resumes from, and is not taken back; start no "
                                           "worker for it (docs/elastic.md)", hello.rank));
          } else if (joined[r]->peer != in->peer) {
            refuse(*in, hello, fmt::format("rank {} has already joined (pid {} on {})", hello.rank,
                                           joined[r]->hello.pid, joined[r]->hello.host));
          }
          continue;
        }
        if (!hello.config_hash.empty() && hello.config_hash != config_hash) {
          refuse(*in, hello,
                 fmt::format("its config differs from the coordinator's (hash {}, the "
                             "coordinator's {}); start every rank with the same config file",
                             hello.config_hash, config_hash));
          continue;
        }
        if (static_cast<int>(hello.rank) >= first_remote) {
          log::info("worker {} joined from {} (pid {}, '{}')", hello.rank, hello.host, hello.pid,
                    in->peer);
        }
        joined[r] = Joined{hello, in->peer};
        --remaining;
      } catch (const ProtocolError& err) {
        drops.drop(in->peer, err.what());
      }
      continue;
    }
    for (const auto& exit : pool.poll()) {
      std::string message = fmt::format("worker {} (pid {}) {} before it connected", exit.rank,
                                        exit.pid, exit.status.describe());
      const auto last = pool.last_words(exit.rank);
      if (!last.empty()) message += fmt::format("; its log ends: {}", last);
      throw TrainingError(message);
    }
    if (transport::Clock::now() >= deadline) {
      std::vector<std::string> missing;
      bool remote_missing = false;
      for (int r = 0; r < ranks; ++r) {
        if (joined[static_cast<std::size_t>(r)]) continue;
        missing.push_back(std::to_string(r));
        remote_missing = remote_missing || r >= first_remote;
      }
      std::string message = fmt::format("worker{} {} did not {} {} within {} ms",
                                        missing.size() == 1 ? "" : "s", fmt::join(missing, ", "),
                                        remote_missing ? "join" : "connect to",
                                        listener.endpoint(), timeout.count());
      if (remote_missing) {
        message += fmt::format("; start each with `disttrain worker --connect {} --rank R` "
                               "(transport.join_timeout_ms sets the wait)",
                               listener.endpoint());
      }
      if (!refusals.empty()) message += fmt::format("; {}", fmt::join(refusals, "; "));
      throw TimeoutError(message);
    }
  }
  std::vector<Joined> out;
  for (auto& j : joined) out.push_back(std::move(*j));
  return out;
}

}  // namespace

std::vector<Joined> wait_for_hellos(transport::Listener& listener, WorkerPool& pool, int ranks,
                                    int first_remote, std::uint64_t job,
                                    const std::string& config_hash,
                                    std::chrono::milliseconds timeout,
                                    const std::vector<bool>& departed) {
  std::vector<std::optional<Joined>> joined(static_cast<std::size_t>(ranks));
  for (std::size_t r = 0; r < departed.size(); ++r) {  // not started (resume_membership.hpp)
    if (departed[r]) joined[r] = Joined{{.rank = static_cast<std::uint32_t>(r)}, {}};
  }
  try {
    return await_hellos(listener, pool, ranks, first_remote, job, config_hash, timeout, joined);
  } catch (const Error& e) {
    // Workers that joined by themselves wait for a setup that will not come, and have no
    // heartbeats yet to notice: tell them (this process's own are stopped by the pool).
    for (int r = first_remote; r < ranks; ++r) {
      const auto& j = joined[static_cast<std::size_t>(r)];
      if (!j) continue;
      try {
        listener.send(j->peer,
                      protocol::encode(protocol::make_error({"training",
                                                             fmt::format("gave up: {}", e.what()),
                                                             static_cast<int>(e.exit_code())}),
                                       job),
                      deadline_in(kSendDeadline));
      } catch (const TransportError&) {
      }
    }
    throw;
  }
}

}  // namespace dt::roles

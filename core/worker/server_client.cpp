// ServerClient (server_client.hpp): pull, push and receive over one connection per server, and
// the move to a failed server's replacement.

#include "core/worker/server_client.hpp"

#include "core/protocol/compression.hpp"
#include "core/protocol/timing.hpp"
#include "core/protocol/step_messages.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "transports/transport.hpp"

#include <algorithm>
#include <chrono>

namespace dt::roles {

using transport::Clock;
using transport::deadline_in;

ServerClient::ServerClient(WorkerSession& session, const protocol::Envelope& servers)
    : session_(session) {
  auto told = protocol::read_servers(servers);
  endpoints_ = std::move(told.endpoints);
  const auto p = session.model().parameter_count();
  if (endpoints_.empty() || told.parameters != p) {
    fail<ProtocolError>("servers message: {} endpoints for {} parameters (this worker's model "
                        "has {})", endpoints_.size(), told.parameters, p);
  }
  ranges_ = split_keys(p, static_cast<int>(endpoints_.size()));
  const auto k = endpoints_.size();
  versions_.assign(k, 0);
  last_sent_.resize(k);
  last_push_step_.assign(k, 0);
  pushed_.assign(k, false);
  awaiting_.assign(k, false);
  min_version_.assign(k, 0);
  asynchronous_ = session.config().aggregation.mode == config::AggregationMode::kAsync;
  if (const auto it = servers.fields.find("start_steps"); it != servers.fields.end()) {
    pushes_ = it->at(session.rank()).get<std::uint64_t>();  // a resumed async run
  }
  for (const auto& endpoint : endpoints_) {
    connections_.push_back(
        session.transport().connect(endpoint, protocol::peer_name(session.rank())));
  }
  session.on_notice(protocol::Type::kServerMoved,
                    [this](const protocol::Envelope& moved) { on_moved(moved); });
}

ServerClient::~ServerClient() { session_.on_notice(protocol::Type::kServerMoved, {}); }

void ServerClient::account() {
  std::uint64_t sent = retired_sent_, received = retired_received_;
  for (const auto& c : connections_) {
    sent += c->counters().bytes_sent;
    received += c->counters().bytes_received;
  }
  session_.add_bytes(sent - sent_, received - received_);
  sent_ = sent;
  received_ = received;
}

void ServerClient::pull(std::uint64_t steps) {
  const auto start = Clock::now();
  steps_ = steps;
  for (std::size_t k = 0; k < connections_.size(); ++k) {
    protocol::Envelope e{.type = protocol::Type::kPull, .rank = session_.rank()};
    e.fields = {{"steps", steps}};
    last_sent_[k] = protocol::encode(std::move(e), session_.job_id());
    // Async: a worker with nothing (left) to do gets no slice.
    awaiting_[k] = !asynchronous_ || pushes_ < steps_;
    connections_[k]->send(*last_sent_[k], deadline_in(kSendDeadline));
  }
  account();
  session_.add_comm_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

void ServerClient::push(std::span<const double> grad_sum, std::uint64_t step,
                        std::uint64_t rows, double loss_sum, std::uint64_t planned,
                        std::optional<double> clip) {
  const auto start = Clock::now();
  session_.before_server_push();
  // Async continue: rows taken over from a lost worker lengthen the plan, and with it the
  // step whose push is the last (the one no slice answers).
  if (planned > 0) steps_ = planned;
  const auto codec = protocol::half_codec(session_.config());  // aggregation.compression
  for (std::size_t k = 0; k < connections_.size(); ++k) {
    const auto& range = ranges_[k];
    protocol::Envelope e{.type = protocol::Type::kPush, .rank = session_.rank(), .step = step};
    e.fields = {{"rows", rows}, {"loss_sum", loss_sum}, {"version", versions_[k]}};
    if (planned > 0) e.fields["steps"] = planned;
    if (clip) e.fields["clip"] = *clip;
    const auto part = grad_sum.subspan(range.begin, range.size());
    if (topk_ != nullptr) {  // top-k: the chosen entries of this server's keys (maybe none)
      wire::Bytes frame;
      topk_->encode(range.begin, range.end, frame);
      e.arrays.push_back(std::move(frame));
    } else {
      e.arrays.push_back(codec ? wire::encode_half(part, *codec) : wire::to_bytes(part));
    }
    last_sent_[k] = protocol::encode(std::move(e), session_.job_id());
    last_push_step_[k] = step;
    pushed_[k] = true;
    // Sync: the slice of round step + 1 answers it; async: the next step's, unless it was the
    // last (the push is also the next step's pull).
    awaiting_[k] = !asynchronous_ || pushes_ + 1 < steps_;
    min_version_[k] = asynchronous_ ? 0 : step + 1;
    connections_[k]->send(*last_sent_[k], deadline_in(kSendDeadline));
  }
  ++pushes_;
  account();
  session_.add_comm_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

void ServerClient::receive(std::span<double> params, std::uint64_t min_version) {
  await_owed(min_version, [&](std::size_t k, protocol::Envelope& e) {
    const auto slice = protocol::doubles(e, 0, ranges_[k].size());
    std::copy(slice.begin(), slice.end(),
              params.begin() + static_cast<std::ptrdiff_t>(ranges_[k].begin));
    take_reassign(e);
  });
}

void ServerClient::take_reassign(protocol::Envelope& slice) {
  // The share's segments follow the slice's values; an end (kEnd) has none before them.
  const std::size_t at = slice.type == protocol::Type::kEnd ? 0 : 1;
  if (const auto it = slice.fields.find("reassign");
      it != slice.fields.end() && slice.arrays.size() > at) {
    notice_ = protocol::Envelope{.type = protocol::Type::kReassign, .fields = *it};
    notice_->arrays.push_back(std::move(slice.arrays[at]));
  }
}

void ServerClient::await_owed(std::uint64_t min_version, const SliceTaker& take) {
  const auto start = Clock::now();
  // Until no server owes a slice. A server replaced meanwhile (on_moved, through take_notices)
  // may owe one again.
  for (;;) {
    const auto owed = std::find(awaiting_.begin(), awaiting_.end(), true);
    if (owed == awaiting_.end()) break;
    const auto k = static_cast<std::size_t>(owed - awaiting_.begin());
    session_.check_alive();
    auto message = connections_[k]->receive(deadline_in(kPollSlice));
    if (!message) {
      session_.take_notices();  // a failed server's replacement
      // The coordinator ends training only when every server has applied the last round, so
      // a slice still owed then was lost (a server's send that failed): waiting on would never
      // end, since the heartbeats keep this worker alive. A kError from it throws its words.
      if (session_.poll_coordinator(protocol::Type::kEvaluate) ||
          session_.poll_coordinator(protocol::Type::kStop)) {
        fail<TransportError>("parameter server {} at {} never sent its slice (version {}) and "
                             "the coordinator has ended the training; the run cannot go on: "
                             "see the coordinator's log for the server's error",
                             k, endpoints_[k], std::max(min_version_[k], min_version));
      }
      continue;
    }
    auto e = protocol::decode(std::move(*message), session_.job_id());
    if (e.type == protocol::Type::kEnd && asynchronous_ && protocol::count(e, "server") == k) {
      ended_ = true;  // training.early_stopping: this server answers no more with slices
      awaiting_[k] = false;
      take_reassign(e);  // a share dealt before the end rides on it (its rows are evaluated)
      continue;
    }
    if (e.type != protocol::Type::kSlice || protocol::count(e, "server") != k) {
      fail<ProtocolError>("parameter server {} at {} sent a {} message, expected its slice", k,
                          endpoints_[k], protocol::name_of(e.type));
    }
    const auto version = protocol::count(e, "version");
    // A replacement server's answer to a repeated push, or a slice sent twice to a replacement
    // worker (restart).
    if (version < std::max(min_version_[k], min_version)) continue;
    take(k, e);
    versions_[k] = version;
    awaiting_[k] = false;
  }
  account();
  session_.add_comm_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

void ServerClient::on_moved(const protocol::Envelope& moved) {
  const auto told = protocol::read_server_moved(moved);
  const auto k = told.server;
  if (k >= connections_.size()) {
    fail<ProtocolError>("the coordinator moved parameter server {} of {}", k, connections_.size());
  }
  const auto& endpoint = told.endpoint;
  const auto version = told.version;
  account();
  retired_sent_ += connections_[k]->counters().bytes_sent;
  retired_received_ += connections_[k]->counters().bytes_received;
  connections_[k] = session_.transport().connect(endpoint, protocol::peer_name(session_.rank()));
  endpoints_[k] = endpoint;
  account();
  log::info("parameter server {} was replaced; now at {} (update {})", k, endpoint, version);
  const auto send = [&](const wire::Message& m) {
    connections_[k]->send(m, deadline_in(kSendDeadline));
  };
  if (asynchronous_) {
    // The replacement learns how far this worker is, and answers with a slice of its own when
    // the worker has steps left (a slice of the failed server's is of no use for the push).
    awaiting_[k] = pushes_ < steps_;
    protocol::Envelope e{.type = protocol::Type::kPull, .rank = session_.rank()};
    e.fields = {{"steps", steps_}, {"rejoin", pushes_}, {"awaiting", awaiting_[k]}};
    if (keyed_ && awaiting_[k]) {  // the values of the indices this worker waits for
      e.fields["keyed"] = true;
      e.arrays.push_back(asked_frames_[k]);
    }
    send(protocol::encode(std::move(e), session_.job_id()));
    return;
  }
  // Sync: the replacement redoes round `version` and needs this worker's push of it; a worker
  // still waiting for its first slice asks again.
  if (!last_sent_[k]) return;
  if ((pushed_[k] && last_push_step_[k] == version) || (!pushed_[k] && awaiting_[k])) {
    send(*last_sent_[k]);
  }
}

}  // namespace dt::roles

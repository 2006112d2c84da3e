#include "core/servers/server_group.hpp"

#include "core/coordinator/resume.hpp"

#include "core/coordinator/coordinator.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/worker/worker.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

#include <algorithm>

namespace dt::roles {

using transport::Clock;
using transport::deadline_in;

namespace {

// The L2 coefficient of every key: the model's l2 on regularized blocks (weights), 0 elsewhere.
std::vector<double> l2_per_key(const models::Model& model) {
  std::vector<double> out(model.parameter_count(), 0.0);
  const double l2 = model.spec().config.l2;
  if (l2 == 0.0) return out;
  for (const auto& b : model.layout()) {
    if (!b.regularized) continue;
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(b.offset),
              out.begin() + static_cast<std::ptrdiff_t>(b.offset + b.size), l2);
  }
  return out;
}
}  // namespace

ServerGroup::ServerGroup(CoordinatorSession& session, std::optional<AsyncServing> async,
                         const checkpoint::Checkpoint* from)
    : session_(session) {
  const auto& config = session.config();
  const auto& params = session.params();
  ranges_ = split_keys(params.size(), config.aggregation.servers);
  const auto l2 = l2_per_key(session.model());
  for (std::size_t k = 0; k < ranges_.size(); ++k) {
    const auto& range = ranges_[k];
    const auto first = static_cast<std::ptrdiff_t>(range.begin);
    const auto last = static_cast<std::ptrdiff_t>(range.end);
    ServerOptions o;
    o.index = static_cast<int>(k);
    o.range = range;
    o.workers = session.ranks();
    o.asynchronous = async.has_value();
    o.optimizer = config.training.optimizer;
    o.l2.assign(l2.begin() + first, l2.begin() + last);
    o.job_id = session.job_id();
    for (const auto& f : config.faults) {
      if (f.server == static_cast<int>(k)) o.faults.push_back(f);
    }
    if (async) {
      o.worker_steps = async->worker_steps;
      o.max_staleness = async->max_staleness;
      o.staleness_lr = async->staleness_lr;
      o.keep_log = k == 0;
      o.snapshot_every = async->snapshot_every;
      o.checkpoint_every = async->checkpoint_every;
      o.copy_every = static_cast<std::uint64_t>(session.ranks());
      o.copy = std::make_shared<ServerCopy>();
    }
    if (from != nullptr) {
      o.start_version = from->step();
      o.optimizer_state = get_optimizer(*from, fmt::format("server.{}.optimizer", k));
      if (async) {
        // Every server continues from server 0's count of each worker's applied pushes (with
        // several servers, one may have applied a push or two more or less of a worker at the
        // same version: asynchronous training tolerates that, as it tolerates staleness).
        start_steps_ = from->manifest.at("mode_state").at("worker_steps").get<std::vector<std::uint64_t>>();
        o.start_completed = start_steps_;
      }
    }
    servers_.push_back(std::make_unique<ParameterServer>(
        session.transport(), std::move(o),
        std::vector<double>(params.begin() + first, params.begin() + last)));
  }
  for (const auto& s : servers_) {
    log::info("parameter server {} owns keys [{}, {}) on {}", s->options().index,
              s->options().range.begin, s->options().range.end, s->endpoint());
  }
  // The first copy a replacement could start from: the start.
  copies_.resize(servers_.size());
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    servers_[k]->capture(copies_[k]);
    left_.push_back(servers_[k]->options().copy);
    if (left_.back()) {
      std::lock_guard lock(left_.back()->mu);  // before any update: the workers wait for announce()
      left_.back()->state = copies_[k];
    }
  }
  incarnations_.assign(servers_.size(), 0);
  retired_.resize(servers_.size());
  lost_.assign(servers_.size(), false);
}

bool ServerGroup::save_state(std::uint64_t version, checkpoint::Checkpoint& out) const {
  std::vector<double> params(session_.params().size());
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    // A server that failed (abort): its slice is the coordinator's copy, if of that version.
    if (lost_[k]) {
      if (copies_[k].version != version) return false;
      std::copy(copies_[k].slice.begin(), copies_[k].slice.end(),
                params.begin() + static_cast<std::ptrdiff_t>(ranges_[k].begin));
      put_optimizer(out, fmt::format("server.{}.optimizer", k), copies_[k].optimizer);
      if (k == 0) out.manifest["mode_state"]["worker_steps"] = copies_[k].worker_steps;
      continue;
    }
    // Async: server 0's log says `version` updates happened; the other servers may not have
    // applied all of those pushes yet (they are on their way), so give them a moment.
    if (servers_[k]->options().asynchronous) {
      (void)servers_[k]->wait_version(version, std::chrono::milliseconds(1000));
    }
    auto state = servers_[k]->state_at(version);
    // The state before the latest round is the coordinator's copy (a stop during a round).
    if (!state && copies_[k].version == version) state = copies_[k];
    if (!state) return false;
    std::copy(state->slice.begin(), state->slice.end(),
              params.begin() + static_cast<std::ptrdiff_t>(ranges_[k].begin));
    put_optimizer(out, fmt::format("server.{}.optimizer", k), state->optimizer);
    if (k == 0) out.manifest["mode_state"]["worker_steps"] = state->worker_steps;
  }
  out.arrays["parameters"] = std::move(params);
  return true;
}

protocol::Envelope ServerGroup::servers_message() const {
  protocol::Envelope e{.type = protocol::Type::kServers};
  std::vector<std::string> endpoints;
  for (const auto& s : servers_) endpoints.push_back(s->endpoint());
  e.fields = {{"endpoints", endpoints}, {"parameters", session_.params().size()}};
  return e;
}

void ServerGroup::announce() {
  auto e = servers_message();
  if (!start_steps_.empty()) e.fields["start_steps"] = start_steps_;
  session_.broadcast(std::move(e));
}

void ServerGroup::wait_version(std::uint64_t version, std::int64_t timeout_ms) {
  auto start = Clock::now();
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    while (!servers_[k]->wait_version(version, kPollSlice)) {
      const int replaced = replacements_;
      check();
      // A replacement gets the whole wait: it redoes the round from the workers' pushes.
      if (replacements_ != replaced) start = Clock::now();
      session_.supervise();
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      const auto& s = servers_[k];
      if (waited > timeout_ms) {
        const auto st = s->stats();
        fail<TimeoutError>("parameter server {} (keys [{}, {})) did not reach update {} within "
                           "{} ms (it is at {}{})", s->options().index, s->options().range.begin,
                           s->options().range.end, version, timeout_ms, st.version,
                           st.missing.empty() ? std::string()
                                              : fmt::format("; no gradient from worker(s) {}",
                                                            fmt::join(st.missing, ", ")));
      }
    }
  }
}

void ServerGroup::copy_params(std::vector<double>& params) const {
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    if (!servers_[k]->copy_slice(params)) copy_kept(k, params);
  }
}

void ServerGroup::copy_params_at(std::uint64_t version, std::vector<double>& params) {
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    const auto& s = servers_[k];
    if (!s->take_snapshot(version, params) && !s->copy_slice(params)) copy_kept(k, params);
  }
}

void ServerGroup::copy_kept(std::size_t k, std::vector<double>& params) const {
  // A server killed since the last check(): its slice as last copied.
  std::copy(copies_[k].slice.begin(), copies_[k].slice.end(),
            params.begin() + static_cast<std::ptrdiff_t>(ranges_[k].begin));
}

std::vector<AppliedUpdate> ServerGroup::take_log() { return servers_.front()->take_log(); }

std::vector<ServerStats> ServerGroup::stats() const {
  std::vector<ServerStats> out;
  for (const auto& s : servers_) out.push_back(s->stats());
  return out;
}

void ServerGroup::stop() {
  for (auto& s : servers_) s->stop();
}

nlohmann::json ServerGroup::servers_json() const {
  auto list = nlohmann::json::array();
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    const auto& s = servers_[k];
    const auto st = s->stats();
    const auto& old = retired_[k];  // the failed servers' of this range
    list.push_back({{"index", s->options().index},
                    {"keys", {s->options().range.begin, s->options().range.end}},
                    {"key_count", s->options().range.size()},
                    {"version", st.version},
                    {"bytes_received", st.traffic.bytes_received + old.bytes_received},
                    {"bytes_sent", st.traffic.bytes_sent + old.bytes_sent},
                    {"messages_received", st.traffic.messages_received + old.messages_received},
                    {"messages_sent", st.traffic.messages_sent + old.messages_sent}});
    if (incarnations_[k] > 0) list.back()["replacements"] = incarnations_[k];
  }
  return list;
}

ServerClient::ServerClient(WorkerSession& session, const protocol::Envelope& servers)
    : session_(session) {
  endpoints_ = servers.fields.value("endpoints", std::vector<std::string>{});
  const auto p = session.model().parameter_count();
  if (endpoints_.empty() || protocol::count(servers, "parameters") != p) {
    fail<ProtocolError>("servers message: {} endpoints for {} parameters (this worker's model "
                        "has {})", endpoints_.size(), protocol::count(servers, "parameters"), p);
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
                        std::uint64_t rows, double loss_sum, std::uint64_t planned) {
  const auto start = Clock::now();
  session_.before_server_push();
  // Async continue: rows taken over from a lost worker lengthen the plan, and with it the
  // step whose push is the last (the one no slice answers).
  if (planned > 0) steps_ = planned;
  for (std::size_t k = 0; k < connections_.size(); ++k) {
    const auto& range = ranges_[k];
    protocol::Envelope e{.type = protocol::Type::kPush, .rank = session_.rank(), .step = step};
    e.fields = {{"rows", rows}, {"loss_sum", loss_sum}, {"version", versions_[k]}};
    if (planned > 0) e.fields["steps"] = planned;
    e.arrays.push_back(wire::to_bytes(grad_sum.subspan(range.begin, range.size())));
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
      continue;
    }
    auto e = protocol::decode(std::move(*message), session_.job_id());
    if (e.type != protocol::Type::kSlice || protocol::count(e, "server") != k) {
      fail<ProtocolError>("parameter server {} at {} sent a {} message, expected its slice", k,
                          endpoints_[k], protocol::name_of(e.type));
    }
    const auto version = protocol::count(e, "version");
    // A replacement server's answer to a repeated push, or a slice sent twice to a replacement
    // worker (restart).
    if (version < std::max(min_version_[k], min_version)) continue;
    const auto slice = protocol::doubles(e, 0, ranges_[k].size());
    std::copy(slice.begin(), slice.end(),
              params.begin() + static_cast<std::ptrdiff_t>(ranges_[k].begin));
    versions_[k] = version;
    awaiting_[k] = false;
    if (const auto it = e.fields.find("reassign"); it != e.fields.end() && e.arrays.size() > 1) {
      notice_ = protocol::Envelope{.type = protocol::Type::kReassign, .fields = *it};
      notice_->arrays.push_back(std::move(e.arrays[1]));
    }
  }
  account();
  session_.add_comm_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

}  // namespace dt::roles

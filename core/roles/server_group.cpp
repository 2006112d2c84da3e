#include "core/roles/server_group.hpp"

#include "core/roles/resume.hpp"

#include "core/roles/coordinator.hpp"
#include "core/roles/heartbeat.hpp"
#include "core/roles/worker.hpp"
#include "core/roles/timing.hpp"
#include "core/util/error.hpp"
#include "core/util/log.hpp"

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
    if (async) {
      o.worker_steps = async->worker_steps;
      o.max_staleness = async->max_staleness;
      o.staleness_lr = async->staleness_lr;
      o.keep_log = k == 0;
      o.snapshot_every = async->snapshot_every;
      o.checkpoint_every = async->checkpoint_every;
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
}

bool ServerGroup::save_state(std::uint64_t version, checkpoint::Checkpoint& out) const {
  std::vector<double> params(session_.params().size());
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    // Async: server 0's log says `version` updates happened; the other servers may not have
    // applied all of those pushes yet (they are on their way), so give them a moment.
    if (servers_[k]->options().asynchronous) {
      (void)servers_[k]->wait_version(version, std::chrono::milliseconds(1000));
    }
    const auto state = servers_[k]->state_at(version);
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

void ServerGroup::check() const {
  for (const auto& s : servers_) s->check();
}

void ServerGroup::wait_version(std::uint64_t version, std::int64_t timeout_ms) {
  const auto start = Clock::now();
  for (const auto& s : servers_) {
    while (!s->wait_version(version, kPollSlice)) {
      check();
      session_.supervise();
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
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
  for (const auto& s : servers_) s->copy_slice(params);
}

void ServerGroup::copy_params_at(std::uint64_t version, std::vector<double>& params) {
  for (const auto& s : servers_) {
    if (!s->take_snapshot(version, params)) s->copy_slice(params);
  }
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
  for (const auto& s : servers_) {
    const auto st = s->stats();
    list.push_back({{"index", s->options().index},
                    {"keys", {s->options().range.begin, s->options().range.end}},
                    {"key_count", s->options().range.size()},
                    {"version", st.version},
                    {"bytes_received", st.traffic.bytes_received},
                    {"bytes_sent", st.traffic.bytes_sent},
                    {"messages_received", st.traffic.messages_received},
                    {"messages_sent", st.traffic.messages_sent}});
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
  versions_.assign(endpoints_.size(), 0);
  for (const auto& endpoint : endpoints_) {
    connections_.push_back(
        session.transport().connect(endpoint, protocol::peer_name(session.rank())));
  }
}

void ServerClient::account() {
  std::uint64_t sent = 0, received = 0;
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
  for (auto& c : connections_) {
    protocol::Envelope e{.type = protocol::Type::kPull, .rank = session_.rank()};
    e.fields = {{"steps", steps}};
    c->send(protocol::encode(std::move(e), session_.job_id()), deadline_in(kSendDeadline));
  }
  account();
  session_.add_comm_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

void ServerClient::push(std::span<const double> grad_sum, std::uint64_t step,
                        std::uint64_t rows, double loss_sum, std::uint64_t planned) {
  const auto start = Clock::now();
  session_.before_server_push();
  for (std::size_t k = 0; k < connections_.size(); ++k) {
    const auto& range = ranges_[k];
    protocol::Envelope e{.type = protocol::Type::kPush, .rank = session_.rank(), .step = step};
    e.fields = {{"rows", rows}, {"loss_sum", loss_sum}, {"version", versions_[k]}};
    if (planned > 0) e.fields["steps"] = planned;
    e.arrays.push_back(wire::to_bytes(grad_sum.subspan(range.begin, range.size())));
    connections_[k]->send(protocol::encode(std::move(e), session_.job_id()),
                          deadline_in(kSendDeadline));
  }
  account();
  session_.add_comm_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

void ServerClient::receive(std::span<double> params, std::uint64_t min_version) {
  const auto start = Clock::now();
  for (std::size_t k = 0; k < connections_.size(); ++k) {
    for (;;) {
      session_.check_alive();
      auto message = connections_[k]->receive(deadline_in(kPollSlice));
      if (!message) continue;
      auto e = protocol::decode(*message, session_.job_id());
      if (e.type != protocol::Type::kSlice || protocol::count(e, "server") != k) {
        fail<ProtocolError>("parameter server {} at {} sent a {} message, expected its slice", k,
                            endpoints_[k], protocol::name_of(e.type));
      }
      if (protocol::count(e, "version") < min_version) continue;  // sent twice (restart)
      const auto slice = protocol::doubles(e, 0, ranges_[k].size());
      std::copy(slice.begin(), slice.end(),
                params.begin() + static_cast<std::ptrdiff_t>(ranges_[k].begin));
      versions_[k] = protocol::count(e, "version");
      if (const auto it = e.fields.find("reassign"); it != e.fields.end() && e.arrays.size() > 1) {
        notice_ = protocol::Envelope{.type = protocol::Type::kReassign, .fields = *it};
        notice_->arrays.push_back(std::move(e.arrays[1]));
      }
      break;
    }
  }
  account();
  session_.add_comm_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

}  // namespace dt::roles

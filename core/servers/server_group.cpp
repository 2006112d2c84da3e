#include "core/servers/server_group.hpp"
#include "core/servers/norm_exchange.hpp"

#include "core/coordinator/resume.hpp"

#include "core/coordinator/session.hpp"
#include "core/coordinator/timeline_recording.hpp"
#include "core/protocol/compression.hpp"
#include "core/protocol/heartbeat.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"
#include "base/memory.hpp"

#include <algorithm>

namespace dt::roles {

using transport::Clock;
using transport::deadline_in;

namespace {

// The model's regularized blocks (weights; the model's l2 applies to them, to nothing else).
std::vector<KeyRange> regularized_blocks(const models::Model& model) {
  std::vector<KeyRange> out;
  for (const auto& b : model.layout()) {
    if (b.regularized) out.push_back({b.offset, b.offset + b.size});
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
  const auto regularized = regularized_blocks(session.model());
  const double l2 = session.model().spec().config.l2;
  const double clip = config.training.optimizer.clip_norm;
  if (!async && clip > 0.0 && ranges_.size() > 1) {
    norms_ = std::make_shared<NormExchange>(static_cast<int>(ranges_.size()), clip);
  }
  for (std::size_t k = 0; k < ranges_.size(); ++k) {
    const auto& range = ranges_[k];
    const auto first = static_cast<std::ptrdiff_t>(range.begin);
    const auto last = static_cast<std::ptrdiff_t>(range.end);
    ServerOptions o;
    o.index = static_cast<int>(k);
    o.range = range;
    o.workers = session.ranks();
    o.asynchronous = async.has_value();
    o.codec = protocol::half_codec(config);
    o.topk = config.aggregation.compression == config::WireCompression::kTopk && !async;
    o.optimizer = config.training.optimizer;
    o.schedule_steps = session.schedule().total_steps();
    o.l2 = l2_blocks(regularized, l2, range);
    o.sparse_rows = session.plan().source.sparse.has_value();
    o.norms = norms_;
    o.clip_from_push = async.has_value() && clip > 0.0 && ranges_.size() > 1;
    o.job_id = session.job_id();
    if (config.output.timeline_steps > 0) {
      o.recorder = std::make_shared<timeline::Recorder>(config.output.timeline_steps);
    }
    for (const auto& f : config.faults) {
      if (f.server == static_cast<int>(k)) o.faults.push_back(f);
    }
    if (async) {
      o.worker_steps = async->worker_steps;
      o.schedule_steps = 0;  // every worker's pushes: each is one update
      for (const auto steps : async->worker_steps) o.schedule_steps += steps;
      o.max_staleness = async->max_staleness;
      o.staleness_lr = async->staleness_lr;
      o.keep_log = k == 0;
      o.snapshot_every = async->snapshot_every;
      o.checkpoint_every = async->checkpoint_every;
      o.copy_every = static_cast<std::uint64_t>(session.ranks());
      o.copy = std::make_shared<ServerCopy>();
    }
    if (from != nullptr) {
      // Sync: the round the run goes on from (after a resize, the next epoch's first).
      o.start_version = async ? from->step() : session.first_step();
      o.optimizer_state = get_optimizer(*from, fmt::format("server.{}.optimizer", k));
      if (async) {
        // Every server continues from server 0's count of each worker's applied pushes (with
        // several servers, one may have applied a push or two more or less of a worker at the
        // same version: asynchronous training tolerates that, as it tolerates staleness).
        start_steps_ = async->start_steps.empty() ? read_worker_steps(*from) : async->start_steps;
        o.start_completed = start_steps_;
      }
    }
    std::vector<double> slice;  // on huge pages: a wide model's slice is reached at random keys
    memory::assign_huge(slice, static_cast<std::size_t>(last - first), 0.0);
    std::copy(params.begin() + first, params.begin() + last, slice.begin());
    servers_.push_back(
        std::make_unique<ParameterServer>(session.transport(), std::move(o), std::move(slice)));
  }
  for (const auto& s : servers_) {
    log::info("parameter server {} owns keys [{}, {}) on {}", s->options().index,
              s->options().range.begin, s->options().range.end, s->endpoint());
  }
  // The first copy a replacement could start from: the start.
  copies_.resize(servers_.size());
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    servers_[k]->capture(copies_[k]);
    left_.push_back(servers_[k]->options().copy);  // async: the server wrote its start
  }
  incarnations_.assign(servers_.size(), 0);
  retired_.resize(servers_.size());
  lost_.assign(servers_.size(), false);
  // fault_tolerance.elastic: the join slots (max_workers above the start) no worker holds yet;
  // the rounds wait for one from its admission on (admit_worker).
  if (!async) {
    for (int rank = 0; rank < session.ranks(); ++rank) {
      if (!session.is_alive(rank)) (void)lose_worker(rank, false);
    }
  }
}

bool ServerGroup::save_state(std::uint64_t version, checkpoint::Checkpoint& out) const {
  // Each server's slice, in key order (split_keys's ranges follow each other), read where it
  // lies: "parameters" is made of them as they come, sparse when the model is.
  checkpoint::ArrayBuilder params("parameters", session_.params().size());
  std::vector<std::uint32_t> marked;
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    const auto& copy = copies_[k];
    // Sparse rows: the state of this version is zero outside the keys marked (touched since
    // the start), which are all a checkpoint needs to read: sync, its copy's marks; async, the
    // kept state's own.
    const bool at_copy_marks = copy.marks.version == version && copy.version == version &&
                               !servers_[k]->options().asynchronous;
    if (at_copy_marks) copy.marks.list(marked);
    const auto take = [&](std::span<const double> slice, const models::OptimizerState& optimizer,
                          const std::vector<std::uint64_t>& worker_steps, const KeyMarks* marks) {
      if (marks != nullptr) marks->list(marked);
      const bool at_marks = at_copy_marks || marks != nullptr;
      if (at_marks) {
        params.add_at(slice, marked);
      } else {
        params.add(slice);
      }
      put_optimizer(out, fmt::format("server.{}.optimizer", k), optimizer,
                    at_marks ? &marked : nullptr);
      if (k == 0) out.manifest["mode_state"]["worker_steps"] = worker_steps;
    };
    // A server that failed (abort): its slice is the coordinator's copy, if of that version.
    if (!lost_[k]) {
      // Async: server 0's log says `version` updates happened; the other servers may not
      // have applied all of those pushes yet (they are on their way), so give them a moment.
      if (servers_[k]->options().asynchronous) {
        (void)servers_[k]->wait_version(version, std::chrono::milliseconds(1000));
      }
      if (servers_[k]->read_state_at(version, take)) continue;
    }
    // The state before the latest round is the coordinator's copy (a stop during a round).
    if (copy.version != version) return false;
    take(copy.slice, copy.optimizer, copy.worker_steps, nullptr);
  }
  params.finish(out);
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
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    out.push_back(servers_[k]->stats());
    out.back().half_values += retired_[k].half_values;
    out.back().half_bytes += retired_[k].half_bytes;
    out.back().topk_entries += retired_[k].topk_entries;
  }
  return out;
}

void ServerGroup::stop() {
  if (norms_) norms_->close();  // a server waiting for a round's norm stops at once
  for (auto& s : servers_) s->stop();
  // output.timeline: each server's spans, now that its thread has ended (replacements of a
  // failed server do not record: server_recovery.cpp).
  for (const auto& s : servers_) {
    if (timeline_taken_) break;
    if (!s->options().recorder || s->options().incarnation != 0) continue;
    const int k = s->options().index;
    session_.result().timeline.push_back({coordinator_timeline_pid(session_.config()),
                                          "coordinator", k + 1, fmt::format("server {}", k), 0,
                                          s->options().recorder->spans()});
  }
  timeline_taken_ = true;
}

nlohmann::json ServerGroup::servers_json() const {
  auto list = nlohmann::json::array();
  for (std::size_t k = 0; k < servers_.size(); ++k) {
    const auto& s = servers_[k];
    const auto st = s->stats();
    const auto& old = retired_[k].traffic;  // the failed servers' of this range
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

}  // namespace dt::roles

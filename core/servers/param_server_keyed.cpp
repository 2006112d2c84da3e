// Keyed synchronous rounds of a parameter server (param_server.hpp): sparse rows' pushes and
// pulls name the offsets into this server's slice their batch touches (core/modes/sparse_star.hpp
// describes the same exchange with the coordinator as the one server).
//
//   keyed pull   fields {keyed}, array 0: a key frame of offsets; answered at once with their
//                values (the coordinator starts step s only once every server is at version s)
//   keyed push   fields {keyed, rows, loss_sum, version}, array 0: the offsets, array 1: the
//                gradient sum at them, array 2 (optional): the offsets of the next step
//   keyed slice  fields {keyed, server, version}, array 0: the values of the offsets asked for
//
// A round adds the pushes in rank order at their offsets (the same bits as the dense round's
// sums), lists the touched offsets in order, divides by the round's rows, adds the L2 term at
// them (lazy L2) and steps only them (Optimizer::step_indices).

#include "core/servers/param_server.hpp"

#include "core/protocol/key_frames.hpp"
#include "core/protocol/timing.hpp"
#include "base/error.hpp"
#include "base/log.hpp"

namespace dt::roles {

using transport::deadline_in;

namespace {

void send_values(transport::Listener& listener, const ServerOptions& options, int rank,
                 std::uint64_t version, std::span<const double> slice,
                 std::span<const std::uint32_t> offsets) {
  protocol::Envelope s{.type = protocol::Type::kSlice, .step = version};
  s.fields = {{"server", options.index}, {"version", version}, {"keyed", true}};
  wire::Bytes frame(offsets.size() * sizeof(double));
  auto* out = reinterpret_cast<double*>(frame.data());
  for (const std::uint32_t o : offsets) *out++ = slice[o];
  s.arrays.push_back(std::move(frame));
  try {
    listener.send(protocol::peer_name(static_cast<std::uint32_t>(rank)),
                  protocol::encode(std::move(s), options.job_id), deadline_in(kSendDeadline));
  } catch (const TransportError& e) {
    log::debug("no slice for worker {}: {}", rank, e.what());  // as reply(): the coordinator's
  }
}

}  // namespace

void ParameterServer::start_keyed() {
  if (keyed_) return;
  keyed_ = true;
  const auto workers = static_cast<std::size_t>(options_.workers);
  pending_offsets_.resize(workers);
  next_offsets_.resize(workers);
  has_next_.assign(workers, false);
}

void ParameterServer::on_keyed_pull(const protocol::Envelope& e) {
  start_keyed();
  if (e.arrays.empty()) fail<ProtocolError>("worker {} sent a keyed pull without keys", e.rank);
  const auto r = static_cast<std::size_t>(e.rank);
  protocol::decode_keys(e.arrays[0], options_.range.size(),
                        fmt::format("worker {}'s keys", e.rank), next_offsets_[r]);
  // slice_ and the version change on this thread only: read here without the lock, as reply().
  send_values(*listener_, options_, static_cast<int>(e.rank), stats_.version, slice_,
              next_offsets_[r]);
}

void ParameterServer::take_next_offsets(const protocol::Envelope& e) {
  const auto r = static_cast<std::size_t>(e.rank);
  has_next_[r] = e.arrays.size() > 2;
  if (has_next_[r]) {
    protocol::decode_keys(e.arrays[2], options_.range.size(),
                          fmt::format("worker {}'s next keys", e.rank), next_offsets_[r]);
  }
}

void ParameterServer::take_keyed_push(const protocol::Envelope& e) {
  start_keyed();  // a replacement server's first message may be a push sent again
  const auto r = static_cast<std::size_t>(e.rank);
  if (e.arrays.size() < 2) fail<ProtocolError>("worker {}'s keyed push lacks its values", e.rank);
  protocol::decode_keys(e.arrays[0], options_.range.size(),
                        fmt::format("worker {}'s keys", e.rank), pending_offsets_[r]);
  const auto g = protocol::doubles(e, 1, pending_offsets_[r].size());
  pending_[r].assign(g.begin(), g.end());
  take_next_offsets(e);
}

void ParameterServer::apply_keyed_round() {
  std::uint64_t rows = 0;
  parts_.clear();
  for (std::size_t r = 0; r < pending_.size(); ++r) {
    if (!have_[r]) continue;  // a worker lost (continue) before its push of this round
    parts_.push_back({pending_offsets_[r], pending_[r].data()});
    rows += pending_rows_[r];
  }
  models::sum_parts(parts_, 1, touched_list_, sums_);  // in rank order
  touched_index_.assign(touched_list_.begin(), touched_list_.end());
  std::lock_guard lock(mu_);
  if (rows > 0) {  // an empty round changes nothing, as in the dense round
    const double inv = 1.0 / static_cast<double>(rows);
    for (std::size_t i = 0; i < sums_.size(); ++i) {
      sums_[i] *= inv;
      const double l2 = options_.l2[touched_list_[i]];
      if (l2 != 0.0) sums_[i] += l2 * slice_[touched_list_[i]];
    }
    optimizer_->step_indices(touched_index_, sums_, 1.0, slice_);
    stepped_.assign(touched_index_.begin(), touched_index_.end());
  } else {
    stepped_.clear();
  }
  stepped_from_ = stats_.version;
  ++stats_.version;
  std::fill(have_.begin(), have_.end(), false);
  received_ = 0;
  stats_.missing.clear();
  cv_.notify_all();
}

void ParameterServer::reply_keyed(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (!has_next_[r]) return;  // its next step starts an epoch: it pulls its keys then
  send_values(*listener_, options_, rank, stats_.version, slice_, next_offsets_[r]);
}

}  // namespace dt::roles

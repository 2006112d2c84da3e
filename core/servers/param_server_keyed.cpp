// The keyed exchange of a parameter server (param_server.hpp) on sparse rows: pushes and pulls
// name the offsets into this server's slice their batch touches (core/modes/sparse_star.hpp
// describes the same exchange with the coordinator as the one server).
//
// Synchronous rounds (gradients mode):
//   keyed pull   fields {keyed}, array 0: a key frame of offsets; answered at once with their
//                values (the coordinator starts step s only once every server is at version s)
//   keyed push   fields {keyed, rows, loss_sum, version}, array 0: the offsets, array 1: the
//                gradient sum at them, array 2 (optional): the offsets of the next step
//   keyed slice  fields {keyed, server, version}, array 0: the values of the offsets asked for
//
// A round adds the pushes in rank order at their offsets (the same bits as the dense round's
// sums), lists the touched offsets in order, divides by the round's rows, adds the L2 term at
// them (lazy L2) and steps only them (Optimizer::step_indices; under clip_norm with several
// servers by the factor of their exchanged norm, param_server_clip.cpp).
//
// Asynchronous (async mode), the same messages with the dense async fields:
//   keyed pull   {keyed, steps} (or a rejoin's {keyed, steps, rejoin, awaiting}), array 0: the
//                offsets of the worker's next step
//   keyed push   {keyed, rows, loss_sum, version[, steps][, clip]}, arrays as above; array 2
//                (the next step's offsets) on every push but the worker's last; clip: the
//                factor of the worker's whole gradient (clip_norm over several servers,
//                core/modes/push_clip.hpp), which scales the step, as in the dense push
//   keyed slice  as above, with a "reassign" notice (async continue) and its second array
// Each push is applied at once as the dense async apply does, at its offsets only: sum / rows,
// lazy L2, step_indices, staleness_lr's scaled step. The answer is held by the staleness bound
// as a dense one is.

#include "core/servers/param_server.hpp"

#include "core/protocol/key_frames.hpp"
#include "base/error.hpp"

namespace dt::roles {

void ParameterServer::send_values(int rank, std::span<const std::uint32_t> offsets,
                                  std::optional<wire::Bytes> read) {
  protocol::Envelope s{.type = protocol::Type::kSlice, .step = stats_.version};
  s.fields = {{"server", options_.index}, {"version", stats_.version}, {"keyed", true}};
  if (!read) {  // not read by the round's step (finish_round): read now
    read.emplace(offsets.size() * sizeof(double));
    auto* out = reinterpret_cast<double*>(read->data());
    for (const std::uint32_t o : offsets) *out++ = slice_[o];
  }
  s.arrays.push_back(std::move(*read));
  send_slice(rank, std::move(s));
}

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
  send_values(static_cast<int>(e.rank), next_offsets_[r]);
}

void ParameterServer::take_next_offsets(const protocol::Envelope& e) {
  start_keyed();
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

void ParameterServer::sum_keyed_round() {
  std::uint64_t rows = 0;
  parts_.clear();
  for (std::size_t r = 0; r < pending_.size(); ++r) {
    if (!have_[r]) continue;  // a worker lost (continue) before its push of this round
    parts_.push_back({pending_offsets_[r], pending_[r].data()});
    rows += pending_rows_[r];
  }
  models::sum_parts(parts_, 1, touched_list_, sums_);  // in rank order
  touched_index_.assign(touched_list_.begin(), touched_list_.end());
  round_.rows = rows;
  if (rows == 0) return;  // an empty round changes nothing, as in the dense round
  const double inv = 1.0 / static_cast<double>(rows);
  for (double& s : sums_) s *= inv;
  add_l2_at(options_.l2, touched_list_, slice_, sums_);  // slice_: this thread its only writer
}

void ParameterServer::reply_keyed(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (!has_next_[r]) return;  // its next step starts an epoch: it pulls its keys then
  send_values(rank, next_offsets_[r], next_values_.take(r, stats_.version));
}

void ParameterServer::take_pull_offsets(const protocol::Envelope& e) {
  if (!e.fields.contains("keyed")) return;
  start_keyed();
  if (e.arrays.empty()) fail<ProtocolError>("worker {} sent a keyed pull without keys", e.rank);
  const auto r = static_cast<std::size_t>(e.rank);
  protocol::decode_keys(e.arrays[0], options_.range.size(),
                        fmt::format("worker {}'s keys", e.rank), next_offsets_[r]);
  has_next_[r] = true;
}

std::span<const double> ParameterServer::take_async_keyed_push(const protocol::Envelope& e) {
  start_keyed();
  if (e.arrays.size() < 2) fail<ProtocolError>("worker {}'s keyed push lacks its values", e.rank);
  // Sorted and unique (decode_keys refuses a repeated key): step_indices' contract.
  protocol::decode_keys(e.arrays[0], options_.range.size(),
                        fmt::format("worker {}'s keys", e.rank), touched_list_);
  take_next_offsets(e);
  return protocol::doubles(e, 1, touched_list_.size());
}

// on_async_push's dense arithmetic at the pushed offsets: every other coordinate has a zero
// gradient there, which moves neither it nor its state for sgd without momentum, adagrad and
// ftrl (the same bits); L2 and momentum/adam are lazy, as in the keyed rounds.
void ParameterServer::apply_keyed_push(std::span<const double> g, std::uint64_t rows,
                                       std::uint64_t staleness, double clip) {
  const double inv = 1.0 / static_cast<double>(rows);
  const auto n = touched_list_.size();
  touched_index_.assign(touched_list_.begin(), touched_list_.end());
  if (options_.copy && options_.copy_every > 0) {  // for leave_copy
    changed_.insert(changed_.end(), touched_list_.begin(), touched_list_.end());
  }
  sums_.resize(n);
  for (std::size_t i = 0; i < n; ++i) sums_[i] = g[i] * inv;
  add_l2_at(options_.l2, touched_list_, slice_, sums_);
  // The kept states' marks (keep_state) are set in the step's own pass: in a pass of their own
  // at 2^24 keys their word is a miss every second key.
  models::Optimizer::LazyStepWork work;
  if (marks_.version != UINT64_MAX) work.marks = keys_.stepped.words();  // marks_ at keep_state
  if (!options_.staleness_lr || staleness == 0) {
    optimizer_->step_indices_with(touched_index_, sums_, clip, slice_, work);
    return;
  }
  // As the dense apply: the STEP is divided by 1 + staleness, the optimizer sees the whole
  // gradient. before_ (the slice's size) holds the touched values.
  for (std::size_t i = 0; i < n; ++i) before_[i] = slice_[touched_list_[i]];
  optimizer_->step_indices_with(touched_index_, sums_, clip, slice_, work);
  const double scale = 1.0 / (1.0 + static_cast<double>(staleness));
  for (std::size_t i = 0; i < n; ++i) {
    double& w = slice_[touched_list_[i]];
    w = before_[i] + (w - before_[i]) * scale;
  }
}

}  // namespace dt::roles

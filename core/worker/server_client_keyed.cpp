// ServerClient's keyed exchange (server_client.hpp): a sparse batch's parameter indices split
// by server, sent as key frames of offsets into each server's slice.

#include "core/worker/server_client.hpp"

#include "core/protocol/key_frames.hpp"
#include "core/protocol/timing.hpp"
#include "core/worker/worker.hpp"
#include "base/error.hpp"
#include "transports/transport.hpp"

#include <algorithm>
#include <chrono>

namespace dt::roles {

using transport::Clock;
using transport::deadline_in;

std::span<const std::uint64_t> ServerClient::part(std::span<const std::uint64_t> indices,
                                                  std::size_t k) const {
  const auto& range = ranges_[k];
  const auto from = std::lower_bound(indices.begin(), indices.end(), range.begin);
  const auto to = std::lower_bound(from, indices.end(), range.end);
  return indices.subspan(static_cast<std::size_t>(from - indices.begin()),
                         static_cast<std::size_t>(to - from));
}

wire::Bytes ServerClient::offsets_frame(std::span<const std::uint64_t> part, std::size_t k) {
  offsets_.resize(part.size());
  for (std::size_t i = 0; i < part.size(); ++i) {
    offsets_[i] = static_cast<std::uint32_t>(part[i] - ranges_[k].begin);
  }
  return protocol::encode_keys(offsets_);
}

wire::Bytes ServerClient::ask(std::span<const std::uint64_t> part, std::size_t k) {
  auto frame = offsets_frame(part, k);
  if (asynchronous_) {  // kept for a replacement of server k (on_moved)
    asked_frames_.resize(connections_.size());
    asked_frames_[k] = frame;
  }
  return frame;
}

void ServerClient::pull_keyed(std::span<const std::uint64_t> indices, std::uint64_t steps) {
  const auto start = Clock::now();
  const auto k_count = connections_.size();
  asked_at_.assign(k_count, 0);
  asked_count_.assign(k_count, 0);
  keyed_ = true;
  if (asynchronous_) steps_ = steps;
  for (std::size_t k = 0; k < k_count; ++k) {
    const auto mine = part(indices, k);
    asked_at_[k] = static_cast<std::size_t>(mine.data() - indices.data());
    asked_count_[k] = mine.size();
    protocol::Envelope e{.type = protocol::Type::kPull, .rank = session_.rank()};
    e.fields = {{"keyed", true}};
    if (asynchronous_) e.fields["steps"] = steps;
    e.arrays.push_back(ask(mine, k));
    last_sent_[k] = protocol::encode(std::move(e), session_.job_id());
    pushed_[k] = false;  // a replaced server is sent this pull again (on_moved)
    // Async: a worker with nothing (left) to do gets no values.
    awaiting_[k] = !asynchronous_ || pushes_ < steps_;
    min_version_[k] = 0;
    connections_[k]->send(*last_sent_[k], deadline_in(kSendDeadline));
  }
  account();
  session_.add_comm_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

void ServerClient::push_keyed(std::span<const std::uint64_t> indices,
                              std::span<const double> grad, std::span<const std::uint64_t> next,
                              std::uint64_t step, std::uint64_t rows, double loss_sum,
                              std::uint64_t planned, std::optional<double> clip) {
  const auto start = Clock::now();
  session_.before_server_push();
  const auto k_count = connections_.size();
  asked_at_.assign(k_count, 0);
  asked_count_.assign(k_count, 0);
  keyed_ = true;
  if (planned > 0) steps_ = planned;  // async continue: rows taken over lengthen the plan
  for (std::size_t k = 0; k < k_count; ++k) {
    const auto mine = part(indices, k);
    const auto at = static_cast<std::size_t>(mine.data() - indices.data());
    protocol::Envelope e{.type = protocol::Type::kPush, .rank = session_.rank(), .step = step};
    e.fields = {{"keyed", true}, {"rows", rows}, {"loss_sum", loss_sum}, {"version", versions_[k]}};
    if (planned > 0) e.fields["steps"] = planned;
    if (clip) e.fields["clip"] = *clip;
    e.arrays.push_back(offsets_frame(mine, k));
    e.arrays.push_back(wire::to_bytes(grad.subspan(at, mine.size())));
    if (!next.empty()) {
      const auto ahead = part(next, k);
      asked_at_[k] = static_cast<std::size_t>(ahead.data() - next.data());
      asked_count_[k] = ahead.size();
      e.arrays.push_back(ask(ahead, k));
    }
    last_sent_[k] = protocol::encode(std::move(e), session_.job_id());
    last_push_step_[k] = step;
    pushed_[k] = true;
    awaiting_[k] = !next.empty();
    // Sync: the values of round step + 1; async: of whatever version the server is at.
    min_version_[k] = asynchronous_ ? 0 : step + 1;
    connections_[k]->send(*last_sent_[k], deadline_in(kSendDeadline));
  }
  ++pushes_;
  account();
  session_.add_comm_seconds(std::chrono::duration<double>(Clock::now() - start).count());
}

void ServerClient::receive_keyed(std::span<double> local, std::uint64_t min_version) {
  await_owed(min_version, [&](std::size_t k, protocol::Envelope& e) {
    if (!e.fields.contains("keyed")) {
      fail<ProtocolError>("parameter server {} at {} sent a whole slice, expected the values of "
                          "this worker's keys", k, endpoints_[k]);
    }
    const auto values = protocol::doubles(e, 0, asked_count_[k]);
    std::copy(values.begin(), values.end(),
              local.begin() + static_cast<std::ptrdiff_t>(asked_at_[k]));
    take_reassign(e);
  });
}

}  // namespace dt::roles

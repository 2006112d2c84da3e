#include "core/servers/norm_exchange.hpp"

#include "core/models/optim_controls.hpp"
#include "base/error.hpp"

namespace dt::roles {

namespace {

// Rounds kept behind the newest posted: a replacement redoes the round its copy starts from,
// at most one behind the others (the workers start a round only once every server answered the
// last); a few more cost nothing.
constexpr std::uint64_t kRoundsKept = 4;

}  // namespace

NormExchange::NormExchange(int servers, double clip) : servers_(servers), clip_(clip) {
  if (servers < 1) fail<TrainingError>("internal error: a norm exchange of {} servers", servers);
}

void NormExchange::post(std::uint64_t round, int server, double sum_of_squares) {
  if (server < 0 || server >= servers_) {
    fail<TrainingError>("internal error: server {} posted to a norm exchange of {}", server,
                        servers_);
  }
  std::lock_guard lock(mu_);
  Round& r = rounds_[round];
  if (r.factor) return;  // fixed: the others have scaled by it
  if (r.partials.empty()) r.partials.resize(static_cast<std::size_t>(servers_));
  auto& slot = r.partials[static_cast<std::size_t>(server)];
  if (!slot) ++r.posted;
  slot = sum_of_squares;
  if (r.posted == servers_) {
    double total = 0.0;
    for (const auto& p : r.partials) total += *p;  // server order: the same bits every run
    r.factor = models::clip_coefficient(total, clip_);
    cv_.notify_all();
  }
  const std::uint64_t newest = rounds_.rbegin()->first;
  if (newest >= kRoundsKept) rounds_.erase(rounds_.begin(), rounds_.lower_bound(newest - kRoundsKept));
}

std::optional<double> NormExchange::factor(std::uint64_t round, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  std::optional<double> out;
  cv_.wait_for(lock, wait, [&] {
    const auto it = rounds_.find(round);
    if (it != rounds_.end() && it->second.factor) out = it->second.factor;
    return out.has_value() || closed_;
  });
  return out;
}

void NormExchange::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

}  // namespace dt::roles

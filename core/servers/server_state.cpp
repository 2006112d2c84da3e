#include "core/servers/server_state.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <bit>

namespace dt::roles {

std::vector<L2Block> l2_blocks(const std::vector<KeyRange>& regularized, double l2,
                               const KeyRange& range) {
  std::vector<L2Block> out;
  if (l2 == 0.0) return out;
  for (const auto& b : regularized) {
    const std::size_t first = std::max(b.begin, range.begin);
    const std::size_t last = std::min(b.end, range.end);
    if (first < last) out.push_back({first - range.begin, last - range.begin, l2});
  }
  std::sort(out.begin(), out.end(), [](const L2Block& a, const L2Block& b) {
    return a.begin < b.begin;
  });
  return out;
}

void add_l2_at(std::span<const L2Block> blocks, std::span<const std::uint32_t> offsets,
               std::span<const double> slice, std::span<double> sums) {
  if (blocks.empty()) return;
  std::size_t b = 0;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    const std::size_t o = offsets[i];
    while (b < blocks.size() && blocks[b].end <= o) ++b;
    if (b == blocks.size()) return;
    if (o >= blocks[b].begin) sums[i] += blocks[b].l2 * slice[o];
  }
}

void add_l2(std::span<const L2Block> blocks, std::span<const double> slice,
            std::span<double> grad) {
  for (const auto& b : blocks) {
    for (std::size_t i = b.begin; i < b.end; ++i) grad[i] += b.l2 * slice[i];
  }
}

void KeyMarks::reset_from(std::span<const std::span<const double>> vectors, std::size_t keys) {
  words_.assign((keys + 63) / 64, 0);
  for (const auto v : vectors) {
    const std::size_t per = keys == 0 ? 1 : std::max<std::size_t>(1, v.size() / keys);
    for (std::size_t w = 0; w < words_.size(); ++w) {
      const std::size_t first = w * 64;
      const std::size_t last = std::min(first + 64, keys);
      std::uint64_t any = 0;  // a word of zeros (most of a wide model): one test
      for (std::size_t i = first * per; i < last * per; ++i) {
        any |= std::bit_cast<std::uint64_t>(v[i]);
      }
      if (any == 0) continue;
      for (std::size_t i = first; i < last; ++i) {
        std::uint64_t bits = 0;
        for (std::size_t j = 0; j < per; ++j) bits |= std::bit_cast<std::uint64_t>(v[i * per + j]);
        if (bits != 0) words_[w] |= std::uint64_t{1} << (i - first);
      }
    }
  }
}

void KeyMarks::mark(std::span<const std::uint64_t> keys) {
  // Ascending keys, a few hundred apart in a wide model: words the hardware prefetcher does not
  // foresee (at 2^24 keys the 2 MB of marks, a miss every second key), fetched kAhead keys early.
  constexpr std::size_t kAhead = 32;
  std::uint64_t* words = words_.data();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i + kAhead < keys.size()) __builtin_prefetch(words + keys[i + kAhead] / 64, 1, 1);
    const std::uint64_t k = keys[i];
    words[k / 64] |= std::uint64_t{1} << (k % 64);
  }
}

void KeyMarks::list(std::vector<std::uint32_t>& out) const {
  out.clear();
  for (std::size_t w = 0; w < words_.size(); ++w) {
    for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
      out.push_back(static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
    }
  }
}

void KeyMarks::clear(std::size_t keys) { words_.assign((keys + 63) / 64, 0); }

void KeyMarks::move_into(KeyMarks& into) {
  for (std::size_t w = 0; w < words_.size(); ++w) {
    into.words_[w] |= words_[w];
    words_[w] = 0;
  }
}

std::vector<KeyRange> split_keys(std::size_t count, int servers) {
  if (servers < 1) {
    fail<ConfigError>("aggregation.servers must be at least 1, got {}", servers);
  }
  const auto k = static_cast<std::size_t>(servers);
  if (k > count) {
    fail<ConfigError>("aggregation.servers is {} but the model has only {} parameter(s): every "
                      "server must own at least one; set aggregation.servers to at most {}",
                      servers, count, count);
  }
  std::vector<KeyRange> ranges;
  ranges.reserve(k);
  const std::size_t base = count / k;
  const std::size_t extra = count % k;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t size = base + (i < extra ? 1 : 0);
    ranges.push_back({begin, begin + size});
    begin += size;
  }
  return ranges;
}

StepClock::StepClock(std::vector<std::uint64_t> steps_per_worker, std::optional<int> max_staleness)
    : steps_(std::move(steps_per_worker)),
      completed_(steps_.size(), 0),
      max_staleness_(max_staleness) {
  if (max_staleness_ && *max_staleness_ < 0) {
    fail<ConfigError>("aggregation.async.max_staleness must be >= 0, got {}", *max_staleness_);
  }
  for (const auto s : steps_) unfinished_ += s > 0 ? 1 : 0;
}

void StepClock::resume_at(const std::vector<std::uint64_t>& completed) {
  if (completed.size() != completed_.size()) {
    fail<TrainingError>("a resumed step clock for {} workers got {} counts", completed_.size(),
                        completed.size());
  }
  unfinished_ = 0;
  for (std::size_t r = 0; r < completed.size(); ++r) {
    completed_[r] = std::min(completed[r], steps_[r]);
    unfinished_ += completed_[r] < steps_[r] ? 1 : 0;
  }
}

void StepClock::retire(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (completed_.at(r) < steps_.at(r)) --unfinished_;
  steps_[r] = completed_[r];
}

void StepClock::set_steps(int rank, std::uint64_t steps) {
  const auto r = static_cast<std::size_t>(rank);
  if (steps < completed_.at(r)) {
    fail<TrainingError>("worker {} now plans {} steps but has completed {}", rank, steps,
                        completed_[r]);
  }
  const bool was = completed_[r] < steps_[r];
  const bool is = completed_[r] < steps;
  if (was != is) unfinished_ += is ? 1 : -1;
  steps_[r] = steps;
}

void StepClock::admit(int rank, std::uint64_t steps) {
  const auto r = static_cast<std::size_t>(rank);
  if (completed_.at(r) < steps_.at(r)) --unfinished_;
  completed_[r] = 0;
  steps_[r] = steps;
  if (steps > 0) ++unfinished_;
}

std::uint64_t StepClock::completed(int rank) const { return completed_.at(static_cast<std::size_t>(rank)); }

bool StepClock::finished(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return completed_.at(r) >= steps_.at(r);
}

std::optional<std::uint64_t> StepClock::slowest() const {
  std::optional<std::uint64_t> low;
  for (std::size_t r = 0; r < completed_.size(); ++r) {
    if (completed_[r] >= steps_[r]) continue;
    low = low ? std::min(*low, completed_[r]) : completed_[r];
  }
  return low;
}

bool StepClock::may_start(int rank) const {
  if (finished(rank)) return false;
  if (!max_staleness_) return true;
  const std::uint64_t next = completed(rank);  // the step it would start
  const auto low = slowest();                 // includes `rank` itself, so it exists
  return next <= *low + static_cast<std::uint64_t>(*max_staleness_);
}

std::uint64_t StepClock::lead(int rank) const {
  const auto low = slowest();
  if (!low) return 0;
  const auto mine = completed(rank);
  return mine > *low ? mine - *low : 0;
}

void StepClock::complete(int rank) {
  if (finished(rank)) {
    fail<TrainingError>("worker {} pushed a step after its last ({} steps)", rank,
                        steps_.at(static_cast<std::size_t>(rank)));
  }
  const auto r = static_cast<std::size_t>(rank);
  ++completed_[r];
  if (completed_[r] == steps_[r]) --unfinished_;
}

void StalenessStats::add(std::uint64_t staleness) {
  ++count;
  sum += staleness;
  max = std::max(max, staleness);
  ++histogram[staleness];
}

double StalenessStats::mean() const noexcept {
  return count == 0 ? 0.0 : static_cast<double>(sum) / static_cast<double>(count);
}

nlohmann::json StalenessStats::to_json() const {
  nlohmann::json hist = nlohmann::json::object();
  for (const auto& [s, n] : histogram) hist[std::to_string(s)] = n;
  return {{"count", count}, {"max", max}, {"mean", mean()}, {"histogram", hist}};
}

}  // namespace dt::roles

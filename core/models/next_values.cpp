#include "core/models/next_values.hpp"

namespace dt::models {

void NextValues::clear(std::size_t ranks) {
  if (frames_.size() < ranks) frames_.resize(ranks);
  for (auto& f : frames_) f.version = UINT64_MAX;
  gathers_.clear();
}

double* NextValues::add(std::size_t rank, std::span<const std::uint32_t> keys, std::size_t extra,
                        std::uint64_t version) {
  if (frames_.size() <= rank) frames_.resize(rank + 1);
  Frame& f = frames_[rank];
  f.version = version;
  f.bytes.resize((keys.size() + extra) * sizeof(double));
  auto* out = reinterpret_cast<double*>(f.bytes.data());
  gathers_.push_back({keys, out});
  return out;
}

std::optional<NextValues::Bytes> NextValues::take(std::size_t rank, std::uint64_t version) {
  if (rank >= frames_.size() || frames_[rank].version != version) return std::nullopt;
  frames_[rank].version = UINT64_MAX;
  return std::move(frames_[rank].bytes);
}

}  // namespace dt::models

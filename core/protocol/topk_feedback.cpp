#include "core/protocol/topk_feedback.hpp"

#include "transports/topk_codec.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dt::protocol {

void TopkFeedback::select(std::span<const double> grad, double ratio) {
  const std::size_t p = grad.size();
  if (residual_.size() != p) residual_.assign(p, 0.0);
  for (std::size_t i = 0; i < p; ++i) residual_[i] += grad[i];
  wire::select_topk(residual_, wire::topk_count(ratio, p), order_, keys_);
  values_.resize(keys_.size());
  for (std::size_t e = 0; e < keys_.size(); ++e) {
    values_[e] = residual_[keys_[e]];
    residual_[keys_[e]] = 0.0;
  }
}

void TopkFeedback::select_none(std::size_t p) {
  if (residual_.size() != p) residual_.assign(p, 0.0);
  keys_.clear();
  values_.clear();
}

void TopkFeedback::encode(std::size_t begin, std::size_t end, wire::Bytes& out) const {
  const auto first = std::lower_bound(keys_.begin(), keys_.end(), begin) - keys_.begin();
  const auto last = std::lower_bound(keys_.begin(), keys_.end(), end) - keys_.begin();
  const auto count = static_cast<std::size_t>(last - first);
  wire::encode_topk(std::span(keys_).subspan(static_cast<std::size_t>(first), count),
                    std::span(values_).subspan(static_cast<std::size_t>(first), count),
                    static_cast<std::uint32_t>(begin), end - begin, out);
}

void TopkFeedback::set_residual(std::span<const double> residual, std::size_t p) {
  if (residual.size() == p) {
    residual_.assign(residual.begin(), residual.end());
  } else {
    residual_.assign(p, 0.0);
  }
}

std::string topk_residual_key(int rank) { return fmt::format("topk_residual.{}", rank); }

}  // namespace dt::protocol

#include "core/modes/push_clip.hpp"

#include "core/models/optim_controls.hpp"

#include <algorithm>

namespace dt::modes {

namespace {

// The clip factor of g_j = grad_sum[j] / rows (+ l2 * values[j] where key_of(j) is in one of
// the ascending `regularized` runs), the g_j summed in order.
template <class KeyOf>
double push_clip_factor(std::span<const PushClip::Run> regularized, double l2, double clip,
                        std::span<const double> values, std::span<const double> grad_sum,
                        std::uint64_t rows, KeyOf key_of) {
  if (rows == 0) return 1.0;
  const double inv = 1.0 / static_cast<double>(rows);
  double sum = 0.0;
  auto run = regularized.begin();
  for (std::size_t j = 0; j < grad_sum.size(); ++j) {
    double g = grad_sum[j] * inv;
    if (l2 != 0.0) {
      const std::uint64_t key = key_of(j);
      while (run != regularized.end() && run->end <= key) ++run;
      if (run != regularized.end() && run->begin <= key) g += l2 * values[j];
    }
    sum += g * g;
  }
  return models::clip_coefficient(sum, clip);
}

}  // namespace

PushClip::PushClip(const models::Model& model, double clip)
    : l2_(model.spec().config.l2), clip_(clip) {
  for (const auto& b : model.layout()) {
    if (b.regularized && b.size > 0) regularized_.push_back({b.offset, b.offset + b.size});
  }
  std::sort(regularized_.begin(), regularized_.end(),
            [](const Run& a, const Run& b) { return a.begin < b.begin; });
}

double PushClip::factor(std::span<const double> params, std::span<const double> grad_sum,
                        std::uint64_t rows) const {
  return push_clip_factor(regularized_, l2_, clip_, params, grad_sum, rows,
                          [](std::size_t j) { return static_cast<std::uint64_t>(j); });
}

double PushClip::factor_at(std::span<const std::uint64_t> indices,
                           std::span<const double> values, std::span<const double> grad_sum,
                           std::uint64_t rows) const {
  return push_clip_factor(regularized_, l2_, clip_, values, grad_sum, rows,
                          [&](std::size_t j) { return indices[j]; });
}

}  // namespace dt::modes

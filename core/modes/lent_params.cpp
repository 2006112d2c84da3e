#include "core/modes/lent_params.hpp"

#include "base/memory.hpp"

#include <cstddef>
#include <utility>

namespace dt::modes {

// A lent buffer's lease: messages hold it while they may be sent; once the buffer has been
// handed over (kept), the last of them frees it.
struct LentParams::Pin final : wire::Lease {
  void release() noexcept override {}  // a sender's lease: nothing to give back early
  std::vector<double> kept;
};

LentParams::LentParams(std::vector<double>& params)
    : params_(params), params_pin_(std::make_shared<Pin>()), spare_pin_(std::make_shared<Pin>()) {}

LentParams::~LentParams() {
  // On the way out of a failed step too: a request that still lends the spare keeps its bytes.
  if (spare_pin_.use_count() > 1) spare_pin_->kept = std::move(spare_);
}

void LentParams::lend(protocol::Envelope& request) {
  request.arrays.emplace_back();  // empty: the frame is the view
  request.views.resize(request.arrays.size());
  request.views.back() = std::as_bytes(std::span<const double>(params_));
  request.lease = params_pin_;
}

std::span<double> LentParams::target() {
  if (spare_pin_.use_count() > 1) {  // a live message lends this buffer: it keeps it
    spare_pin_->kept = std::move(spare_);
    spare_pin_ = std::make_shared<Pin>();
    spare_ = {};
    ++handed_over_;
  }
  // Huge pages, as the parameters' own buffer (memory::assign_huge in the coordinator).
  if (spare_.size() != params_.size()) memory::assign_huge(spare_, params_.size(), 0.0);
  return spare_;
}

void LentParams::swap() noexcept {
  params_.swap(spare_);  // the buffers change owners; pointers into them stay valid
  params_pin_.swap(spare_pin_);
}

void LentParams::finish() {
  if (params_pin_.use_count() <= 1) return;
  std::vector<double> copy(params_);
  params_.swap(copy);
  params_pin_->kept = std::move(copy);
  params_pin_ = std::make_shared<Pin>();
  ++handed_over_;
}

}  // namespace dt::modes

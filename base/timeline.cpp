#include "base/timeline.hpp"

#include <time.h>

#include <cstring>
#include <stdexcept>

namespace dt::timeline {
namespace {

thread_local Recorder* t_recorder = nullptr;

// The wire form of a span: fixed width, so that a report's frame is a plain array.
struct Packed {
  std::uint64_t step;
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint32_t phase;
  std::uint32_t detail;
};
static_assert(sizeof(Packed) == 32);

}  // namespace

std::string_view name_of(Phase phase) noexcept {
  switch (phase) {
    case Phase::kWait: return "wait for parameters";
    case Phase::kCompute: return "compute";
    case Phase::kSend: return "send";
    case Phase::kPull: return "pull parameters";
    case Phase::kPush: return "push gradient";
    case Phase::kReduceScatter: return "reduce-scatter";
    case Phase::kAllGather: return "all-gather";
    case Phase::kApply: return "apply";
    case Phase::kBroadcast: return "broadcast";
    case Phase::kGather: return "gather";
    case Phase::kServerApply: return "server apply";
    case Phase::kCheckpoint: return "checkpoint";
    case Phase::kEvaluation: return "evaluation";
  }
  return "unknown";
}

std::int64_t now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void Recorder::add(const Span& span) {
  if (keep_steps_ == 0) return;
  if (span.step > newest_) {
    newest_ = span.step;
    // Spans arrive in (nearly) step order: the oldest are at the front.
    while (head_ < spans_.size() && spans_[head_].step + keep_steps_ <= newest_) ++head_;
  }
  // Compacted when full and at least half dead: amortized O(1) a span, and the capacity settles
  // at about twice the window's spans.
  if (head_ > 0 && spans_.size() == spans_.capacity() && head_ * 2 >= spans_.size()) {
    spans_.erase(spans_.begin(), spans_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  spans_.push_back(span);
}

std::vector<Span> Recorder::spans() const {
  std::vector<Span> out;
  out.reserve(spans_.size() - head_);
  for (std::size_t i = head_; i < spans_.size(); ++i) {
    const Span& s = spans_[i];
    // A span recorded late for a step already out of the window (async) is left out too.
    if (s.step + keep_steps_ > newest_) out.push_back(s);
  }
  return out;
}

Scope::Scope(Recorder* recorder) noexcept : previous_(t_recorder) { t_recorder = recorder; }
Scope::~Scope() { t_recorder = previous_; }

Recorder* current() noexcept { return t_recorder; }

void span(Phase phase, std::int64_t start_ns, std::uint32_t detail) noexcept {
  Recorder* r = t_recorder;
  if (r == nullptr) return;
  try {
    r->add({r->step(), start_ns, now_ns(), phase, detail});
  } catch (...) {
    // Out of memory for a diagnostic span: the run goes on without it.
  }
}

void span_at(Phase phase, std::uint64_t step, std::int64_t start_ns) noexcept {
  Recorder* r = t_recorder;
  if (r == nullptr) return;
  try {
    r->add({step, start_ns, now_ns(), phase, 0});
  } catch (...) {
  }
}

void set_step(std::uint64_t step) noexcept {
  if (t_recorder != nullptr) t_recorder->set_step(step);
}

std::vector<std::byte> encode(const std::vector<Span>& spans) {
  std::vector<std::byte> out(spans.size() * sizeof(Packed));
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    const Packed p{s.step, s.start_ns, s.end_ns, static_cast<std::uint32_t>(s.phase), s.detail};
    std::memcpy(out.data() + i * sizeof(Packed), &p, sizeof p);
  }
  return out;
}

std::vector<Span> decode(std::span<const std::byte> bytes) {
  if (bytes.size() % sizeof(Packed) != 0) {
    throw std::invalid_argument("timeline spans: the frame's length is not a multiple of 32");
  }
  std::vector<Span> out(bytes.size() / sizeof(Packed));
  for (std::size_t i = 0; i < out.size(); ++i) {
    Packed p{};
    std::memcpy(&p, bytes.data() + i * sizeof(Packed), sizeof p);
    if (p.phase >= static_cast<std::uint32_t>(kPhaseCount)) {
      throw std::invalid_argument("timeline spans: unknown phase");
    }
    out[i] = {p.step, p.start_ns, p.end_ns, static_cast<Phase>(p.phase), p.detail};
  }
  return out;
}

}  // namespace dt::timeline

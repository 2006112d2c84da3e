#include "base/timeline.hpp"

#include <cstring>
#include <stdexcept>

namespace dt::timeline {
namespace {

thread_local Recorder* t_recorder = nullptr;

// The wire form of a span: fixed width, so that a report's frame is a plain array. The peer
// rides in the phase word's high half.
struct Packed {
  std::uint64_t step;
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint32_t phase;
  std::uint32_t detail;
};
static_assert(sizeof(Packed) == 32);

// The first buffer: the window's spans at 4 a step, within [64, 16384] (then it doubles).
std::size_t first_capacity(std::uint64_t keep_steps) {
  std::size_t n = 64;
  while (n < 16384 && n < keep_steps * 4) n *= 2;
  return n;
}

void record(Recorder* r, const Span& span) noexcept {
  try {
    r->add(span);
  } catch (...) {
    // Out of memory for a diagnostic span: the run goes on without it.
  }
}

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
    case Phase::kLocalStep: return "local step";
    case Phase::kMerge: return "merge";
    case Phase::kApplyPush: return "apply push";
    case Phase::kTensorExchange: return "tensor all-reduce";
  }
  return "unknown";
}

std::int64_t now_ns() noexcept { return ns_of(Clock::now()); }

Recorder::Recorder(std::uint64_t keep_steps) : keep_steps_(keep_steps) {}

void Recorder::add(const Span& span) {
  if (keep_steps_ == 0) return;
  if (span.step > newest_) {
    newest_ = span.step;
  } else if (span.step + keep_steps_ <= newest_) {
    return;  // late for a step already out of the window (async)
  }
  if (count_ == ring_.size()) {
    // Full: the oldest span (spans arrive in about step order) leaves if it is out of the
    // window, else the buffer grows.
    if (count_ > 0 && ring_[head_].step + keep_steps_ <= newest_) {
      head_ = (head_ + 1) & (ring_.size() - 1);
      --count_;
    } else {
      grow();
    }
  }
  ring_[(head_ + count_) & (ring_.size() - 1)] = span;
  ++count_;
}

void Recorder::grow() {
  std::vector<Span> bigger(ring_.empty() ? first_capacity(keep_steps_) : ring_.size() * 2);
  for (std::size_t i = 0; i < count_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
  ring_ = std::move(bigger);
  head_ = 0;
}

std::vector<Span> Recorder::spans() const {
  std::vector<Span> out;
  out.reserve(count_);
  for (std::size_t i = 0; i < count_; ++i) {
    const Span& s = ring_[(head_ + i) & (ring_.size() - 1)];
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
  if (r != nullptr) record(r, {r->step(), start_ns, now_ns(), phase, detail, 0});
}

void span_at(Phase phase, std::uint64_t step, std::int64_t start_ns, std::uint32_t detail,
             std::uint16_t peer) noexcept {
  Recorder* r = t_recorder;
  if (r != nullptr) record(r, {step, start_ns, now_ns(), phase, detail, peer});
}

void span_between(Phase phase, Clock::time_point start, Clock::time_point end,
                  std::uint32_t detail) noexcept {
  Recorder* r = t_recorder;
  if (r != nullptr) record(r, {r->step(), ns_of(start), ns_of(end), phase, detail, 0});
}

double seconds_since(Phase phase, Clock::time_point start) noexcept {
  const auto end = Clock::now();
  span_between(phase, start, end);
  return std::chrono::duration<double>(end - start).count();
}

void set_step(std::uint64_t step) noexcept {
  if (t_recorder != nullptr) t_recorder->set_step(step);
}

void Lap::mark(Phase phase, std::uint32_t detail) noexcept {
  Recorder* r = t_recorder;
  if (r == nullptr) return;
  const std::int64_t now = now_ns();
  // A lap begun while the thread did not record starts at its first mark.
  if (at_ != 0) record(r, {r->step(), at_, now, phase, detail, 0});
  at_ = now;
}

void Lap::mark(Phase phase, Clock::time_point end, std::uint32_t detail) noexcept {
  Recorder* r = t_recorder;
  if (r == nullptr) return;
  const std::int64_t now = ns_of(end);
  if (at_ != 0) record(r, {r->step(), at_, now, phase, detail, 0});
  at_ = now;
}

std::vector<std::byte> encode(const std::vector<Span>& spans) {
  std::vector<std::byte> out(spans.size() * sizeof(Packed));
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    const Packed p{s.step, s.start_ns, s.end_ns,
                   static_cast<std::uint32_t>(s.phase) | std::uint32_t{s.peer} << 16, s.detail};
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
    const std::uint32_t phase = p.phase & 0xFFFFU;
    if (phase >= static_cast<std::uint32_t>(kPhaseCount)) {
      throw std::invalid_argument("timeline spans: unknown phase");
    }
    out[i] = {p.step, p.start_ns, p.end_ns, static_cast<Phase>(phase), p.detail,
              static_cast<std::uint16_t>(p.phase >> 16)};
  }
  return out;
}

}  // namespace dt::timeline

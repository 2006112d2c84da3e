#pragma once
// The run timeline (output.timeline): spans of named phases of each training step, recorded by
// every role (worker, coordinator, parameter server, and the ring collective beneath a worker)
// and written by the coordinator as timeline.json (core/outputs/timeline_file.hpp).
//
// Each thread that records installs its own Recorder with a Scope; the hooks on the step path
// look the thread's recorder up and do nothing without one, so a run without output.timeline
// pays one thread-local load per hook and reads no clock. Recorders are per thread, never
// shared: the inproc transport runs workers and servers as threads of one process.
//
// Cost (bench/bench_timeline.py; issue 17: < 3%): a clock read costs more than recording a
// span, so the hooks read as few as they can. span_between() takes two times the step path has
// read anyway (steady_clock::now() for its compute and communication seconds) and reads none;
// a Lap times contiguous phases with one read a phase, each span ending where the next starts.
// A Recorder appends into a ring buffer that stops growing once it holds a window of spans.
//
// Times are steady_clock (CLOCK_MONOTONIC) nanoseconds, shared by every process of one host.
// The recorder keeps the spans of the last `keep_steps` steps only (a rolling window), so a long
// run holds a bounded number of spans: memory is O(keep_steps x phases per step).

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dt::timeline {

enum class Phase : std::uint8_t {
  kWait = 0,        // worker: waiting for the step's request (and parameters)
  kCompute = 1,     // worker: gradient of its batch
  kSend = 2,        // worker: reply (gradient) to the coordinator
  kPull = 3,        // worker: waiting for parameter slices from the servers
  kPush = 4,        // worker: gradient slices to the servers
  kReduceScatter = 5,  // worker: the ring all-reduce's reduce-scatter (detail: its segments)
  kAllGather = 6,      // worker: its all-gather (detail: its segments)
  kApply = 7,          // worker (ring replica) or coordinator: the optimizer step
  kBroadcast = 8,      // coordinator: the step's (or round's) request to every worker
  kGather = 9,         // coordinator: waiting for every worker's reply
  kServerApply = 10,   // parameter server: one round's update of its key range
  kCheckpoint = 11,    // coordinator: writing checkpoint/
  kEvaluation = 12,    // coordinator: the validation pass of a log step
  kLocalStep = 13,     // worker, parameters mode: one local step (gradient and optimizer step)
  kMerge = 14,         // coordinator, parameters mode: merging the round's models
  kApplyPush = 15,     // parameter server, async: one push applied (detail: staleness; peer)
  kTensorExchange = 16,  // worker, tensor parallelism: an all-reduce in its group (detail: values)
};
inline constexpr int kPhaseCount = 17;
[[nodiscard]] std::string_view name_of(Phase phase) noexcept;

struct Span {
  std::uint64_t step = 0;  // 1-based: the step this span is part of
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  Phase phase = Phase::kWait;
  std::uint32_t detail = 0;  // what the phase counts (see Phase); else 0
  std::uint16_t peer = 0;    // kApplyPush: the worker whose push it is; else 0
};

using Clock = std::chrono::steady_clock;
[[nodiscard]] inline std::int64_t ns_of(Clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
[[nodiscard]] std::int64_t now_ns() noexcept;  // ns_of(Clock::now())

// One thread's spans as timeline.json shows them: process `pid` (a worker's rank; the
// coordinator's process after the workers) and thread `tid` in it, with their names.
// `offset_ns` is added to every span's times to bring them onto the coordinator's clock (0 on
// the coordinator's host).
struct Track {
  int pid = 0;
  std::string process;
  int tid = 0;
  std::string thread;
  std::int64_t offset_ns = 0;
  std::vector<Span> spans;
};

class Recorder {
 public:
  explicit Recorder(std::uint64_t keep_steps);
  // Appends; the oldest span makes room once it is out of the window, else the buffer doubles
  // (so it settles at the window's spans, rounded up to a power of two, and then allocates no
  // more).
  void add(const Span& span);
  // The spans of the last keep_steps steps seen, in the order they were recorded.
  [[nodiscard]] std::vector<Span> spans() const;
  [[nodiscard]] std::uint64_t step() const noexcept { return step_; }
  void set_step(std::uint64_t step) noexcept { step_ = step; }

 private:
  void grow();

  std::uint64_t keep_steps_;
  std::uint64_t step_ = 0;    // the step spans are recorded for (set_step)
  std::uint64_t newest_ = 0;  // the highest step recorded
  std::vector<Span> ring_;    // a power of two long (or empty); live: count_ from head_
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

// Installs `recorder` as the calling thread's for the Scope's life (null: none, e.g. to keep a
// collective's own spans out of a span that covers it).
class Scope {
 public:
  explicit Scope(Recorder* recorder) noexcept;
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Recorder* previous_;
};

[[nodiscard]] Recorder* current() noexcept;
[[nodiscard]] inline bool on() noexcept { return current() != nullptr; }
// now_ns() when the thread records, else 0 (no clock read).
[[nodiscard]] inline std::int64_t start() noexcept { return on() ? now_ns() : 0; }
// A span from `start_ns` to now, for the thread's current step.
void span(Phase phase, std::int64_t start_ns, std::uint32_t detail = 0) noexcept;
// Same, for an explicit step (and the peer of a kApplyPush).
void span_at(Phase phase, std::uint64_t step, std::int64_t start_ns, std::uint32_t detail = 0,
             std::uint16_t peer = 0) noexcept;
// A span between two times the caller has read already, for the current step: no clock read.
void span_between(Phase phase, Clock::time_point start, Clock::time_point end,
                  std::uint32_t detail = 0) noexcept;
// Seconds from `start` to now, and the span of `phase` over them when the thread records: the
// clock read that the step path makes for its own compute or communication seconds times it.
[[nodiscard]] double seconds_since(Phase phase, Clock::time_point start) noexcept;
void set_step(std::uint64_t step) noexcept;

// Contiguous phases, one clock read each: every mark ends a span where the next one starts.
// Reads no clock on a thread that does not record.
class Lap {
 public:
  Lap() noexcept : at_(start()) {}
  explicit Lap(Clock::time_point at) noexcept : at_(on() ? ns_of(at) : 0) {}
  // A span from the last mark (or the start) to now.
  void mark(Phase phase, std::uint32_t detail = 0) noexcept;
  // A span from the last mark to `end`, a time the caller has read anyway.
  void mark(Phase phase, Clock::time_point end, std::uint32_t detail = 0) noexcept;

 private:
  std::int64_t at_;
};

// Spans as raw bytes (32 per span, native byte order: they go between processes of one build)
// and back; decode throws std::invalid_argument on a length that is not a whole number of spans.
[[nodiscard]] std::vector<std::byte> encode(const std::vector<Span>& spans);
[[nodiscard]] std::vector<Span> decode(std::span<const std::byte> bytes);

}  // namespace dt::timeline

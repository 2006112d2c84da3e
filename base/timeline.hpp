#pragma once
// The run timeline (output.timeline): spans of named phases of each training step, recorded by
// every role (worker, coordinator, parameter server, and the ring collective beneath a worker)
// and written by the coordinator as timeline.json (core/outputs/timeline_file.hpp).
//
// Each thread that records installs its own Recorder with a Scope; the hooks on the step path
// (span(), set_step()) look the thread's recorder up and do nothing without one, so a run
// without output.timeline pays one thread-local load per hook. Recorders are per thread, never
// shared: the inproc transport runs workers and servers as threads of one process.
//
// Times are CLOCK_MONOTONIC nanoseconds, shared by every process of one host. The recorder
// keeps the spans of the last `keep_steps` steps only (a rolling window), so a long run holds
// a bounded number of spans: memory is O(keep_steps x phases per step).

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
  kReduceScatter = 5,  // worker: one segment of the ring all-reduce's reduce-scatter
  kAllGather = 6,      // worker: one segment of its all-gather
  kApply = 7,          // worker (ring replica) or coordinator: the optimizer step
  kBroadcast = 8,      // coordinator: the step's request to every worker
  kGather = 9,         // coordinator: waiting for every worker's reply
  kServerApply = 10,   // parameter server: one round's update of its key range
  kCheckpoint = 11,    // coordinator: writing checkpoint/
  kEvaluation = 12,    // coordinator: the validation pass of a log step
};
inline constexpr int kPhaseCount = 13;
[[nodiscard]] std::string_view name_of(Phase phase) noexcept;

struct Span {
  std::uint64_t step = 0;  // 1-based: the step this span is part of
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  Phase phase = Phase::kWait;
  std::uint32_t detail = 0;  // the ring segment's index (reduce-scatter, all-gather); else 0
};

[[nodiscard]] std::int64_t now_ns() noexcept;  // CLOCK_MONOTONIC

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
  explicit Recorder(std::uint64_t keep_steps) : keep_steps_(keep_steps) {}
  void add(const Span& span);
  // The spans of the last keep_steps steps seen, in the order they were recorded.
  [[nodiscard]] std::vector<Span> spans() const;
  [[nodiscard]] std::uint64_t step() const noexcept { return step_; }
  void set_step(std::uint64_t step) noexcept { step_ = step; }

 private:
  std::uint64_t keep_steps_;
  std::uint64_t step_ = 0;    // the step spans are recorded for (set_step)
  std::uint64_t newest_ = 0;  // the highest step recorded
  // Live spans are spans_[head_..]: evicting advances head_, and the evicted front is dropped
  // when the vector is full and half of it is dead, so the recorder soon stops allocating.
  std::vector<Span> spans_;
  std::size_t head_ = 0;
};

// Installs `recorder` as the calling thread's for the Scope's life (null: none).
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
// now_ns() when the thread records, else 0 (no clock read).
[[nodiscard]] inline std::int64_t start() noexcept { return current() != nullptr ? now_ns() : 0; }
// A span from `start_ns` to now, for the thread's current step.
void span(Phase phase, std::int64_t start_ns, std::uint32_t detail = 0) noexcept;
// Same, for an explicit step.
void span_at(Phase phase, std::uint64_t step, std::int64_t start_ns) noexcept;
void set_step(std::uint64_t step) noexcept;

// Spans as raw bytes (32 per span, native byte order: they go between processes of one build)
// and back; decode throws std::invalid_argument on a length that is not a whole number of spans.
[[nodiscard]] std::vector<std::byte> encode(const std::vector<Span>& spans);
[[nodiscard]] std::vector<Span> decode(std::span<const std::byte> bytes);

}  // namespace dt::timeline

#pragma once
// What the operating system says this process has used, for the run's own reports.

#include <cstdint>

namespace dt::resources {

// The peak resident set size of the calling process so far, in bytes (getrusage's ru_maxrss).
// On Linux a child started by fork + exec begins from the parent's resident size at the fork
// (the kernel carries the old high-water mark across exec), which is small for a worker: the
// coordinator forks before it loads or generates data. 0 when the system cannot tell.
[[nodiscard]] std::uint64_t peak_rss_bytes() noexcept;

// The cores this process may run on (its CPU affinity, which taskset, cgroups' cpusets and
// Slurm narrow), at least 1.
[[nodiscard]] int usable_cores() noexcept;

}  // namespace dt::resources
